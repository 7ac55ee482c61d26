"""A query that names a time favours the memories of that time.

"What did Maria donate to the shelter in December 2023?" asks about a month. The
memories of that month are those whose context or content names one of its days (an
agent storing a conversation turn gives the turn's date as its context) and those
stored in it. A search whose query names a day, a month of a year, a month of any year
("in June"), a season of a year or a year multiplies the score of each of its
candidates that has a day in that time by ``1 + WEIGHT``; the other candidates keep
theirs. Only when the query names a time are the texts of the search's own candidates
read again, and only of those that could still reach the top. Times relative to now
("last week", "yesterday") are not read: the question's now is not the memory's.
Measured on LoCoMo (see ``docs/performance.md``).

Regular expressions, not a date library: what is read is English, full dates and a few
ways of naming a month, a season or a year, and a search may read a few hundred texts,
each only around the years it names.
"""

from __future__ import annotations

import contextlib
import heapq
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone

from spade_memory.storage.connection import Database
from spade_memory.storage.statements import placeholders

WEIGHT = 0.1
"""How much a candidate of the time the query names gains, as a share of its score."""

_MONTH = (
    r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_YEAR = r"((?:19|20)\d\d)"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_DAY_BEFORE_YEAR = re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}\.?,?\s+$", re.IGNORECASE)
"""8 May, (2023); 8th of May (2023): a day and month right before a year."""
_MONTH_BEFORE_YEAR = re.compile(rf"\b{_MONTH}\.?\s+{_DAY},?\s+$", re.IGNORECASE)
"""May 8, (2023); May 8th (2023)."""
_A_YEAR = re.compile(r"(?:19|20)\d\d")
"""A year, once ``_alone`` (as ``\\b`` would check, which slows the scan)."""
_LONGEST_BEFORE_YEAR = len("30th of September, ") + 4
"""How far before a year its day and month can start (with a few spaces to spare)."""
_MONTH_OF_YEAR = re.compile(rf"\b{_MONTH}\.?,?\s+(?:of\s+)?{_YEAR}\b", re.IGNORECASE)
_SEASON_OF_YEAR = re.compile(
    rf"\b(spring|summer|autumn|fall|winter)\s+(?:of\s+)?{_YEAR}\b", re.IGNORECASE
)
_MONTH_ALONE = re.compile(
    r"\b(?:in|during|of|since|until|by|early|mid|late|beginning of|end of)\s+(?:the\s+)?"
    r"(january|february|march|april|may|june|july|august|september|october|november"
    r"|december)\b",
    re.IGNORECASE,
)
"""A month with a word that makes it a time ("in May", not the verb "may")."""
_YEAR_ALONE = re.compile(rf"\b(?:in|during|of|since|until|by|year)\s+{_YEAR}\b", re.IGNORECASE)

_SEASONS = {"spring": (3, 5), "summer": (6, 8), "autumn": (9, 11), "fall": (9, 11)}
"""First and last month (northern hemisphere); winter runs from December into the next
year."""


@dataclass(frozen=True)
class Span:
    """The days from ``first`` to ``last``; with ``any_year``, that month in every year."""

    first: date
    last: date
    any_year: bool = False

    def holds(self, day: date) -> bool:
        """Whether ``day`` falls in the span."""
        if self.any_year:
            return day.month == self.first.month
        return self.first <= day <= self.last


def named_span(query: str) -> Span | None:
    """The time ``query`` names: its first full date, else the first month of a year,
    season of a year, month alone or year alone it names; None when it names none."""
    if days := days_named(query):
        return Span(days[0], days[0])
    if found := _MONTH_OF_YEAR.search(query):
        year, month = int(found.group(2)), _month(found.group(1))
        return Span(date(year, month, 1), _last_day(year, month))
    if found := _SEASON_OF_YEAR.search(query):
        year, season = int(found.group(2)), found.group(1).lower()
        if season == "winter":
            return Span(date(year, 12, 1), _last_day(year + 1, 2))
        first, last = _SEASONS[season]
        return Span(date(year, first, 1), _last_day(year, last))
    if found := _MONTH_ALONE.search(query):
        month = _month(found.group(1))
        return Span(date(2000, month, 1), _last_day(2000, month), any_year=True)
    if found := _YEAR_ALONE.search(query):
        year = int(found.group(1))
        return Span(date(year, 1, 1), date(year, 12, 31))
    return None


