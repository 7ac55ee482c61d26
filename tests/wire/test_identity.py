"""Identity: the full matrix, every op of every memory agent, on both servers.

On Prosody and on the embedded server that ``spade-memory run`` starts (both
stamp ``from`` with the sender's authenticated JID), mallory tries every
operation of the base memory, interaction memory and beads sync agents
against alice's memories (and her space) in three ways: with a forged ``from`` naming alice,
with alice named as owner in the body, and both. Every attempt must come
back to mallory and reveal none of alice's secrets; claims of alice's
identity are refused; an attempt on alice's items is answered exactly as the
same attempt on items that do not exist (no existence oracle); alice's view
of her own memories is the same afterwards. The roles inside a space are
``test_space_identity``'s matrix.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from spade_memory.protocol.ops import op_types
from spade_memory.server.registry import SERVICES
from spade_memory.testing import MemoryServiceProcess
from spade_memory.xmpp.lifecycle import stop_agent
from tests.support.harness import ClientAgent, start_client, unique_jid
from tests.support.identity_matrix import Alice, attacks, no_cross_owner_attempt_succeeds


@pytest.fixture
async def alice_and_mallory(
    any_memory_service: MemoryServiceProcess,
) -> AsyncIterator[tuple[Alice, ClientAgent]]:
    port = any_memory_service.port
    alice = Alice(await start_client(unique_jid("alice"), port))
    mallory = await start_client(unique_jid("mallory"), port)
    try:
        await alice.seed()
        yield alice, mallory
    finally:
        await stop_agent(alice.agent)
        await stop_agent(mallory)


def test_the_matrix_covers_every_op_of_every_agent() -> None:
    class Stub:
        memory_id, bead_ids, space = "m", ["b1", "b2"], "s"
        agent = type("A", (), {"jid": "alice@localhost"})()

    covered = {svc: {body["op"] for body in bodies} for svc, bodies in attacks(Stub()).items()}  # type: ignore[arg-type]
    assert covered == {
        service.name: {op.tag() for op in op_types(service.union)} for service in SERVICES
    }


async def test_no_cross_owner_attempt_succeeds(
    alice_and_mallory: tuple[Alice, ClientAgent],
) -> None:
    await no_cross_owner_attempt_succeeds(*alice_and_mallory)
