"""The interaction memory agent in group chats, on Prosody with ``mod_muc`` (SPADE's
embedded server has no group chats): `spade-memory run` in its own process, the people of
the room in this one, so every message crosses the server."""

from __future__ import annotations

import asyncio
import json
import xml.etree.ElementTree as ET
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from slixmpp import JID

from spade_memory import BadRequest, Conflict, ItemNotFound, NotAuthorized
from spade_memory.protocol.rooms import RoomNote
from spade_memory.testing import MemoryServiceProcess
from spade_memory.xmpp.lifecycle import stop_agent
from tests.support.command_line import shell as run_shell
from tests.support.harness import ClientAgent, jid, start_client, unique_jid
from tests.support.rooms import (
    SAID_WITHIN,
    InRoom,
    eventually,
    govern,
    members_only_room,
    room_name,
)
from tests.support.spaces import space_name

MEMORY_AGENT = "interaction-memory@localhost"


@pytest.fixture
async def people(
    prosody_memory_service: MemoryServiceProcess,
) -> AsyncIterator[list[ClientAgent]]:
    """A space owner, the room's host (its owner), two members, and a stranger."""
    port = prosody_memory_service.port
    agents = [
        await start_client(unique_jid(name), port)
        for name in ("owner", "host", "alice", "mallory", "stranger")
    ]
    yield agents
    for agent in agents:
        await stop_agent(agent)


async def open_room(
    host: ClientAgent, prefix: str, *, whois: str = "anyone", binder: ClientAgent | None = None
) -> InRoom:
    """A room ``host`` made and owns; ``binder``: made an admin of it, and in it, so
    that the room says it may bind it."""
    room = InRoom(host, room_name(prefix), "host")
    await room.join()
    await room.configure(whois=whois)
    if binder is not None:
        await govern(room, binder)
    return room


async def found(agent: ClientAgent, room: str, query: str) -> list[RoomNote]:
    return await agent.memory.search_room(room, query)


async def test_a_bound_room_is_recorded_its_members_read_it_and_it_answers_questions(
    people: list[ClientAgent],
) -> None:
    owner, host, alice, mallory, stranger = people
    space = space_name("team")
    await owner.memory.create_space(space)
    hosting = await open_room(host, "deploys", binder=owner)
    bound = await owner.memory.join_room(hosting.room, space)
    assert bound is not None and bound.present and bound.space == space
    assert bound.bound_by == jid(owner)

    await hosting.muc.set_affiliation(hosting.room, "member", jid=alice.jid.bare)
    in_room = InRoom(alice, hosting.room, "alice")
    await in_room.join()
    mallory_in = InRoom(mallory, hosting.room, "alice-the-owner")  # a nickname lies
    await mallory_in.join()
    in_room.say("We decided to deploy on Friday after the freeze")
    mallory_in.say("I think lunch should be at noon")

    async def recorded() -> bool:
        return bool(await found(alice, hosting.room, "deploy friday"))

    await eventually(recorded, "alice's message searchable by alice, a reader now")
    (note,) = await found(alice, hosting.room, "deploy friday")
    assert note.author == jid(alice) and note.nick == "alice"
    assert note.text == "We decided to deploy on Friday after the freeze"
    (lunch,) = await found(owner, hosting.room, "lunch")
    assert lunch.author == jid(mallory), "the author is the real address, not the nickname"

    details = await owner.memory.space_info(space)
    assert details is not None
    roles = {member.member: member.role for member in details.members}
    assert roles[jid(alice)] == "reader", "a member of the room reads its space"
    assert jid(mallory) not in roles, "a passer-by in an open room does not"
    assert roles[jid(host)] == "admin", "the room's owner is an admin of its space"
    assert jid(stranger) not in roles

    in_room.say("memory: what did we decide about the deploy?")
    answer = await in_room.answer_from("memory")
    assert answer.startswith("alice: From this room's notes:") and "Friday" in answer
    assert not await found(owner, hosting.room, "what did we decide"), "a question is no note"

    in_room.say_privately("memory", "lunch time?")
    private = await asyncio.wait_for(in_room.private.get(), SAID_WITHIN)
    assert "noon" in str(private["body"])

    with pytest.raises(ItemNotFound):
        await found(stranger, hosting.room, "deploy")
    with pytest.raises(NotAuthorized):
        await alice.memory.join_room(hosting.room, space)
    own = space_name("stranger")
    await stranger.memory.create_space(own)
    with pytest.raises(Conflict, match="kept in another space"):  # the room's talk stays
        await stranger.memory.join_room(hosting.room, own)
    with pytest.raises(ItemNotFound):
        await stranger.memory.leave_room(hosting.room)
    rooms = await alice.memory.list_rooms()
    assert [(r.room, r.space, r.present) for r in rooms] == [(hosting.room, space, True)]
    assert await stranger.memory.list_rooms() == []

    mallory_in.say("toolong " + "y" * 16_384)  # over the deployment's max_content_chars
    mallory_in.say("zebra crossings after the long one")

    async def after() -> bool:
        return bool(await found(owner, hosting.room, "zebra"))

    await eventually(after, "the line after the oversized message recorded")
    assert not await found(owner, hosting.room, "toolong"), "the long one is left out"

    # a live message carrying a <delay/> of its own is said now, on the record
    dated = mallory.client.make_message(
        mto=JID(hosting.room), mbody="quokkas are off the record", mtype="groupchat"
    )
    dated.xml.append(ET.fromstring("<delay xmlns='urn:xmpp:delay' stamp='2001-01-01T00:00:00Z'/>"))
    dated.send()

    async def dated_recorded() -> bool:
        return bool(await found(owner, hosting.room, "quokkas"))

    await eventually(dated_recorded, "a live message with a delay element recorded")
    (quokkas,) = await found(owner, hosting.room, "quokkas")
    assert quokkas.author == jid(mallory) and not quokkas.said_at.startswith("2001")


