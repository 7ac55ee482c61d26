"""SPADE's embedded server has no group chats (XEP-0045): binding a room there is
refused with a reason, at once, and the agent keeps serving."""

from __future__ import annotations

import pytest

from spade_memory import FeatureNotImplemented
from tests.support.harness import ClientAgent
from tests.support.rooms import room_name
from tests.support.spaces import space_name


async def test_binding_a_room_on_the_embedded_server_says_it_has_no_group_chats(
    alice: ClientAgent,
) -> None:
    space = space_name("no-rooms")
    await alice.memory.create_space(space)
    with pytest.raises(FeatureNotImplemented, match="no group chats"):
        await alice.memory.join_room(room_name("nowhere"), space)
    assert await alice.memory.list_rooms() == []
    assert await alice.memory.get_all_conversations() == []  # still serving
