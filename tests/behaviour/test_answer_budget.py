"""No answer grows past its byte budget (``Limits.max_answer_bytes``): a page ends
early with the next page's offset, a search keeps its best that fit, a batch's answers
count together, and nothing is lost on the way (issue 75, item 2); a conversation's
notes, a sender's conversations and a beads session page the same way."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.beads.native import NativeEngine
from spade_memory.beads_sync.service import BeadsSyncService
from spade_memory.beads_sync.store import BeadsMemoryStore
from spade_memory.interaction.context_dir import ContextDirectory
from spade_memory.interaction.service import InteractionMemoryService
from spade_memory.interaction.store import InteractionStore
from spade_memory.protocol.beads import (
    BeadsMemories,
    BeadsStoreMemory,
    RestoreSession,
    RetrieveMemories,
)
from spade_memory.protocol.context import EndConversation
from spade_memory.protocol.errors import ResourceConstraint
from spade_memory.protocol.limits import Limits
from spade_memory.protocol.memories import (
    ListMemories,
    MemoryList,
    RecentMemories,
    SearchMemories,
    StoreMemory,
)
from spade_memory.protocol.notes import (
    AddInformation,
    ExportConversation,
    GetAllConversations,
    GetContextSummary,
    GetInformation,
    Notes,
)
from spade_memory.protocol.ops import Request
from spade_memory.protocol.services import INTERACTION_MEMORY
from spade_memory.tools.sentences import CUT_SHORT, said_found
from tests.support.in_process import client_of
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
    search = SearchMemories(query="walrus fact", limit=20)
    found = await store.apply(ALICE, search)
    assert isinstance(found, MemoryList)
    assert 0 < len(found.memories) < 20
    assert sum(len(m.content) for m in found.memories) <= BUDGET
    assert found.note is not None and "--max-answer-bytes" in found.note
    assert said_found(search, found).endswith(CUT_SHORT)  # the model is told, too


async def test_a_batchs_answers_share_the_budget(store: LongTermStore) -> None:
    first, second = await store.batch(
        ALICE, [Request(RecentMemories(limit=20)), Request(RecentMemories(limit=20))]
    )
    assert isinstance(first, MemoryList) and first.next_offset == len(first.memories)
    assert isinstance(second, ResourceConstraint)  # nothing left for it
    assert "--max-answer-bytes" in str(second)
    again = await store.apply(ALICE, RecentMemories(limit=20))  # alone, it is answered
    assert isinstance(again, MemoryList) and len(again.memories) == len(first.memories)


NOTE = "walrus note: " + "n" * 5_000
"""A note of about 5 kB: the budget above carries about nine."""


@pytest.fixture
async def notes(location: Location) -> AsyncIterator[InteractionStore]:
    opened = await InteractionStore.open(
        location("notes.db"), purge_every=None, limits=Limits(max_answer_bytes=BUDGET)
    )
    adds = [AddInformation(conversation_id="c", information=f"{n} {NOTE}") for n in range(20)]
    for outcome in await opened.batch(ALICE, [Request(op, f"n{n}") for n, op in enumerate(adds)]):
        assert not isinstance(outcome, Exception), outcome
    yield opened
    await opened.close()


async def test_a_conversations_notes_page_at_the_budget_and_every_note_comes_once(
    notes: InteractionStore,
) -> None:
    seen: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = await notes.apply(ALICE, GetInformation(conversation_id="c", offset=offset))
        assert sum(len(note) for note in page.notes) <= BUDGET
        seen += page.notes
        offset = page.next_offset
    assert seen == [f"{n} {NOTE}" for n in range(20)]  # in order, none twice, none lost
    summary = await notes.apply(ALICE, GetContextSummary(conversation_id="c"))
    assert summary.next_offset is not None and len(summary.summary or "") <= BUDGET
    exported = await notes.apply(ALICE, ExportConversation(conversation_id="c", offset=15))
    assert [e.content for e in exported.interactions["c"]] == seen[15:]
    assert exported.next_offset is None and "next_offset" not in exported.model_dump()


async def test_a_batch_of_whole_conversation_reads_shares_one_budget(
    notes: InteractionStore,
) -> None:
    reads = [Request(GetInformation(conversation_id="c")) for _ in range(20)]
    first, second, *rest = await notes.batch(ALICE, reads)
    assert isinstance(first, Notes) and first.next_offset == len(first.notes) < 20
    for refused in (second, *rest):
        assert isinstance(refused, ResourceConstraint) and "--max-answer-bytes" in str(refused)
    listed = await notes.apply(ALICE, GetAllConversations())
    assert [c.conversation_id for c in listed.conversations] == ["c"]
    assert listed.conversations[0].notes == 20  # nothing was lost on the way


async def test_the_client_follows_the_pages_to_the_whole_conversation(tmp_path: Path) -> None:
    store = await InteractionStore.open(
        tmp_path / "notes.db", purge_every=None, limits=Limits(max_answer_bytes=BUDGET)
    )
    try:
        client = client_of(ALICE, {INTERACTION_MEMORY: InteractionMemoryService(store)})
        for n in range(20):
            await client.add_information("c", f"{n} {NOTE}")
        whole = [f"{n} {NOTE}" for n in range(20)]
        assert await client.get_information("c") == whole
        exported = await client.export_conversation("c")
        assert exported is not None and [e.content for e in exported.interactions["c"]] == whole
        summary = await client.get_context_summary("c")
        assert summary == "\n".join(["Previous interactions:", *(f"- {n}" for n in whole)])
    finally:
        await store.close()


async def test_a_conversation_longer_than_one_answer_is_not_summarised_in_part_and_cleared(
    notes: InteractionStore, tmp_path: Path
) -> None:
    service = InteractionMemoryService(notes, ContextDirectory(tmp_path / "context"))
    with pytest.raises(ResourceConstraint, match="give its summary yourself"):
        await service.apply(ALICE, EndConversation(conversation_id="c", clear=True))
    listed = await notes.apply(ALICE, GetAllConversations())
    assert listed.conversations[0].notes == 20  # nothing cleared
    given = await service.apply(
        ALICE, EndConversation(conversation_id="c", summary="Walruses, twenty notes", clear=True)
    )
    assert given.text == "Walruses, twenty notes"
    assert (await notes.apply(ALICE, GetAllConversations())).conversations == []


async def test_a_beads_session_comes_in_pages_and_a_batchs_reads_share_the_budget(
    tmp_path: Path,
) -> None:
    store = BeadsMemoryStore(
        NativeEngine(tmp_path / ".beads"), "s1", limits=Limits(max_answer_bytes=BUDGET)
    )
    service = BeadsSyncService(store)
    stored = [f"{n} {NOTE}" for n in range(20)]
    for content in stored:
        await service.apply(ALICE, BeadsStoreMemory(content=content))
    seen: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = await service.apply(ALICE, RestoreSession(session_id="s1", offset=offset))
        assert page.memories and (page.next_offset is None or page.note is not None)
        seen += [memory.content for memory in page.memories]
        offset = page.next_offset
    assert seen == stored  # oldest first, every one once
    first, second = await service.batch(
        ALICE, [Request(RetrieveMemories(limit=20)), Request(RetrieveMemories(limit=20))]
    )
    assert isinstance(first, BeadsMemories) and 0 < len(first.memories) < 20
    assert first.note is not None and "--max-answer-bytes" in first.note
    assert isinstance(second, ResourceConstraint)
