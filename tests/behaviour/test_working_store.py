"""Working memories in the interaction store, on both engines."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

import pytest

from spade_memory.interaction.store import InteractionStore
from spade_memory.protocol.beads import beads_sync_ops
from spade_memory.protocol.errors import BadRequest, ItemNotFound, ResourceConstraint
from spade_memory.protocol.interaction import interaction_ops
from spade_memory.protocol.limits import Limits
from spade_memory.protocol.ops import parse_op
from spade_memory.protocol.working import (
    AddEntity,
    CreateWorkingMemory,
    GetWorkingMemory,
    ListWorkingMemories,
    SetFocus,
    UpdateContext,
    WorkingMemoryState,
    WorkingSessions,
)
from spade_memory.protocol.working_memory import EntityRef, Focus
from tests.support.stores import Location

ALICE = "alice@localhost"
PAST = datetime(2000, 1, 1, tzinfo=timezone.utc)


async def test_changes_create_persist_and_apply_once(location: Location) -> None:
    store = await InteractionStore.open(location("interaction.db"))
    with pytest.raises(ItemNotFound):
        await store.apply(ALICE, GetWorkingMemory(session_id="s1"))
    focus = SetFocus(session_id="s1", focus=Focus(type="file", id="a.py", name="a.py"))
    first = await store.apply(ALICE, focus, "r-1")  # creates the session, then focuses
    assert isinstance(first, WorkingMemoryState)
    assert first.working_memory.user_id == ALICE
    assert first.working_memory.current_focus is not None
    again = await store.apply(ALICE, focus, "r-1")  # a retry: no second history entry
    assert again == first
    await store.apply(ALICE, UpdateContext(session_id="s1", values={"goal": "tests"}))
    await store.close()

    reopened = await InteractionStore.open(location("interaction.db"))
    state = await reopened.apply(ALICE, GetWorkingMemory(session_id="s1"))
    assert isinstance(state, WorkingMemoryState)
    assert state.working_memory.focus_history == []
    assert state.working_memory.context == {"goal": "tests"}
    created = await reopened.apply(ALICE, CreateWorkingMemory(session_id="s1", user_id="x"))
    assert created == state  # create returns the existing one unchanged
    with pytest.raises(ItemNotFound):
        await reopened.apply("bob@localhost", GetWorkingMemory(session_id="s1"))
    await reopened.close()


async def test_a_moment_without_offset_is_utc_and_a_huge_timeout_is_refused(
    location: Location,
) -> None:
    # an entity's time without an offset made every recent_entities of its session fail
    def op(name: str, **fields: object) -> Any:
        return parse_op(interaction_ops, json.dumps({"op": name, "session_id": "s", **fields}))

    def asking(**clarification: object) -> Any:
        return op("set_clarification", clarification={"question": "q?", **clarification})

    store = await InteractionStore.open(location("moments.db"), purge_every=None)
    try:
        for entity in ({"id": "a.py"}, {"id": "b.py", "timestamp": "2024-01-01T00:00:00"}):
            await store.apply(
                ALICE, op("add_entity", entity={"type": "file", "name": "x", **entity})
            )
        recent = await store.apply(ALICE, op("recent_entities"))
        assert [entity.id for entity in recent.entities] == ["a.py", "b.py"]
        assert recent.entities[1].timestamp == datetime(2024, 1, 1, tzinfo=timezone.utc)
        for timeout in (1e15, float("inf")):  # overflowed the deadline's date
            with pytest.raises(BadRequest):
                asking(timeout_seconds=timeout)
        late = await store.apply(ALICE, asking(timeout_seconds=1, created_at="9999-12-31T23:59:59"))
        assert late.pending_clarification is not None
    finally:
        await store.close()


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e999"])
async def test_a_number_json_cannot_hold_is_refused_in_a_free_object(
    location: Location, number: str
) -> None:
    # answered as given, then stored as null: refused where it is parsed now
    def body(op: str, **fields: object) -> str:
        return json.dumps({"op": op, "session_id": "s", **fields}).replace('"@"', number)

    store = await InteractionStore.open(location("numbers.db"), purge_every=None)
    try:
        await store.apply(ALICE, UpdateContext(session_id="s", values={"kept": 1.5}))
        for op, fields, where in (
            ("update_context", {"values": {"x": ["@"]}}, "values"),
            ("add_finding", {"finding": {"type": "t", "title": "x", "metadata": {"x": "@"}}},
             "finding.metadata"),
            ("merge_working_memory",
             {"update": {"session_id": "s", "user_id": ALICE, "context": {"x": "@"}}},
             "update.context"),
            ("save_preferences", {"user": "u", "preferences": {"x": {"y": "@"}}}, "preferences"),
        ):  # fmt: skip
            with pytest.raises(BadRequest, match=rf"{where}: .*finite"):
                parse_op(interaction_ops, body(op, **fields))
        state = await store.apply(ALICE, GetWorkingMemory(session_id="s"))
        assert state.working_memory.context == {"kept": 1.5}
    finally:
        await store.close()
    beads = json.dumps({"op": "store_memory", "content": "c", "metadata": {"x": "@"}})
    with pytest.raises(BadRequest, match=r"metadata: .*finite"):
        parse_op(beads_sync_ops, beads.replace('"@"', number))


async def test_a_session_stops_growing_at_one_answer_and_may_always_shrink(
    location: Location,
) -> None:
    store = await InteractionStore.open(
        location("interaction.db"), limits=Limits(max_answer_bytes=3_000)
    )
    try:
        with pytest.raises(ResourceConstraint, match="--max-answer-bytes"):
            for n in range(10):
                values = {f"key{n}": "v" * 500}
                await store.apply(ALICE, UpdateContext(session_id="s", values=values))
        state = await store.apply(ALICE, GetWorkingMemory(session_id="s"))
        assert 1 < len(state.working_memory.context) < 10  # as it was before the refusal
    finally:
        await store.close()
    # a session grown under a larger limit: shrinking it is let through, growing is not
    bigger = await InteractionStore.open(location("interaction.db"))
    for n in range(10):
        values = {f"key{n}": "v" * 500}
        await bigger.apply(ALICE, UpdateContext(session_id="s", values=values))
    await bigger.close()
    store = await InteractionStore.open(
        location("interaction.db"), limits=Limits(max_answer_bytes=3_000)
    )
    try:
        with pytest.raises(ResourceConstraint):
            await store.apply(ALICE, UpdateContext(session_id="s", values={"more": "v"}))
        smaller = await store.apply(ALICE, UpdateContext(session_id="s", values={"key0": ""}))
        assert smaller.working_memory.context["key0"] == ""
    finally:
        await store.close()


async def test_an_owners_sessions_are_listed_by_id_a_page_at_a_time(location: Location) -> None:
    store = await InteractionStore.open(location("listed.db"), purge_every=None)
    try:
        empty = await store.apply(ALICE, ListWorkingMemories())
        assert isinstance(empty, WorkingSessions)
        assert empty.sessions == [] and empty.next_offset is None and empty.space == "personal"
        for name in ("s3", "s1", "s2"):
            await store.apply(ALICE, CreateWorkingMemory(session_id=name, user_id="u-" + name))
        focus = Focus(type="file", id="a.py", name="the parser")
        await store.apply(ALICE, SetFocus(session_id="s2", focus=focus))
        entity = EntityRef(type="file", id="b.py", name="b")
        await store.apply(ALICE, AddEntity(session_id="s2", entity=entity))
        gone = EntityRef(type="file", id="c.py", name="c")  # expired: not counted
        await store.apply(ALICE, AddEntity(session_id="s2", entity=gone, expires_at=PAST))
        await store.apply("bob@localhost", CreateWorkingMemory(session_id="bobs"))

        first = await store.apply(ALICE, ListWorkingMemories(limit=2))
        assert isinstance(first, WorkingSessions)
        assert [s.session_id for s in first.sessions] == ["s1", "s2"]
        assert first.next_offset == 2
        s2 = first.sessions[1]
        assert (s2.user_id, s2.focus, s2.entities, s2.findings) == ("u-s2", "the parser", 1, 0)
        rest = await store.apply(ALICE, ListWorkingMemories(limit=2, offset=first.next_offset))
        assert isinstance(rest, WorkingSessions)
        assert [s.session_id for s in rest.sessions] == ["s3"] and rest.next_offset is None
        theirs = await store.apply("bob@localhost", ListWorkingMemories())
        assert isinstance(theirs, WorkingSessions)
        assert [s.session_id for s in theirs.sessions] == ["bobs"]  # each owner its own
    finally:
        await store.close()


def test_a_page_of_sessions_is_bounded() -> None:
    for body in ({"limit": 51}, {"limit": 0}, {"offset": -1}):
        with pytest.raises(BadRequest):
            parse_op(interaction_ops, json.dumps({"op": "list_working_memories", **body}))
