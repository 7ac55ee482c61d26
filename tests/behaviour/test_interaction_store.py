"""Conversation notes on both engines: a real SQLite file, a real PostgreSQL database."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from spade_memory.interaction.store import InteractionStore
from spade_memory.protocol.interaction_forget import ForgetInteractions
from spade_memory.protocol.notes import (
    AddInformation,
    ClearConversation,
    Cleared,
    Confirmation,
    ContextSummary,
    Conversations,
    ExportConversation,
    GetAllConversations,
    GetContextSummary,
    GetInformation,
    InteractionsFile,
    Notes,
)
from tests.support.stores import Location

ALICE = "alice@localhost"
BOB = "bob@localhost"


@pytest.fixture
async def store(location: Location) -> AsyncIterator[InteractionStore]:
    opened = await InteractionStore.open(location("notes.db"))
    yield opened
    await opened.close()


async def add(store: InteractionStore, owner: str, conversation: str, text: str) -> None:
    result = await store.apply(
        owner, AddInformation(conversation_id=conversation, information=text)
    )
    assert result == Confirmation(text=f"Remembered information about this interaction: {text}")


async def notes(store: InteractionStore, owner: str, conversation: str) -> list[str]:
    result = await store.apply(owner, GetInformation(conversation_id=conversation))
    assert isinstance(result, Notes)
    return result.notes


async def test_notes_oldest_first_and_summary_text(store: InteractionStore) -> None:
    await add(store, ALICE, "c1", "user is called Ana")
    await add(store, ALICE, "c1", "Ana prefers short answers")
    assert await notes(store, ALICE, "c1") == ["user is called Ana", "Ana prefers short answers"]
    summary = await store.apply(ALICE, GetContextSummary(conversation_id="c1"))
    assert summary == ContextSummary(
        summary="Previous interactions:\n- user is called Ana\n- Ana prefers short answers"
    )
    empty = await store.apply(ALICE, GetContextSummary(conversation_id="nothing here"))
    assert empty == ContextSummary(summary=None)


async def test_conversations_and_owners_stay_apart(store: InteractionStore) -> None:
    await add(store, ALICE, "c1", "alice in c1")
    await add(store, ALICE, "c2", "alice in c2")
    await add(store, BOB, "c1", "bob in c1")
    assert await notes(store, ALICE, "c1") == ["alice in c1"]
    assert await notes(store, ALICE, "c2") == ["alice in c2"]
    assert await notes(store, BOB, "c1") == ["bob in c1"]
    listed = await store.apply(ALICE, GetAllConversations())
    assert isinstance(listed, Conversations)
    assert [(c.conversation_id, c.notes) for c in listed.conversations] == [("c2", 1), ("c1", 1)]


async def test_clear_only_the_senders_conversation(store: InteractionStore) -> None:
    await add(store, ALICE, "c1", "alice note")
    await add(store, BOB, "c1", "bob note")
    assert await store.apply(ALICE, ClearConversation(conversation_id="c1")) == Cleared(
        cleared=True
    )
    assert await store.apply(ALICE, ClearConversation(conversation_id="c1")) == Cleared(
        cleared=False
    )
    assert await notes(store, ALICE, "c1") == []
    assert await notes(store, BOB, "c1") == ["bob note"]


async def test_two_hundred_concurrent_appends_are_all_kept(store: InteractionStore) -> None:
    texts = [f"note {n}" for n in range(200)]
    await asyncio.gather(*(add(store, ALICE, "busy", text) for text in texts))
    assert sorted(await notes(store, ALICE, "busy")) == sorted(texts)


async def test_a_repeated_request_id_appends_once(store: InteractionStore) -> None:
    op = AddInformation(conversation_id="c1", information="once")
    first = await store.apply(ALICE, op, "req-1")
    assert await store.apply(ALICE, op, "req-1") == first
    assert await notes(store, ALICE, "c1") == ["once"]
    clear = ClearConversation(conversation_id="c1")
    assert await store.apply(ALICE, clear, "req-2") == Cleared(cleared=True)
    await add(store, ALICE, "c1", "after the clear")
    assert await store.apply(ALICE, clear, "req-2") == Cleared(cleared=True)  # not re-applied
    assert await notes(store, ALICE, "c1") == ["after the clear"]


async def test_forget_interactions_takes_the_stored_answers_too(store: InteractionStore) -> None:
    """The answers the ledger keeps for the sender go with its notes: a retried request
    id is applied again; another owner's retry is still answered from the ledger."""
    note = AddInformation(conversation_id="c1", information="the code is 1234")
    await store.apply(ALICE, note, "r-1")
    await store.apply(BOB, note, "r-1")
    counted = await store.apply(ALICE, ForgetInteractions(dry_run=True))
    assert (counted.notes, counted.replies, counted.dry_run) == (1, 1, True)
    forgotten = await store.apply(ALICE, ForgetInteractions())
    assert (forgotten.notes, forgotten.replies) == (1, 1)
    await store.apply(ALICE, note, "r-1")  # not answered from the ledger: applied
    assert await notes(store, ALICE, "c1") == ["the code is 1234"]
    await store.apply(BOB, note, "r-1")
    assert await notes(store, BOB, "c1") == ["the code is 1234"]


async def test_spade_llm_files_import_and_export_unchanged(
    store: InteractionStore, tmp_path: Path
) -> None:
    from spade_llm.memory.interaction_memory import AgentInteractionMemory

    legacy = AgentInteractionMemory("legacy@localhost", memory_path=str(tmp_path))
    legacy.add_information("legacy@localhost_user@localhost", "user likes tea")
    legacy.add_information("legacy@localhost_user@localhost", "user is in Madrid")
    legacy.add_information("other", "something else")
    path = tmp_path / "legacy_localhost_interactions.json"
    original = json.loads(path.read_text())

    assert await store.import_spade_llm(path) == (3, 0)
    assert await store.import_spade_llm(path) == (0, 3)  # a second import doubles nothing
    exported = await store.apply(
        "legacy@localhost", ExportConversation(conversation_id="legacy@localhost_user@localhost")
    )
    assert isinstance(exported, InteractionsFile)
    conversation = "legacy@localhost_user@localhost"
    assert exported.model_dump()["interactions"] == {
        conversation: original["interactions"][conversation]
    }
    assert await notes(store, "legacy@localhost", "other") == ["something else"]


async def test_notes_persist_across_reopen(location: Location) -> None:
    store = await InteractionStore.open(location("notes.db"))
    await add(store, ALICE, "c1", "durable note")
    await store.close()
    reopened = await InteractionStore.open(location("notes.db"))
    assert await notes(reopened, ALICE, "c1") == ["durable note"]
    await reopened.close()


async def test_old_request_ids_are_forgotten_while_running(
    store: InteractionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from spade_memory.storage import requests

    monkeypatch.setattr(requests, "KEEP_SECONDS", -1)  # every recorded id is already old
    monkeypatch.setattr(requests.RequestLog, "FORGET_EVERY", 2)
    op = AddInformation(conversation_id="c1", information="note")
    await store.apply(ALICE, op, "r-1")
    await store.apply(ALICE, AddInformation(conversation_id="c1", information="other"), "r-2")
    await store.apply(ALICE, op, "r-1")  # forgotten, so applied again
    assert await notes(store, ALICE, "c1") == ["note", "other", "note"]
