"""Working memory through the interaction memory agent, in its own process, over XMPP."""

from __future__ import annotations

import asyncio

import pytest

from spade_memory import Clarification, EntityRef, Finding, Focus, ItemNotFound, WorkingMemory
from tests.support.harness import ClientAgent, condition_of


async def test_focus_entity_finding_history_and_lossless_state(alice: ClientAgent) -> None:
    session = alice.memory.session("debugging")
    await session.create(user_id="ana")
    await session.set_focus(Focus(type="file", id="src/app.py", name="app.py"))
    await session.add_entity(EntityRef(type="function", id="main", name="main"))
    await session.add_finding(
        Finding(id="f1", type="bug", title="off by one", severity="error", evidence=["log"])
    )
    state = await session.set_focus(Focus(type="function", id="main", name="main"))
    assert state is not None
    memory = state.working_memory
    assert memory.user_id == "ana"
    assert memory.current_focus is not None and memory.current_focus.id == "main"
    assert [f.id for f in memory.focus_history] == ["src/app.py"]
    assert [e.id for e in await session.recent_entities(5)] == ["main"]
    assert [f.severity for f in memory.findings] == ["error"]
    fetched = await session.get()
    assert fetched is not None
    assert WorkingMemory.deserialize(fetched.working_memory.serialize()) == memory


async def test_merge_over_the_wire(alice: ClientAgent) -> None:
    session = alice.memory.session("merge")
    await session.set_focus(Focus(type="module", id="core", name="core"))
    await session.update_context({"goal": "old", "keep": 1})
    update = WorkingMemory(session_id="merge", user_id="ana", context={"goal": "new"})
    update.set_focus(Focus(type="class", id="Loop", name="Loop"))
    merged = await session.merge(update)
    assert merged is not None
    assert merged.working_memory.current_focus is not None
    assert merged.working_memory.current_focus.id == "Loop"
    assert [f.id for f in merged.working_memory.focus_history] == ["core"]
    assert merged.working_memory.context == {"goal": "new", "keep": 1}


async def test_a_clarification_expires(alice: ClientAgent) -> None:
    session = alice.memory.session("clarify")
    state = await session.set_clarification(
        Clarification(question="A or B?", options=["A", "B"], timeout_seconds=0.5)
    )
    assert state is not None and state.pending_clarification is not None
    await asyncio.sleep(0.7)
    later = await session.get()
    assert later is not None and later.pending_clarification is None
    cleared = await session.clear_clarification()
    assert cleared is not None and cleared.working_memory.clarification is None


async def test_sessions_are_the_senders_own(alice: ClientAgent, bob: ClientAgent) -> None:
    await alice.memory.session("private").update_context({"secret": "42"})
    with pytest.raises(ItemNotFound):
        await bob.memory.session("private").get()
    bob_state = await bob.memory.session("private").update_context({"mine": True})
    assert bob_state is not None and bob_state.working_memory.context == {"mine": True}
    alice_state = await alice.memory.session("private").get()
    assert alice_state is not None and alice_state.working_memory.context == {"secret": "42"}


async def test_bad_working_memory_input_is_a_typed_failure(alice: ClientAgent) -> None:
    memory = alice.memory
    await memory.session("kept").set_focus(Focus(type="file", id="a", name="a"))
    bodies = [
        '{"op": "set_focus", "session_id": "kept", "focus": {"type": "galaxy", "id": "x",'
        ' "name": "x"}}',
        '{"op": "add_finding", "session_id": "kept", "finding": {"type": "bug", "title": "t",'
        ' "severity": "apocalyptic"}}',
        '{"op": "set_clarification", "session_id": "kept", "clarification": {"question": "q",'
        ' "timeout_seconds": -1}}',
        '{"op": "recent_entities", "session_id": "kept", "limit": "ten"}',
    ]
    for body in bodies:
        condition = await condition_of(memory, memory.interaction_memory_jid, body)
        assert condition == "bad-request", body
    state = await memory.session("kept").get()
    assert state is not None and state.working_memory.current_focus is not None
    assert state.working_memory.focus_history == []
