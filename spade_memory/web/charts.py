"""The figures a space's page draws under its memories, a line each: memories stored per
day over the last two weeks (a row of columns), who stored them (one bar cut in shares),
and how long this view's searches took over the last hour.

The counts are the base memory agent's (``memory_stats`` with ``days``): counted in its
database, not one memory read, so a busy space costs a page no more than a quiet one.
Search times are the round trips this view measured itself (the memory agents' own
figures are in ``/metrics``).
"""

from __future__ import annotations

import contextlib
import math
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

from aiohttp import web

from spade_memory.metrics.figures import WEB_SEARCH
from spade_memory.protocol.memories import MemoryStats
from spade_memory.protocol.ops import PERSONAL

DAYS = 14
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
    """Its length: against the tallest day's, or its part of all the authors' (0 to 1)."""
    start: float = 0.0
    """Where an author's part starts on the one bar (0 to 1; a day's is 0)."""


@dataclass(frozen=True)
class Charts:
    per_day: list[Bar]
    per_author: list[Bar]
    """The authors ``memory_stats`` names (``STATS_AUTHORS``), then the others as one,
    each a part of one bar."""
    searches: int
    p50_ms: float | None
    p99_ms: float | None

    @property
    def stored(self) -> int:
        """How many of the space's live memories were stored in those days."""
        return sum(day.count for day in self.per_day)


def drawn(stats: MemoryStats, searches: SearchTimes) -> Charts:
    """The charts of a space from its ``memory_stats`` asked with ``days=DAYS``."""
    per_day = _bars(list(stats.stored_per_day.items()))
    label = "you" if stats.space == PERSONAL else None
    others = [("others", stats.stored_by_others)] if stats.stored_by_others else []
    per_author = _parts([(label or author, count) for author, count in
                         stats.stored_by_author.items()] + others)  # fmt: skip
    count, p50, p99 = searches.percentiles()
    return Charts(
        per_day, per_author, count,
        None if p50 is None else p50 * 1000, None if p99 is None else p99 * 1000,
    )  # fmt: skip


def _bars(counts: list[tuple[str, int]]) -> list[Bar]:
    longest = max((count for _, count in counts), default=0) or 1
    return [Bar(label, count, count / longest) for label, count in counts]


def _parts(counts: list[tuple[str, int]]) -> list[Bar]:
    """Each count as its part of one bar, one after the other (none counted: no part)."""
    total, start, parts = sum(count for _, count in counts), 0.0, []
    for label, count in counts:
        if count:
            parts.append(Bar(label, count, count / total, start))
            start += count / total
    return parts