async def test_a_room_that_hides_real_addresses_or_does_not_exist_is_not_bound(
    people: list[ClientAgent],
) -> None:
    owner, host, *_ = people
    space = space_name("hidden")
    await owner.memory.create_space(space)
    hiding = await open_room(host, "hidden", whois="moderators")
    with pytest.raises(BadRequest, match="real addresses"):
        await owner.memory.join_room(hiding.room, space)
    with pytest.raises(ItemNotFound, match="no room"):
        await owner.memory.join_room(room_name("nowhere"), space)
    with pytest.raises(BadRequest, match="not on this server"):
        await owner.memory.join_room("team@conference.elsewhere.example", space)
    assert await owner.memory.list_rooms() == []


async def test_only_who_the_room_says_governs_it_binds_it(people: list[ClientAgent]) -> None:
    """A members-only room keeps the agent as a member after its binding ends: a space
    owner the room does not name must not bind it and read its history."""
    owner, host, alice, mallory, _ = people
    space, theirs = space_name("secret"), space_name("theirs")
    await owner.memory.create_space(space)
    await mallory.memory.create_space(theirs)
    secret = await members_only_room(host, "secret", owner, MEMORY_AGENT)
    bound = await owner.memory.join_room(secret.room, space)  # listed as its admin, away
    assert bound is not None and bound.present
    await secret.said("the launch code is 4711")

    async def kept() -> bool:
        return bool(await found(owner, secret.room, "launch code"))

    await eventually(kept, "the members-only room recorded")
    assert await owner.memory.leave_room(secret.room)

    async def memory_out() -> bool:
        return "memory" not in (secret.muc.get_roster(JID(secret.room)) or [])

    await eventually(memory_out, "the agent out of the unbound room")
    with pytest.raises(NotAuthorized, match="does not say"):  # a member still: it joins
        await mallory.memory.join_room(secret.room, theirs)
    assert await mallory.memory.list_rooms() == []
    with pytest.raises(ItemNotFound):
        await found(mallory, secret.room, "launch code")
    await eventually(memory_out, "the agent out again, having read nothing")

    lobby = await open_room(host, "lobby")  # open: in it, but the room names her nothing
    await InRoom(mallory, lobby.room, "mallory").join()
    await lobby.muc.set_affiliation(JID(lobby.room), "member", jid=alice.jid.bare)
    await InRoom(alice, lobby.room, "alice").join()
    alices = space_name("alices")
    await alice.memory.create_space(alices)
    for who, into in ((mallory, theirs), (alice, alices)):  # a passer-by, a member
        with pytest.raises(NotAuthorized, match="does not say"):
            await who.memory.join_room(lobby.room, into)
    assert await mallory.memory.list_rooms() == []
    await lobby.muc.set_affiliation(JID(lobby.room), "admin", jid=mallory.jid.bare)
    bound = await mallory.memory.join_room(lobby.room, theirs)  # an admin of it now
    assert bound is not None and bound.present and bound.bound_by == jid(mallory)


