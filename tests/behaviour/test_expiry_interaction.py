"""Expiry of conversation notes and working-memory items, on both engines (a real SQLite
file and a real PostgreSQL database).

Most tests set ``expires_at`` in the past or far in the future, so they do not depend on
the machine's speed; the few that wait for a ``ttl_seconds`` only check what must hold
once it has passed.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from spade_memory.interaction.store import MIGRATIONS, InteractionStore
from spade_memory.protocol.errors import BadRequest, ItemNotFound
from spade_memory.protocol.interaction import interaction_ops
from spade_memory.protocol.interaction_forget import ForgetInteractions, InteractionsForgotten
from spade_memory.protocol.notes import (
    AddInformation,
    ClearConversation,
    Cleared,
    ContextSummary,
    Conversations,
    ExportConversation,
    GetAllConversations,
    GetContextSummary,
    GetInformation,
    InteractionsFile,
    Notes,
)
from spade_memory.protocol.ops import parse_op
from spade_memory.protocol.working import (
    AddEntity,
    AddFinding,
    Entities,
    GetWorkingMemory,
    MergeWorkingMemory,
    RecentEntities,
    UpdateContext,
    WorkingMemoryState,
)
from spade_memory.protocol.working_memory import EntityRef, Finding, WorkingMemory
from spade_memory.storage.connection import open_migrated
from tests.support.harness import ClientAgent
from tests.support.stores import Location, query

ALICE = "alice@localhost"
NOW = datetime.now(timezone.utc)
PAST = NOW - timedelta(days=1)
FUTURE = NOW + timedelta(days=365)


@pytest.fixture
def where(location: Location) -> str | Path:
    """The store's file or database (each test runs on both engines)."""
    return location("interaction.db")


@pytest.fixture
async def store(where: str | Path) -> AsyncIterator[InteractionStore]:
    """A store purging only when told (``purge_expired``)."""
    opened = await InteractionStore.open(where, purge_every=None)
    yield opened
    await opened.close()


async def note_rows(where: str | Path) -> list[tuple[str, str, float | None]]:
    """The notes the store holds, expired or not, read beside it."""
    found = await query(
        where, "SELECT conversation_id, content, expires_at FROM notes ORDER BY seq"
    )
    return [(str(c), str(t), e) for c, t, e in found]  # type: ignore[misc]


async def note(store: InteractionStore, conversation: str, text: str, **expiry: Any) -> None:
    await store.apply(
        ALICE, AddInformation(conversation_id=conversation, information=text, **expiry)
    )


async def notes(store: InteractionStore, conversation: str) -> list[str]:
    result = await store.apply(ALICE, GetInformation(conversation_id=conversation))
    assert isinstance(result, Notes)
    return result.notes


# -- conversation notes -------------------------------------------------------------


async def test_an_expired_note_is_hidden_from_every_read(store: InteractionStore) -> None:
    await note(store, "c1", "kept")
    await note(store, "c1", "a year left", expires_at=FUTURE)
    await note(store, "c1", "an hour left", ttl_seconds=3600)
    await note(store, "c1", "expired", expires_at=PAST)
    await note(store, "gone", "expired too", expires_at=PAST)

    live = ["kept", "a year left", "an hour left"]
    assert await notes(store, "c1") == live
    assert await notes(store, "gone") == []
    summary = await store.apply(ALICE, GetContextSummary(conversation_id="c1"))
    assert summary == ContextSummary(
        summary="\n".join(["Previous interactions:", *(f"- {n}" for n in live)])
    )
    assert await store.apply(ALICE, GetContextSummary(conversation_id="gone")) == ContextSummary(
        summary=None
    )
    exported = await store.apply(ALICE, ExportConversation(conversation_id="c1"))
    assert isinstance(exported, InteractionsFile)
    assert [entry.content for entry in exported.interactions["c1"]] == live
    nothing = await store.apply(ALICE, ExportConversation(conversation_id="gone"))
    assert nothing == InteractionsFile(agent_id=ALICE, interactions={})
    listed = await store.apply(ALICE, GetAllConversations())
    assert isinstance(listed, Conversations)
    assert [(c.conversation_id, c.notes) for c in listed.conversations] == [("c1", 3)]
    (c1,) = listed.conversations
    assert c1.last_note_at == exported.interactions["c1"][-1].timestamp  # not the expired one's
    counted = await store.apply(ALICE, ForgetInteractions(dry_run=True))
    assert counted == InteractionsForgotten(
        notes=3, conversations=1, sessions=0, files=0, dry_run=True
    )
    # a conversation whose notes all expired has nothing to clear
    assert await store.apply(ALICE, ClearConversation(conversation_id="gone")) == Cleared(
        cleared=False
    )