def days_named(text: str) -> list[date]:
    """Every full date ``text`` names (day, month and year), in the order found; a day
    that does not exist (31 June) is left out.

    Each year found is read with the few characters before it: scanning whole texts for
    dates at every position cost several times as much."""
    days = []
    for year in _A_YEAR.finditer(text):
        if not _alone(text, year.start(), year.end()):
            continue
        start = max(0, year.start() - _LONGEST_BEFORE_YEAR)
        if found := _DAY_BEFORE_YEAR.search(text, start, year.start()):
            day, month = found.group(1), found.group(2)
        elif found := _MONTH_BEFORE_YEAR.search(text, start, year.start()):
            day, month = found.group(2), found.group(1)
        else:
            continue
        with contextlib.suppress(ValueError):
            days.append(date(int(year.group()), _month(month), int(day)))
    return days


def days_of(content: str, context: str | None, created_at: float) -> list[date]:
    """A memory's days: those its context and content name, and the (UTC) day it was
    stored."""
    stored = datetime.fromtimestamp(created_at, tz=timezone.utc).date()
    return [*days_named(context or ""), *days_named(content), stored]


def favoured(
    scores: Mapping[int, float], span: Span, days: Mapping[int, Iterable[date]]
) -> dict[int, float]:
    """``scores`` with each candidate that has a day (``days``: seq → its days) in
    ``span`` multiplied by ``1 + WEIGHT``. Returns a new dict with the same keys."""
    return {
        seq: score * (1 + WEIGHT) if any(map(span.holds, days.get(seq, ()))) else score
        for seq, score in scores.items()
    }


async def favour_named_time(
    db: Database, query: str, scores: dict[int, float], limit: int
) -> dict[int, float]:
    """``scores`` (a search's candidates, by seq), favouring those of the time ``query``
    names; ``scores`` itself when it names none. Reads, in ``db``, the texts of the
    candidates that could end among the ``limit`` best (``contenders``)."""
    span = named_span(query)
    if span is None or not scores:
        return scores
    seqs = contenders(scores, limit)
    rows = await db.execute_fetchall(
        "SELECT seq, content, context, created_at FROM memories"
        f" WHERE seq IN ({placeholders(seqs)})",
        tuple(seqs),
    )
    days = {int(seq): days_of(content, context, created) for seq, content, context, created in rows}
    return favoured(scores, span, days)


def contenders(scores: Mapping[int, float], limit: int) -> list[int]:
    """The candidates that could be among the ``limit`` best once favoured: those whose
    score, gaining ``WEIGHT``, would reach the ``limit``-th best score. Any other stays
    below the ``limit`` that already have that score, whichever gain, so the best
    ``limit`` and their scores are those of favouring every candidate."""
    if len(scores) <= limit:
        return list(scores)
    floor = heapq.nlargest(limit, scores.values())[-1] / (1 + WEIGHT)
    return [seq for seq, score in scores.items() if score >= floor]


def _alone(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` is a word of its own (no letter, digit or ``_`` beside)."""
    return not (start > 0 and _word(text[start - 1])) and not (end < len(text) and _word(text[end]))


def _word(character: str) -> bool:
    return character.isalnum() or character == "_"


def _month(name: str) -> int:
    return _MONTHS[name.lower()[:3]]


def _last_day(year: int, month: int) -> date:
    return date(year + month // 12, month % 12 + 1, 1) - timedelta(days=1)


_MONTHS = {
    name: number
    for number, name in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1
    )
}
