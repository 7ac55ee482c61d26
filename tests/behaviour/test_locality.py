"""Memories stored next to a strong match are lifted (``base_memory.locality``): the rule
on hand-made scores, then through the store on both engines."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spade_memory.base_memory.retrieval import locality
from spade_memory.base_memory.retrieval.locality import lifted
from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.protocol.memories import MemoryList, SearchMemories, Stored, StoreMemory
from tests.support.stores import Location

ALICE = "alice@localhost"


def test_a_weak_match_among_strong_ones_rises_above_a_lone_stronger_one() -> None:
    scores = {10: 1.0, 11: 0.2, 12: 0.9, 40: 0.5}
    new = lifted(scores)
    assert scores[40] > scores[11] and new[11] > new[40]
    assert new[10] > new[12] > new[11]  # the run keeps its own order


def test_a_lone_memory_keeps_its_order_and_far_ones_do_not_lift_each_other() -> None:
    scores = {1: 0.9, 1 + locality.WINDOW + 1: 0.5, 100: 0.7}
    new = lifted(scores)
    assert new == pytest.approx(
        {seq: score * (1 + locality.WEIGHT) for seq, score in scores.items()}
    )


def test_only_the_best_scores_within_the_window_are_added() -> None:
    window = {seq: 1.0 for seq in range(10, 10 + locality.BEST + 3)}  # more than BEST near
    new = lifted({**window, 9: 0.0})
    assert new[9] == pytest.approx(locality.WEIGHT * locality.BEST)
    assert lifted({9: 0.0, 10: 1.0})[9] == pytest.approx(locality.WEIGHT)


def test_lifting_follows_the_scale_of_the_scores_and_can_be_turned_off() -> None:
    scores = {3: 2.0, 5: 0.5, 9: 1.5, 30: 4.0}
    assert lifted({s: 10 * v for s, v in scores.items()}) == pytest.approx(
        {s: 10 * v for s, v in lifted(scores).items()}
    )
    assert lifted(scores, weight=0) == scores
    assert lifted({}) == {} and lifted({7: 1.0}) == {7: pytest.approx(1 + locality.WEIGHT)}


def by_definition(scores: dict[int, float]) -> dict[int, float]:
    """The rule as the module states it, one candidate at a time."""
    result = {}
    for seq, score in scores.items():
        near = sorted((s for o, s in scores.items() if abs(o - seq) <= locality.WINDOW))
        result[seq] = score + locality.WEIGHT * sum(near[-locality.BEST :])
    return result


@given(
    st.dictionaries(
        st.integers(0, 120), st.floats(0, 50, allow_nan=False, allow_infinity=False), max_size=40
    )
)
def test_the_one_pass_gives_what_the_rule_says(scores: dict[int, float]) -> None:
    assert lifted(scores) == pytest.approx(by_definition(scores))


@pytest.fixture
async def store(location: Location) -> AsyncIterator[LongTermStore]:
    opened = await LongTermStore.open(location("locality.db"))
    yield opened
    await opened.close()


async def put(store: LongTermStore, content: str) -> str:
    stored = await store.apply(ALICE, StoreMemory(category="fact", content=content))
    assert isinstance(stored, Stored)
    return stored.id


async def ranked(store: LongTermStore, query: str) -> list[tuple[str, float]]:
    found = await store.apply(ALICE, SearchMemories(query=query, limit=10))
    assert isinstance(found, MemoryList)
    return [(memory.id, memory.score or 0.0) for memory in found.memories]


async def ratio(store: LongTermStore, query: str, first: str, second: str) -> float:
    """How the search scores ``first`` against ``second`` (both must be found)."""
    scores = dict(await ranked(store, query))
    return scores[first] / scores[second]


async def test_the_memory_stored_after_a_match_comes_up_with_it(store: LongTermStore) -> None:
    """Stored right after "we went camping", "they roasted marshmallows" gains, when both
    are asked about, on a marshmallow memory stored far away (words alone score a memory
    that matches one word the same in both questions), and ranks above it (on SQLite,
    words alone rank it below)."""
    camping = await put(store, "We went camping by the lake last weekend with the kids")
    roasted = await put(store, "They roasted marshmallows over the fire all evening long")
    for n in range(2 * locality.WINDOW):
        await put(store, f"Unrelated note number {n} about the quarterly budget review")
    errand = await put(store, "Remember to buy marshmallows at the shop")
    alone = await ratio(store, "marshmallows", roasted, errand)
    assert await ratio(store, "camping marshmallows", roasted, errand) > 1.05 * alone
    found = [memory_id for memory_id, _ in await ranked(store, "camping marshmallows")]
    assert set(found) == {camping, roasted, errand}
    assert found.index(roasted) < found.index(errand)
    if store.engine.name == "sqlite":
        assert alone < 1


async def test_a_match_too_far_away_lifts_nothing(store: LongTermStore) -> None:
    """More than ``WINDOW`` memories between them: the camping memory changes nothing."""
    await put(store, "We went camping by the lake last weekend with the kids")
    for n in range(locality.WINDOW):
        await put(store, f"Unrelated note number {n} about the quarterly budget review")
    roasted = await put(store, "They roasted marshmallows over the fire all evening long")
    errand = await put(store, "Remember to buy marshmallows at the shop")
    assert await ratio(store, "camping marshmallows", roasted, errand) == pytest.approx(
        await ratio(store, "marshmallows", roasted, errand)
    )