async def test_purge_deletes_from_the_file_only_what_expired(
    store: InteractionStore, where: str | Path
) -> None:
    await note(store, "c1", "kept")
    await note(store, "c1", "an hour left", ttl_seconds=3600)
    await note(store, "c1", "expired", expires_at=PAST)
    await note(store, "c2", "expired too", expires_at=PAST)
    assert len(await note_rows(where)) == 4  # hidden, but still in the store

    assert await store.purge_expired() == 2
    assert [(c, t) for c, t, _ in await note_rows(where)] == [
        ("c1", "kept"),
        ("c1", "an hour left"),
    ]
    assert await store.purge_expired() == 0
    assert await notes(store, "c1") == ["kept", "an hour left"]


async def test_a_short_ttl_hides_the_note_once_passed(store: InteractionStore) -> None:
    await note(store, "c1", "kept")
    await note(store, "c1", "brief", ttl_seconds=0.2)
    await asyncio.sleep(0.5)
    assert await notes(store, "c1") == ["kept"]
    assert await store.purge_expired() == 1


async def test_the_sooner_of_ttl_and_expires_at_wins(
    store: InteractionStore, where: str | Path
) -> None:
    await note(store, "c1", "ttl sooner", ttl_seconds=3600, expires_at=FUTURE)
    await note(store, "c1", "moment sooner", ttl_seconds=3600, expires_at=PAST)
    assert await notes(store, "c1") == ["ttl sooner"]
    expiries = {text: at for _, text, at in await note_rows(where)}
    assert expiries["ttl sooner"] == pytest.approx(time.time() + 3600, abs=60)
    assert expiries["moment sooner"] == PAST.timestamp()


async def test_note_expiry_survives_close_and_reopen(where: str | Path) -> None:
    path = where
    store = await InteractionStore.open(path, purge_every=None)
    await note(store, "c1", "kept")
    await note(store, "c1", "a year left", expires_at=FUTURE)
    await note(store, "c1", "expired", expires_at=PAST)
    await store.close()

    reopened = await InteractionStore.open(path, purge_every=None)
    assert await notes(reopened, "c1") == ["kept", "a year left"]
    assert {text: at for _, text, at in await note_rows(path)} == {
        "kept": None,
        "a year left": FUTURE.timestamp(),
        "expired": PAST.timestamp(),
    }
    assert await reopened.purge_expired() == 1
    await reopened.close()


async def test_notes_of_a_store_before_expiry_never_expire(tmp_path: Path) -> None:
    path = tmp_path / "interaction.db"
    old = await open_migrated(path, MIGRATIONS[:2])  # the schema before expiry
    await old.execute(
        "INSERT INTO notes (owner, conversation_id, content, timestamp) VALUES (?, ?, ?, ?)",
        (ALICE, "c1", "from before", NOW.isoformat()),
    )
    await old.commit()
    await old.close()
    store = await InteractionStore.open(path, purge_every=None)
    assert await notes(store, "c1") == ["from before"]
    assert await store.purge_expired() == 0
    assert await note_rows(path) == [("c1", "from before", None)]
    await store.close()


async def test_the_background_purge_runs_and_stops_with_the_store(where: str | Path) -> None:
    path = where
    store = await InteractionStore.open(path, purge_every=0.05)
    await note(store, "c1", "kept")
    await note(store, "c1", "expired", expires_at=PAST)
    deadline = time.monotonic() + 10
    while len(await note_rows(path)) > 1:
        assert time.monotonic() < deadline, "the background purge never ran"
        await asyncio.sleep(0.05)
    assert [t for _, t, _ in await note_rows(path)] == ["kept"]
    await asyncio.wait_for(store.close(), 5)


