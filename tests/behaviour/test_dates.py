"""A query that names a time favours the memories of that time (``base_memory.dates``):
what a query and a memory name, the rule on hand-made scores, then through the store on
both engines."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import date, datetime, timezone

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from spade_memory.base_memory.retrieval import dates
from spade_memory.base_memory.retrieval.dates import (
    Span,
    contenders,
    days_named,
    days_of,
    favoured,
    named_span,
)
from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.protocol.memories import MemoryList, SearchMemories, Stored, StoreMemory
from tests.support.stores import Location

ALICE = "alice@localhost"


@pytest.mark.parametrize(
    ("query", "first", "last"),
    [
        ("What did Maria do on 3 June, 2023?", date(2023, 6, 3), date(2023, 6, 3)),
        ("What painting did she show on October 13, 2023?", date(2023, 10, 13), None),
        ("Who came over on the 1st of February 2023?", date(2023, 2, 1), None),
        ("What did Maria donate in December 2023?", date(2023, 12, 1), date(2023, 12, 31)),
        ("What did Joanna plan for Feb. 2024?", date(2024, 2, 1), date(2024, 2, 29)),
        ("Which state did Joanna visit in summer 2021?", date(2021, 6, 1), date(2021, 8, 31)),
        ("Where did they ski in winter 2022?", date(2022, 12, 1), date(2023, 2, 28)),
        ("How often did she go to the beach in 2023?", date(2023, 1, 1), date(2023, 12, 31)),
    ],
)
def test_a_query_names_a_day_a_month_a_season_or_a_year(
    query: str, first: date, last: date | None
) -> None:
    assert named_span(query) == Span(first, last or first)


def test_a_day_that_does_not_exist_leaves_the_month_it_names() -> None:
    assert named_span("What happened on 31 June, 2023?") == Span(
        date(2023, 6, 1), date(2023, 6, 30)
    )


def test_a_month_alone_is_that_month_of_every_year() -> None:
    span = named_span("When did Melanie go camping in June?")
    assert span is not None and span.any_year
    assert span.holds(date(2019, 6, 30)) and span.holds(date(2023, 6, 1))
    assert not span.holds(date(2023, 7, 1))


@pytest.mark.parametrize(
    "query",
    [
        "May I ask what Alice likes?",  # the verb, not the month
        "What did we do last week?",  # relative to a now the memory does not share
        "How many of the 2023 goals are met?",  # a number, not a time it is asked about
        "",
    ],
)
def test_a_query_that_names_no_time_names_none(query: str) -> None:
    assert named_span(query) is None


def test_every_full_date_of_a_text_is_read_in_order() -> None:
    text = "1:56 pm on 8 May, 2023. Before: see you on June 9th, 2023 or 31 April 2023"
    assert days_named(text) == [date(2023, 5, 8), date(2023, 6, 9)]
    assert days_named("on 8 May, 20234 or 8 May, 2023x or 18 May, 2023") == [date(2023, 5, 18)]
    assert days_named("id x8 May, 2023 and 8 May,\n2023") == [date(2023, 5, 8)]
    stored = datetime(2026, 11, 25, 23, 30, tzinfo=timezone.utc).timestamp()
    assert days_of("back on 2 Jan 2024", "8 May, 2023", stored) == [
        date(2023, 5, 8), date(2024, 1, 2), date(2026, 11, 25),
    ]  # fmt: skip


def test_only_the_candidates_of_the_time_gain_and_in_proportion() -> None:
    span = Span(date(2023, 12, 1), date(2023, 12, 31))
    days = {
        1: [date(2023, 12, 24)],
        2: [date(2024, 1, 2)],
        3: [date(2022, 1, 1), date(2023, 12, 1)],
    }
    scores = {1: 0.5, 2: 0.9, 3: 0.2, 4: 0.7}  # 4: no days known
    assert favoured(scores, span, days) == pytest.approx(
        {1: 0.5 * (1 + dates.WEIGHT), 2: 0.9, 3: 0.2 * (1 + dates.WEIGHT), 4: 0.7}
    )


def best(scores: dict[int, float], limit: int) -> list[tuple[int, float]]:
    """The search's order: highest first, the newer (higher seq) first among equals."""
    top = sorted(scores, key=lambda seq: (-scores[seq], -seq))[:limit]
    return [(seq, scores[seq]) for seq in top]


@given(
    st.dictionaries(
        st.integers(0, 300),
        # score (close values and ties are what matters), of the time
        st.tuples(st.integers(0, 40).map(lambda n: n / 4), st.booleans()),
        max_size=60,
    ),
    st.integers(1, 30),
)
@example({1: (1.0, False), 2: (0.95, True)}, 1)  # the second rises above the first
def test_reading_only_the_contenders_gives_the_best_of_reading_all(
    candidates: dict[int, tuple[float, bool]], limit: int
) -> None:
    span, day = Span(date(2023, 5, 1), date(2023, 5, 31)), date(2023, 5, 8)
    scores = {seq: score for seq, (score, _) in candidates.items()}
    everyone = {seq: [day] for seq, (_, of_the_time) in candidates.items() if of_the_time}
    read = {seq: everyone[seq] for seq in contenders(scores, limit) if seq in everyone}
    assert best(favoured(scores, span, read), limit) == best(
        favoured(scores, span, everyone), limit
    )


@pytest.fixture
async def store(location: Location) -> AsyncIterator[LongTermStore]:
    opened = await LongTermStore.open(location("dates.db"))
    yield opened
    await opened.close()


async def put(store: LongTermStore, content: str, context: str) -> str:
    op = StoreMemory(category="fact", content=content, context=context)
    stored = await store.apply(ALICE, op)
    assert isinstance(stored, Stored)
    return stored.id


async def scores(store: LongTermStore, query: str) -> dict[str, float]:
    found = await store.apply(ALICE, SearchMemories(query=query, limit=10))
    assert isinstance(found, MemoryList)
    return {memory.id: memory.score or 0.0 for memory in found.memories}


async def test_the_memory_of_the_day_asked_about_ranks_first(store: LongTermStore) -> None:
    """Both memories hold the same words as many times (in another order, or the store
    would take the second for the first; their contexts name the same numbers and months,
    on other days), so words alone score them the same; the one of the day the question
    names gains ``WEIGHT``."""
    of_the_day = await put(store, "Alice baked a lemon cake", "8 May, 2023. Before: 9 June, 2023")
    other = await put(store, "A lemon cake Alice baked", "9 May, 2023. Before: 8 June, 2023")
    words_only = "2023 may 8 lemon cake"  # the same words, naming no time
    assert named_span(words_only) is None
    words_alone = await scores(store, words_only)
    assert words_alone[of_the_day] == pytest.approx(words_alone[other])
    asked = await scores(store, "What lemon cake did Alice bake on 8 May, 2023?")
    assert next(iter(asked)) == of_the_day
    assert asked[of_the_day] / asked[other] == pytest.approx(1 + dates.WEIGHT)
    in_june = await scores(store, "What lemon cake did Alice bake in June 2023?")
    assert in_june[of_the_day] == pytest.approx(in_june[other])  # both name a June day
