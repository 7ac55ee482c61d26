"""The working-memory model: focus history, entities, findings, clarification, merge."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

from spade_memory.protocol.working_memory import (
    Clarification,
    EntityRef,
    Finding,
    Focus,
    WorkingMemory,
)

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def scenario() -> WorkingMemory:
    memory = WorkingMemory(session_id="s1", user_id="alice@localhost")
    memory.set_focus(Focus(type="file", id="src/app.py", name="app.py", set_at=T0))
    memory.add_entity(EntityRef(type="function", id="main", name="main", timestamp=T0))
    memory.add_finding(
        Finding(id="f1", type="bug", title="off by one", location="src/app.py:10",
                severity="error", evidence=["test_x fails"], metadata={"line": 10})
    )  # fmt: skip
    memory.set_focus(Focus(type="function", id="main", name="main", context="entry point"))
    memory.context["goal"] = "fix the loop"
    return memory


def test_changing_focus_moves_the_previous_one_to_history() -> None:
    memory = scenario()
    assert memory.current_focus is not None and memory.current_focus.id == "main"
    assert [f.id for f in memory.focus_history] == ["src/app.py"]
    memory.clear_focus()
    assert memory.current_focus is None
    assert [f.id for f in memory.focus_history] == ["src/app.py", "main"]


def test_recent_entities_newest_first() -> None:
    memory = WorkingMemory(session_id="s", user_id="u")
    for n in range(5):
        memory.add_entity(EntityRef(type="file", id=f"f{n}", name=f"f{n}",
                                    timestamp=T0 + timedelta(minutes=n)))  # fmt: skip
    assert [e.id for e in memory.recent_entities(2)] == ["f4", "f3"]


def test_serialize_then_deserialize_is_lossless() -> None:
    memory = scenario()
    memory.clarification = Clarification(question="which loop?", options=["a", "b"],
                                         timeout_seconds=30)  # fmt: skip
    data = memory.serialize()
    assert {"session_id", "user_id", "current_focus", "entities", "findings", "context"} <= set(
        data
    )
    again = WorkingMemory.deserialize(json.loads(json.dumps(data)))
    assert again == memory


def test_clarification_stops_being_pending_after_its_timeout() -> None:
    memory = WorkingMemory(session_id="s", user_id="u")
    memory.clarification = Clarification(question="A or B?", timeout_seconds=60, created_at=T0)
    assert memory.pending_clarification(T0 + timedelta(seconds=59)) is memory.clarification
    assert memory.pending_clarification(T0 + timedelta(seconds=61)) is None
    memory.clarification = Clarification(question="no deadline", created_at=T0)
    assert memory.pending_clarification(T0 + timedelta(days=365)) is not None


def test_merge_precedence() -> None:
    base = scenario()
    update = WorkingMemory(session_id="s1", user_id="alice@localhost")
    update.set_focus(Focus(type="class", id="Loop", name="Loop"))
    update.add_entity(EntityRef(type="ticket", id="T-1", name="bug report", timestamp=T0))
    update.add_finding(Finding(id="f1", type="bug", title="off by one, confirmed"))
    update.add_finding(Finding(id="f2", type="note", title="loop runs twice"))
    update.context = {"goal": "ship the fix", "deadline": "friday"}

    merged = base.merged(update)
    assert merged.current_focus is not None and merged.current_focus.id == "Loop"
    assert [f.id for f in merged.focus_history] == ["src/app.py", "main"]
    assert [e.id for e in merged.entities] == ["main", "T-1"]
    assert {f.id: f.title for f in merged.findings} == {
        "f1": "off by one, confirmed", "f2": "loop runs twice"}  # fmt: skip
    assert merged.context == {"goal": "ship the fix", "deadline": "friday"}
    # an update without a focus keeps ours; neither input is changed
    kept = base.merged(WorkingMemory(session_id="s1", user_id="x"))
    assert kept.current_focus == base.current_focus
    assert base.current_focus is not None and base.current_focus.id == "main"


def test_a_merge_keeps_each_focus_once_and_shares_nothing_with_its_inputs() -> None:
    memory = scenario()
    merged = memory.merged(memory)  # a client's copy sent back: its history was doubled
    assert [f.id for f in merged.focus_history] == ["src/app.py"]
    twice = merged.merged(memory).merged(memory)
    assert [f.id for f in twice.focus_history] == ["src/app.py"]
    merged.entities[0].name = "changed"
    merged.findings[0].evidence.append("added to the merged copy")
    assert memory.entities[0].name == "main"
    assert memory.findings[0].evidence == ["test_x fails"]


def test_an_entity_or_a_finding_noted_again_is_listed_once() -> None:
    """Noted twice, an entity (its type and id) or a finding (its id, or its type, title
    and location) replaces the earlier note: no duplicates (issue 79)."""
    memory = scenario()
    later = T0 + timedelta(minutes=5)
    memory.add_entity(EntityRef(type="function", id="main", name="main()", timestamp=later))
    memory.add_entity(EntityRef(type="file", id="main", name="main"))  # another type
    assert [(e.type, e.id, e.name) for e in memory.entities] == [
        ("function", "main", "main()"), ("file", "main", "main")]  # fmt: skip
    memory.add_finding(Finding(type="bug", title="Off by one ", location="src/app.py:10",
                               severity="warning"))  # fmt: skip
    memory.add_finding(Finding(id="f1", type="bug", title="off by one", location="src/app.py:10",
                               evidence=["test_y fails too"]))  # fmt: skip
    memory.add_finding(Finding(type="bug", title="off by one", location="src/app.py:99"))
    assert [(f.id, f.location) for f in memory.findings] == [
        ("f1", "src/app.py:10"), (memory.findings[1].id, "src/app.py:99")]  # fmt: skip
    assert memory.findings[0].evidence == ["test_y fails too"]