async def test_a_store_with_the_default_purge_closes_at_once(where: str | Path) -> None:
    store = await InteractionStore.open(where)
    await note(store, "c1", "kept", ttl_seconds=3600)
    await asyncio.wait_for(store.close(), 5)  # the purge waits its 60 s: close must not


BAD_EXPIRY = [
    {"ttl_seconds": -1},
    {"ttl_seconds": 0},
    {"ttl_seconds": 1e12},  # more than a century
    {"ttl_seconds": True},
    {"ttl_seconds": "60"},
    {"expires_at": "2030-01-01T00:00:00"},  # naive: no UTC offset
    {"expires_at": "tomorrow"},
    {"expires_at": "31/12/2030 23:00"},
    {"expires_at": 1893456000},
]


@pytest.mark.parametrize("expiry", BAD_EXPIRY, ids=json.dumps)
async def test_a_bad_note_expiry_is_refused_and_nothing_stored(
    store: InteractionStore, where: str | Path, expiry: dict[str, Any]
) -> None:
    body = {"op": "add_information", "conversation_id": "c1", "information": "x", **expiry}
    with pytest.raises(BadRequest, match=r"ttl_seconds|expires_at"):
        parse_op(interaction_ops, json.dumps(body))
    with pytest.raises(ValidationError):
        AddInformation(conversation_id="c1", information="x", **expiry)
    assert await note_rows(where) == []
    assert await notes(store, "c1") == []


def test_a_naive_datetime_is_refused_by_the_op() -> None:
    with pytest.raises(ValidationError, match="timezone"):
        AddInformation(conversation_id="c1", information="x", expires_at=datetime(2030, 1, 1))
    with pytest.raises(ValidationError, match="timezone"):
        AddEntity(
            session_id="s1", entity=EntityRef(type="t", id="e", name="e"),
            expires_at=datetime(2030, 1, 1),
        )  # fmt: skip


# -- working-memory items -----------------------------------------------------------


def entity(name: str, **fields: Any) -> EntityRef:
    return EntityRef(type="file", id=name, name=name, **fields)


def finding(name: str, **fields: Any) -> Finding:
    return Finding(id=name, type="bug", title=name, **fields)


async def state(store: InteractionStore, session: str = "s1") -> WorkingMemory:
    result = await store.apply(ALICE, GetWorkingMemory(session_id=session))
    assert isinstance(result, WorkingMemoryState)
    return result.working_memory


def names(memory: WorkingMemory) -> tuple[list[str], list[str]]:
    return [e.id for e in memory.entities], [f.id for f in memory.findings]


async def document(where: str | Path, session: str = "s1") -> tuple[dict[str, Any], Any]:
    """A session's stored document and next expiry, read beside the store."""
    ((text, next_expiry),) = await query(
        where, "SELECT document, next_expiry FROM working_memories WHERE session_id = ?", session
    )
    return json.loads(str(text)), next_expiry


async def test_expired_entities_and_findings_are_hidden_from_every_read(
    store: InteractionStore, where: str | Path
) -> None:
    adds = [
        AddEntity(session_id="s1", entity=entity("kept")),
        AddEntity(session_id="s1", entity=entity("hour"), ttl_seconds=3600),
        AddEntity(session_id="s1", entity=entity("expired"), expires_at=PAST),
        AddEntity(session_id="s1", entity=entity("own past", expires_at=PAST)),
        AddFinding(session_id="s1", finding=finding("kept")),
        AddFinding(session_id="s1", finding=finding("year"), expires_at=FUTURE),
    ]
    for op in adds:
        await store.apply(ALICE, op)
    last = await store.apply(
        ALICE, AddFinding(session_id="s1", finding=finding("expired"), expires_at=PAST)
    )
    assert isinstance(last, WorkingMemoryState)
    visible = (["kept", "hour"], ["kept", "year"])
    assert names(last.working_memory) == visible  # the change's own answer
    assert names(await state(store)) == visible
    recent = await store.apply(ALICE, RecentEntities(session_id="s1"))
    assert isinstance(recent, Entities)
    assert sorted(e.id for e in recent.entities) == ["hour", "kept"]
    serialized = (await state(store)).serialize()
    assert [e["id"] for e in serialized["entities"]] == ["kept", "hour"]
    stored, next_expiry = await document(where)
    assert [e["id"] for e in stored["entities"]] == ["kept", "hour"]  # never written
    assert next_expiry == pytest.approx(time.time() + 3600, abs=60)

    update = WorkingMemory(
        session_id="s1", user_id=ALICE,
        entities=[entity("merged"), entity("merged expired", expires_at=PAST)],
        findings=[finding("merged", expires_at=FUTURE), finding("kept", expires_at=PAST)],
    )  # fmt: skip
    merged = await store.apply(ALICE, MergeWorkingMemory(session_id="s1", update=update))
    assert isinstance(merged, WorkingMemoryState)
    # the update's "kept" finding replaces ours and has expired: neither is left
    assert names(merged.working_memory) == (["kept", "hour", "merged"], ["year", "merged"])


