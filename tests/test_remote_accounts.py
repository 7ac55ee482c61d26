"""What an account of another server may ask (``serving.remote``), op by op; the same
rule end to end, across three federated Prosodys, is in ``test_federation``."""

from __future__ import annotations

from typing import Any

import pytest

from spade_memory import NotAuthorized
from spade_memory.protocol.interaction_forget import ForgetInteractions
from spade_memory.protocol.memories import ForgetAllMemories, SearchMemories, StoreMemory
from spade_memory.protocol.notes import AddInformation
from spade_memory.protocol.ops import PERSONAL, Op
from spade_memory.protocol.rooms import JoinRoom, LeaveRoom
from spade_memory.protocol.spaces import CreateSpace, Grant
from spade_memory.serving.remote import check_remote

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
