"""A bound room across restarts, on a Prosody of its own: the interaction memory agent
(another process) joins the room again after its own restart and after the server's,
records what was said while it was away once, and what it had recorded never twice."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from slixmpp import JID

from spade_memory.testing import MemoryServiceProcess
from spade_memory.xmpp.lifecycle import stop_agent
from tests.support import prosody
from tests.support.harness import ClientAgent, start_client, unique_jid
from tests.support.rooms import InRoom, eventually, govern, room_name
from tests.support.spaces import space_name


@pytest.fixture
def restartable(tmp_path: Path) -> Iterator[tuple[prosody.ProsodyProcess, MemoryServiceProcess]]:
    """A Prosody of its own (other tests share theirs) and the memory agents on it."""
    if not prosody.installed():
        pytest.skip(prosody.MISSING)
    with prosody.serving(tmp_path) as started:
        yield started


async def texts(agent: ClientAgent, room: str, query: str) -> list[tuple[str, str]]:
    """(author, text) of every note of ``room`` about ``query``."""
    return sorted((n.author, n.text) for n in await agent.memory.search_room(room, query, limit=50))


async def test_the_agent_rejoins_after_its_restart_and_the_servers_recording_each_message_once(
    restartable: tuple[prosody.ProsodyProcess, MemoryServiceProcess],
) -> None:
    server, service = restartable
    owner = await start_client(unique_jid("owner"), server.port)
    alice = await start_client(unique_jid("alice"), server.port)
    try:
        space, room = space_name("kept"), room_name("kept")
        in_room = InRoom(alice, room, "alice")
        await in_room.join()
        await in_room.configure(persistent=True)  # alice made it: she owns it
        await owner.memory.create_space(space)
        await govern(in_room, owner)  # an admin of the room, in it: it may bind it
        await owner.memory.join_room(room, space)
        alice_jid = str(alice.jid.bare)
        for text in ("release one is tagged", "release two is tagged"):
            in_room.say(text)

        async def both() -> bool:
            return len(await texts(alice, room, "release tagged")) == 2

        await eventually(both, "both messages recorded")

        service.stop()  # the agent goes; the room goes on without it
        await in_room.said("release three was tagged while the memory was away")
        service.start()

        async def three() -> bool:
            return len(await texts(alice, room, "release tagged")) == 3

        await eventually(three, "the message said while away recorded on the rejoin")
        assert await texts(alice, room, "release tagged") == [  # its author known by the
            (alice_jid, "release one is tagged"),  # room's id of her (XEP-0421)
            (alice_jid, "release three was tagged while the memory was away"),
            (alice_jid, "release two is tagged"),
        ]

        server.stop()
        await asyncio.sleep(0.5)
        server.start()  # the room is persistent: it comes back, without its occupants
        in_room = InRoom(alice, room, "alice")
        await eventually(_rejoined(in_room), "alice back in the room")

        async def memory_back() -> bool:
            return "memory" in (in_room.muc.get_roster(room) or [])

        await eventually(memory_back, "the agent back in the room after the server's restart")
        in_room.say("memory: which releases are tagged?")
        answer = await in_room.answer_from("memory")
        assert "release one is tagged" in answer
        assert len(await texts(alice, room, "release tagged")) == 3, "nothing recorded twice"
    finally:
        for agent in (owner, alice):
            await stop_agent(agent)


def _rejoined(room: InRoom):  # type: ignore[no-untyped-def]
    async def check() -> bool:
        # a join sent before the client's new session is lost: its answer never comes
        if not room.agent.client.sessionstarted:
            await asyncio.sleep(0.2)
            return False
        try:
            await room.join(timeout=5)
        except Exception:  # the client is still reconnecting
            await asyncio.sleep(0.5)
            return False
        return True

    return check


async def test_a_binder_demoted_while_the_agent_was_away_ends_the_binding_at_its_rejoin(
    restartable: tuple[prosody.ProsodyProcess, MemoryServiceProcess],
) -> None:
    server, service = restartable
    owner = await start_client(unique_jid("owner"), server.port)
    host = await start_client(unique_jid("host"), server.port)
    try:
        space, room = space_name("demoted"), room_name("demoted")
        in_room = InRoom(host, room, "host")
        await in_room.join()
        await in_room.configure(persistent=True)  # the host made it: it owns it
        await owner.memory.create_space(space)
        await govern(in_room, owner)  # an admin of the room, in it: it may bind it
        await owner.memory.join_room(room, space)

        async def memory_in() -> bool:
            return "memory" in (in_room.muc.get_roster(room) or [])

        await eventually(memory_in, "the agent in the bound room")
        service.stop()  # away, it sees no presence of what follows
        await in_room.muc.set_affiliation(JID(room), "member", jid=owner.jid.bare)
        await asyncio.sleep(0.5)  # the agent's own leaving has reached the room
        service.start()  # it rejoins, and the room says its binder is a member now

        async def unbound() -> bool:
            return await owner.memory.list_rooms() == []

        await eventually(unbound, "the binding ended at the rejoin")
        assert not await memory_in()
    finally:
        for agent in (owner, host):
            await stop_agent(agent)