async def test_a_binding_ends_when_the_room_says_its_binder_no_longer_governs_it(
    people: list[ClientAgent],
) -> None:
    """Bound by an admin of the room, then demoted by the room's owner: the room says so,
    and the agent leaves it and unbinds it."""
    owner, host, *_ = people
    space = space_name("demoted")
    await owner.memory.create_space(space)
    room = await members_only_room(host, "demoted", owner, MEMORY_AGENT)
    governor = InRoom(owner, room.room, "governor")
    await governor.join()
    bound = await owner.memory.join_room(room.room, space)
    assert bound is not None and bound.present
    await room.said("the review is on Thursday")

    async def kept() -> bool:
        return bool(await found(owner, room.room, "review Thursday"))

    await eventually(kept, "the room recorded while its binding held")
    await room.muc.set_affiliation(JID(room.room), "member", jid=owner.jid.bare)

    async def memory_out() -> bool:
        return "memory" not in (room.muc.get_roster(JID(room.room)) or [])

    await eventually(memory_out, "the agent out once the room says its binder is demoted")
    assert await owner.memory.list_rooms() == []
    with pytest.raises(ItemNotFound):  # unbound, as if its admin had unbound it
        await found(owner, room.room, "review")


async def test_an_occupants_private_message_is_a_question_never_a_request(
    people: list[ClientAgent],
) -> None:
    owner, host, alice, *_ = people
    space = space_name("private")
    await owner.memory.create_space(space)
    hosting = await open_room(host, "private", binder=owner)
    await owner.memory.join_room(hosting.room, space)
    await hosting.muc.set_affiliation(hosting.room, "member", jid=alice.jid.bare)
    in_room = InRoom(alice, hosting.room, "alice")
    await in_room.join()

    async def memory_in() -> bool:  # join_room answers before the agent's join is done
        return "memory" in (in_room.muc.get_roster(hosting.room) or [])

    await eventually(memory_in, "the agent in the room")  # or the room drops the message
    op = json.dumps({"op": "add_information", "conversation_id": "c", "information": "x"})
    in_room.say_privately("memory", op)
    private = await asyncio.wait_for(in_room.private.get(), SAID_WITHIN)
    assert str(private["body"]).startswith(("I find nothing", "From this room's notes"))
    assert "Remembered" not in str(private["body"])


async def test_the_agent_leaves_a_room_whose_space_is_deleted_and_one_unbound(
    people: list[ClientAgent],
) -> None:
    owner, host, *_ = people
    gone = await open_room(host, "gone", binder=owner)
    unbound = await open_room(host, "unbound", binder=owner)
    spaces = {}
    for room in (gone, unbound):
        spaces[room.room] = space_name("rooms")
        await owner.memory.create_space(spaces[room.room])
        await owner.memory.join_room(room.room, spaces[room.room])

    def memory_in(room: InRoom) -> Callable[[], Awaitable[bool]]:
        async def check() -> bool:
            return "memory" in (room.muc.get_roster(room.room) or [])

        return check

    def memory_out(room: InRoom) -> Callable[[], Awaitable[bool]]:
        async def check() -> bool:
            return not await memory_in(room)()

        return check

    await eventually(memory_in(gone), "the agent in the room")
    assert await owner.memory.delete_space(spaces[gone.room])
    await eventually(memory_out(gone), "the agent out of the room of a deleted space")
    assert await owner.memory.leave_room(unbound.room)
    await eventually(memory_out(unbound), "the agent out of the unbound room")
    with pytest.raises(ItemNotFound):
        await owner.memory.leave_room(unbound.room)


