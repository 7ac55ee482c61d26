"""The figures a space's page draws: memories stored per day and per author over the
last two weeks, and how long this view's searches took over the last hour.

Counts are read through the same op as the list (``recent_memories`` stored since two
weeks ago, without counting a use), at most ``SAMPLE`` memories: a space busier than
that is said to be so on the chart. Search times are the round trips this view
measured itself (the memory agents' own figures are in ``/metrics``).
"""

from __future__ import annotations

import contextlib
import math
import time
from collections import Counter, deque
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone

from aiohttp import web

from spade_memory.client.memory_client import MemoryClient
from spade_memory.metrics.figures import WEB_SEARCH
from spade_memory.protocol.ops import PERSONAL

DAYS = 14
SAMPLE = 1_000
"""The most memories a chart counts (one request)."""
AUTHORS = 8
"""Authors drawn by name; the others are summed as one bar."""
HOUR = 3600.0


class SearchTimes:
    """The durations of this view's searches over the last hour."""

    def __init__(self, window: float = HOUR) -> None:
        self.window = window
        self._times: deque[tuple[float, float]] = deque()

    @contextlib.contextmanager
    def timed(self) -> Iterator[None]:
        """Time what runs inside (a failed search counts too: it was waited for)."""
        started = time.monotonic()
        try:
            yield
        finally:
            self.add(time.monotonic() - started, started)

    def add(self, seconds: float, at: float | None = None) -> None:
        """Record one search of ``seconds``, made at ``at`` (monotonic; now by default)."""
        self._times.append((time.monotonic() if at is None else at, seconds))
        WEB_SEARCH.observe(seconds)

    def percentiles(self) -> tuple[int, float | None, float | None]:
        """How many searches the last hour held, and their p50 and p99 in seconds (None
        with none)."""
        cutoff = time.monotonic() - self.window
        while self._times and self._times[0][0] < cutoff:
            self._times.popleft()
        ordered = sorted(seconds for _, seconds in self._times)
        if not ordered:
            return 0, None, None
        return len(ordered), _rank(ordered, 0.50), _rank(ordered, 0.99)


def _rank(ordered: list[float], share: float) -> float:
    """The nearest-rank percentile of an ordered list."""
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


SEARCH_TIMES: web.AppKey[SearchTimes] = web.AppKey("search_times", SearchTimes)


@dataclass(frozen=True)
class Bar:
    label: str
    count: int
    share: float
    """Its length against the longest bar (0 to 1)."""


@dataclass(frozen=True)
class Charts:
    per_day: list[Bar]
    per_author: list[Bar]
    counted: int
    capped: bool
    """Whether the space stored more than ``SAMPLE`` in the period (only those counted)."""
    searches: int
    p50_ms: float | None
    p99_ms: float | None


async def of_space(memory: MemoryClient, space: str, searches: SearchTimes) -> Charts:
    """The charts of ``space`` as the viewer may read it."""
    since = datetime.now(timezone.utc) - timedelta(days=DAYS - 1)
    since = since.replace(hour=0, minute=0, second=0, microsecond=0)
    fetched = await memory.get_recent_memories(
        SAMPLE, space=space, created_after=since, count_access=False
    )
    days: Counter[date] = Counter(m.created_at.astimezone(timezone.utc).date() for m in fetched)
    authors: Counter[str] = Counter(m.author or m.owner for m in fetched)
    first = since.date()
    per_day = _bars([(str(first + timedelta(days=n)), days[first + timedelta(days=n)])
                     for n in range(DAYS)])  # fmt: skip
    named = authors.most_common(AUTHORS)
    others = sum(authors.values()) - sum(count for _, count in named)
    label = "you" if space == PERSONAL else None
    per_author = _bars([(label or author, count) for author, count in named]
                       + ([("others", others)] if others else []))  # fmt: skip
    count, p50, p99 = searches.percentiles()
    return Charts(
        per_day, per_author, len(fetched), fetched.next_offset is not None, count,
        None if p50 is None else p50 * 1000, None if p99 is None else p99 * 1000,
    )  # fmt: skip


def _bars(counts: list[tuple[str, int]]) -> list[Bar]:
    longest = max((count for _, count in counts), default=0) or 1
    return [Bar(label, count, count / longest) for label, count in counts]