async def test_items_expire_while_running_and_are_purged(
    store: InteractionStore, where: str | Path
) -> None:
    path = where
    await store.apply(ALICE, AddEntity(session_id="s1", entity=entity("kept")))
    await store.apply(ALICE, AddEntity(session_id="s1", entity=entity("brief"), ttl_seconds=0.2))
    await store.apply(ALICE, AddFinding(session_id="s1", finding=finding("brief"), ttl_seconds=0.2))
    await store.apply(ALICE, AddEntity(session_id="s2", entity=entity("brief"), ttl_seconds=0.2))
    await store.apply(ALICE, AddEntity(session_id="s3", entity=entity("hour"), ttl_seconds=3600))
    await asyncio.sleep(0.5)
    assert names(await state(store)) == (["kept"], [])
    assert names(await state(store, "s2")) == ([], [])
    assert len((await document(path))[0]["entities"]) == 2  # hidden, still in the file

    assert await store.purge_expired() == 3
    stored, next_expiry = await document(path)
    assert ([e["id"] for e in stored["entities"]], stored["findings"]) == (["kept"], [])
    assert next_expiry is None
    assert (await document(path, "s2"))[1] is None
    assert [e["id"] for e in (await document(path, "s3"))[0]["entities"]] == ["hour"]  # not yet
    assert await store.purge_expired() == 0


async def test_the_next_change_drops_what_expired(
    store: InteractionStore, where: str | Path
) -> None:
    await store.apply(ALICE, AddEntity(session_id="s1", entity=entity("brief"), ttl_seconds=0.2))
    await asyncio.sleep(0.5)
    await store.apply(ALICE, UpdateContext(session_id="s1", values={"goal": "x"}))
    stored, next_expiry = await document(where)
    assert (stored["entities"], next_expiry) == ([], None)
    assert await store.purge_expired() == 0


async def test_a_retried_change_answers_without_what_expired_since(
    store: InteractionStore,
) -> None:
    op = AddEntity(session_id="s1", entity=entity("brief"), ttl_seconds=0.2)
    first = await store.apply(ALICE, op, "r-1")
    await asyncio.sleep(0.5)
    again = await store.apply(ALICE, op, "r-1")
    assert isinstance(first, WorkingMemoryState) and isinstance(again, WorkingMemoryState)
    assert again.working_memory.entities == []
    assert again.working_memory.session_id == first.working_memory.session_id


async def test_the_soonest_expiry_of_an_item_wins(store: InteractionStore) -> None:
    soon = datetime.now(timezone.utc) + timedelta(minutes=5)  # NOW is the import's time
    ops = [
        AddEntity(session_id="s1", entity=entity("own later", expires_at=FUTURE), ttl_seconds=3600),
        AddEntity(session_id="s1", entity=entity("own sooner", expires_at=soon), expires_at=FUTURE),
        AddFinding(session_id="s1", finding=finding("moment"), ttl_seconds=1e6, expires_at=soon),
    ]
    for op in ops:
        await store.apply(ALICE, op)
    memory = await state(store)
    expiries = {item.id: item.expires_at for item in [*memory.entities, *memory.findings]}
    later = expiries["own later"]
    assert later is not None
    assert later.timestamp() == pytest.approx(time.time() + 3600, abs=60)
    assert expiries["own sooner"] == soon
    assert expiries["moment"] == soon


