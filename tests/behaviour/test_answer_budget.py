"""No answer grows past its byte budget (``Limits.max_answer_bytes``): a page ends
early with the next page's offset, a search keeps its best that fit, a batch's answers
count together, and nothing is lost on the way (issue 75, item 2)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.protocol.errors import ResourceConstraint
from spade_memory.protocol.limits import Limits
from spade_memory.protocol.memories import (
    ListMemories,
    MemoryList,
    RecentMemories,
    SearchMemories,
    StoreMemory,
)
from spade_memory.protocol.ops import Request
from tests.support.stores import Location

ALICE = "alice@localhost"
BUDGET = 50_000
"""About nine of the memories below."""


@pytest.fixture
async def store(location: Location) -> AsyncIterator[LongTermStore]:
    opened = await LongTermStore.open(
        location("budget.db"), limits=Limits(max_answer_bytes=BUDGET), consolidate_after=None
    )
    ops = [
        StoreMemory(category="fact", content=f"walrus fact {n}: " + "x" * 5_000) for n in range(20)
    ]
    for outcome in await opened.batch(ALICE, [Request(op, f"r{n}") for n, op in enumerate(ops)]):
        assert not isinstance(outcome, Exception), outcome
    yield opened
    await opened.close()


async def test_a_page_ends_at_the_budget_and_the_next_offset_finds_the_rest(
    store: LongTermStore,
) -> None:
    seen: list[str] = []
    offset: int | None = 0
    pages = 0
    while offset is not None:
        page = await store.apply(ALICE, RecentMemories(limit=20, offset=offset))
        assert isinstance(page, MemoryList)
        assert sum(len(m.content) for m in page.memories) <= BUDGET
        if page.next_offset is not None:
            assert page.note is not None and "--max-answer-bytes" in page.note
        seen += [m.id for m in page.memories]
        offset, pages = page.next_offset, pages + 1
    assert len(seen) == len(set(seen)) == 20  # every memory once
    assert pages >= 3
    listed = await store.apply(ALICE, ListMemories(category="fact", limit=5))
    assert isinstance(listed, MemoryList) and len(listed.memories) == 5 and listed.note is None


async def test_a_search_keeps_its_best_that_fit_and_says_so(store: LongTermStore) -> None:
    found = await store.apply(ALICE, SearchMemories(query="walrus fact", limit=20))
    assert isinstance(found, MemoryList)
    assert 0 < len(found.memories) < 20
    assert sum(len(m.content) for m in found.memories) <= BUDGET
    assert found.note is not None and "--max-answer-bytes" in found.note


async def test_a_batchs_answers_share_the_budget(store: LongTermStore) -> None:
    first, second = await store.batch(
        ALICE, [Request(RecentMemories(limit=20)), Request(RecentMemories(limit=20))]
    )
    assert isinstance(first, MemoryList) and first.next_offset == len(first.memories)
    assert isinstance(second, ResourceConstraint)  # nothing left for it
    assert "--max-answer-bytes" in str(second)
    again = await store.apply(ALICE, RecentMemories(limit=20))  # alone, it is answered
    assert isinstance(again, MemoryList) and len(again.memories) == len(first.memories)
