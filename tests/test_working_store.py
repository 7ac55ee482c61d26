"""Working memories in the interaction store, on both engines."""

from __future__ import annotations

import pytest

from spade_memory.interaction.store import InteractionStore
from spade_memory.protocol.errors import ItemNotFound
from spade_memory.protocol.working import (
    CreateWorkingMemory,
    GetWorkingMemory,
    SetFocus,
    UpdateContext,
    WorkingMemoryState,
)
from spade_memory.protocol.working_memory import Focus

from .conftest import Location

ALICE = "alice@localhost"


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