async def test_item_expiry_survives_close_and_reopen(where: str | Path) -> None:
    path = where
    store = await InteractionStore.open(path, purge_every=None)
    await store.apply(ALICE, AddEntity(session_id="s1", entity=entity("year"), expires_at=FUTURE))
    await store.apply(ALICE, AddFinding(session_id="s1", finding=finding("kept")))
    await store.close()

    reopened = await InteractionStore.open(path, purge_every=None)
    memory = await state(reopened)
    assert [(e.id, e.expires_at) for e in memory.entities] == [("year", FUTURE)]
    assert [(f.id, f.expires_at) for f in memory.findings] == [("kept", None)]
    assert WorkingMemory.deserialize(memory.serialize()) == memory
    await reopened.close()


BAD_ITEMS = [
    ("add_entity", "entity", {"type": "file", "id": "e", "name": "e"}),
    ("add_finding", "finding", {"id": "f", "type": "bug", "title": "f"}),
]


@pytest.mark.parametrize("expiry", BAD_EXPIRY, ids=json.dumps)
@pytest.mark.parametrize(("op", "field", "item"), BAD_ITEMS, ids=[op for op, _, _ in BAD_ITEMS])
async def test_a_bad_item_expiry_is_refused_and_nothing_stored(
    store: InteractionStore, where: str | Path, op: str, field: str, item: dict[str, Any],
    expiry: dict[str, Any],
) -> None:  # fmt: skip
    body = {"op": op, "session_id": "s1", field: item, **expiry}
    with pytest.raises(BadRequest, match=r"ttl_seconds|expires_at"):
        parse_op(interaction_ops, json.dumps(body))
    if "expires_at" in expiry:  # the item's own expiry is held to the same rule
        inside = {"op": op, "session_id": "s1", field: {**item, **expiry}}
        with pytest.raises(BadRequest, match="expires_at"):
            parse_op(interaction_ops, json.dumps(inside))
    assert await query(where, "SELECT * FROM working_memories") == []
    with pytest.raises(ItemNotFound):
        await store.apply(ALICE, GetWorkingMemory(session_id="s1"))


# -- the model ------------------------------------------------------------------------


def test_the_model_hides_expired_items_in_reads_merges_and_serialization() -> None:
    memory = WorkingMemory(session_id="s1", user_id=ALICE)
    memory.add_entity(entity("kept"))
    memory.add_entity(entity("expired", expires_at=PAST))
    memory.add_finding(finding("year", expires_at=FUTURE))
    memory.add_finding(finding("expired", expires_at=PAST))
    assert [e.id for e in memory.recent_entities(10)] == ["kept"]
    assert names(memory.merged(WorkingMemory(session_id="s1", user_id=ALICE))) == (
        ["kept"], ["year"],
    )  # fmt: skip
    serialized = memory.serialize()
    assert [f["id"] for f in serialized["findings"]] == ["year"]
    assert isinstance(serialized["findings"][0]["expires_at"], str)  # JSON-ready
    back = WorkingMemory.deserialize(serialized)
    assert names(back) == (["kept"], ["year"]) and back.findings[0].expires_at == FUTURE
    assert memory.next_expiry() == PAST.timestamp()
    assert memory.drop_expired() == 2
    assert names(memory) == (["kept"], ["year"])
    assert memory.next_expiry() == FUTURE.timestamp()


# -- the client, over XMPP --------------------------------------------------------------


async def test_the_client_calls_pass_the_expiry_on(alice: ClientAgent) -> None:
    memory = alice.memory
    await memory.add_information("c1", "kept", ttl_seconds=3600)
    await memory.add_information("c1", "expired", expires_at=PAST)
    assert await memory.get_information("c1") == ["kept"]
    with pytest.raises(ValidationError):
        await memory.add_information("c1", "naive", expires_at=datetime(2030, 1, 1))
    session = memory.session("expiring")
    await session.add_entity(entity("kept"), ttl_seconds=3600)
    await session.add_entity(entity("expired"), expires_at=PAST)
    await session.add_finding(finding("year"), expires_at=FUTURE)
    state = await session.add_finding(finding("expired"), ttl_seconds=3600, expires_at=PAST)
    assert state is not None
    assert names(state.working_memory) == (["kept"], ["year"])
    assert state.working_memory.findings[0].expires_at == FUTURE
    assert [e.id for e in await session.recent_entities()] == ["kept"]