async def test_an_invitation_naming_a_space_binds_the_room_and_a_ban_takes_its_grant_back(
    people: list[ClientAgent],
) -> None:
    owner, host, alice, _, stranger = people
    space = space_name("invited")
    await owner.memory.create_space(space)
    hosting = await open_room(host, "invited", binder=owner)
    told: dict[str, asyncio.Queue[str]] = {}
    for person in (owner, stranger):
        queue: asyncio.Queue[str] = asyncio.Queue()
        told[jid(person)] = queue
        person.client.register_plugin("xep_0249")
        person.client.add_event_handler("message", _from_memory_to(queue))

    stranger.client.plugin["xep_0249"].send_invitation(MEMORY_AGENT, hosting.room, reason=space)
    refusal = await asyncio.wait_for(told[jid(stranger)].get(), SAID_WITHIN)
    assert refusal.startswith(f"I did not join {hosting.room}")
    owner.client.plugin["xep_0249"].send_invitation(MEMORY_AGENT, hosting.room, reason=space)
    joined = await asyncio.wait_for(told[jid(owner)].get(), SAID_WITHIN)
    assert joined == f"I joined {hosting.room}: what is said there is kept in the space {space!r}."
    (bound,) = await owner.memory.list_rooms()
    assert bound.room == hosting.room and bound.bound_by == jid(owner)

    await hosting.muc.set_affiliation(hosting.room, "member", jid=alice.jid.bare)
    in_room = InRoom(alice, hosting.room, "alice")
    await in_room.join()

    async def members() -> dict[str, str]:
        details = await owner.memory.space_info(space)
        assert details is not None
        return {m.member: m.role for m in details.members}

    async def alice_reads() -> bool:
        return (await members()).get(jid(alice)) == "reader"

    await eventually(alice_reads, "alice granted reader by the room")
    await hosting.muc.set_affiliation(hosting.room, "outcast", jid=alice.jid.bare)

    async def alice_out() -> bool:
        return jid(alice) not in await members()

    await eventually(alice_out, "the banned alice's grant taken back")


def _from_memory_to(queue: asyncio.Queue[str]) -> Callable[[object], None]:
    def heard(stanza: object) -> None:
        message = stanza  # a slixmpp Message
        sender = str(message["from"].bare)  # type: ignore[index]
        if sender == MEMORY_AGENT and message["type"] == "chat":  # type: ignore[index]
            queue.put_nowait(str(message["body"]))  # type: ignore[index]

    return heard


async def test_the_shell_binds_a_room_lists_it_hears_it_and_unbinds_it(
    people: list[ClientAgent], prosody_memory_service: MemoryServiceProcess
) -> None:
    owner, host, alice, *_ = people
    space = space_name("shell")
    await owner.memory.create_space(space)
    hosting = await open_room(host, "shell", binder=owner)

    def shell(*args: str) -> str:
        done = run_shell(prosody_memory_service.port, jid(owner), *args, password="client-secret")
        assert done.returncode == 0, done.stderr
        return done.stdout

    bound = json.loads(
        await asyncio.to_thread(shell, "spaces", "bind", space, hosting.room, "--json")
    )
    assert (bound["room"], bound["space"], bound["present"]) == (hosting.room, space, True)
    in_room = InRoom(alice, hosting.room, "alice")
    await in_room.join()
    await in_room.said("the staging database moves to the new cluster")

    async def heard() -> bool:
        return bool(await found(owner, hosting.room, "staging database"))

    await eventually(heard, "alice's message recorded")
    table = await asyncio.to_thread(shell, "spaces", "hear", hosting.room, "staging database")
    assert "the staging database moves to the new cluster" in table and jid(alice) in table
    listed = await asyncio.to_thread(shell, "spaces", "rooms")
    assert hosting.room in listed and space in listed
    assert "unbound" in await asyncio.to_thread(shell, "spaces", "unbind", hosting.room)
    assert "no rooms" in await asyncio.to_thread(shell, "spaces", "rooms")
