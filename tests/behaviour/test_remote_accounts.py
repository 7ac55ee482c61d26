"""What an account of another server may ask (``serving.remote``), op by op; the same
rule end to end, across three federated Prosodys, is in ``test_federation``."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from spade.message import Message

from spade_memory import ItemNotFound, NotAuthorized
from spade_memory.base_memory.service import BaseMemoryService
from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.protocol.interaction_forget import ForgetInteractions
from spade_memory.protocol.memories import (
    ForgetAllMemories,
    MemoryList,
    SearchMemories,
    Stored,
    StoreMemory,
)
from spade_memory.protocol.notes import AddInformation
from spade_memory.protocol.ops import PERSONAL, Op
from spade_memory.protocol.rooms import JoinRoom, LeaveRoom
from spade_memory.protocol.spaces import CreateSpace, Grant
from spade_memory.serving.agent import ServeRequests
from spade_memory.serving.remote import check_remote
from spade_memory.spaces.directory import SpaceDirectory
from tests.support.stores import Location

HOME = "a.example"
NEIGHBOUR, VISITOR = f"bob@{HOME}", "bot@b.example"

SERVED: list[Op[Any]] = [
    StoreMemory(category="fact", content="in the team's space", space="team"),
    Grant(space="team", member="x@b.example", role="reader"),  # the space's admins decide
    JoinRoom(room="r@conference.a.example", space="team"),
    LeaveRoom(room="r@conference.a.example"),  # its space's admins decide
    SearchMemories(query="anything"),  # reads: it keeps nothing here to find
    ForgetAllMemories(),
    ForgetInteractions(),
]
REFUSED: list[Op[Any]] = [
    StoreMemory(category="fact", content="its own"),
    StoreMemory(category="fact", content="its own, named", space=PERSONAL),
    AddInformation(conversation_id="c", information="a note of its own"),
    CreateSpace(name="mine"),
]


@pytest.mark.parametrize("op", SERVED + REFUSED, ids=lambda op: op.tag())
def test_an_account_of_the_agents_own_domain_is_served_everything(op: Op[Any]) -> None:
    check_remote(NEIGHBOUR, op, HOME)


@pytest.mark.parametrize("op", SERVED, ids=lambda op: op.tag())
def test_an_account_of_another_domain_reads_forgets_and_acts_in_named_spaces(
    op: Op[Any],
) -> None:
    check_remote(VISITOR, op, HOME)


@pytest.mark.parametrize("op", REFUSED, ids=lambda op: op.tag())
def test_an_account_of_another_domain_keeps_nothing_of_its_own(op: Op[Any]) -> None:
    with pytest.raises(NotAuthorized, match=r"another server than a\.example"):
        check_remote(VISITOR, op, HOME)


def test_a_subdomain_is_another_domain() -> None:
    with pytest.raises(NotAuthorized):
        check_remote("bot@eu.a.example", StoreMemory(category="fact", content="x"), HOME)


async def test_a_forged_sender_of_another_server_that_got_through_gets_only_what_was_granted(
    location: Location,
) -> None:
    """Had a server let a stanza through with a forged sender of another domain, the
    memory agent (its serving behaviour, on real stores) still refuses what that domain
    was not granted, and stores nothing."""
    store = await LongTermStore.open(location("memory.db"))
    directory = await SpaceDirectory.open(location("spaces.db"))
    serving = ServeRequests(BaseMemoryService(store, directory=directory), HOME)

    async def sent(sender: str, body: dict[str, object]) -> object:
        request = Message(
            to=f"base-memory@{HOME}", sender=f"{sender}/x", thread=uuid.uuid4().hex,
            body=json.dumps(body),
        )  # fmt: skip
        return await serving.outcome(request)

    owner, granted, forged = f"owner@{HOME}", "bot@b.example", "bot@c.example"
    try:
        await sent(owner, {"op": "create_space", "name": "team"})
        await sent(
            owner, {"op": "grant", "space": "team", "member": "*@b.example", "role": "writer"}
        )
        stored = await sent(granted, {"op": "store_memory", "category": "fact",
                                      "content": "granted", "space": "team"})  # fmt: skip
        assert isinstance(stored, Stored)
        for body, refused in (
            ({"op": "store_memory", "category": "fact", "content": "x", "space": "team"},
             ItemNotFound),  # no grant: as if there were no space
            ({"op": "store_memory", "category": "fact", "content": "x"}, NotAuthorized),
            ({"op": "create_space", "name": "squat"}, NotAuthorized),
            ({"op": "recent_memories", "space": "team"}, ItemNotFound),
        ):  # fmt: skip
            assert isinstance(await sent(forged, body), refused), body
        everything = await sent(owner, {"op": "recent_memories", "space": "team"})
        assert isinstance(everything, MemoryList)
        assert [m.content for m in everything.memories] == ["granted"]
        assert await sent(forged, {"op": "recent_memories"}) == MemoryList(memories=[])
    finally:
        await store.close()
        await directory.close()
