"""People in a multi-user chat room (XEP-0045) on the test Prosody, through slixmpp's
``xep_0045`` on a client agent: what the room tests do by hand."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable

from slixmpp import JID
from slixmpp.stanza import Message

from tests.support.harness import ClientAgent

SAID_WITHIN = 30.0
"""Seconds a room message or an answer may take on a loaded machine (a wait, not a
timing)."""


def room_name(prefix: str) -> str:
    """A fresh room on the test Prosody's group-chat service."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}@conference.localhost"


class InRoom:
    """``agent`` in ``room`` as ``nick``: what it hears there, what it says."""

    def __init__(self, agent: ClientAgent, room: str, nick: str) -> None:
        self.agent, self.room, self.nick = agent, room, nick
        self.heard: asyncio.Queue[Message] = asyncio.Queue()
        self.private: asyncio.Queue[Message] = asyncio.Queue()
        client = agent.client
        if "xep_0045" not in client.plugin:
            client.register_plugin("xep_0045")
        self.muc = client.plugin["xep_0045"]
        client.add_event_handler(f"muc::{room}::message", self.heard.put_nowait)
        client.add_event_handler("message", self._private)

    def _private(self, stanza: Message) -> None:
        if stanza["type"] == "chat" and str(stanza["from"].bare) == self.room:
            self.private.put_nowait(stanza)

    async def join(self, timeout: float = 20) -> None:
        await self.muc.join_muc_wait(
            JID(self.room), self.nick, maxstanzas=0, timeout=timeout,
            presence_options={"pfrom": self.agent.client.boundjid},
        )  # fmt: skip

    async def configure(
        self, *, whois: str = "anyone", persistent: bool = True, members_only: bool = False
    ) -> None:
        """As the room's owner: who sees real addresses, whether it outlives its last
        occupant (and a restart of the server), whether only its members may enter."""
        form = self.agent.client.plugin["xep_0004"].make_form(ftype="submit")
        form.add_field(var="FORM_TYPE", value="http://jabber.org/protocol/muc#roomconfig")
        form.add_field(var="muc#roomconfig_whois", value=whois)
        form.add_field(var="muc#roomconfig_persistentroom", value="1" if persistent else "0")
        form.add_field(var="muc#roomconfig_membersonly", value="1" if members_only else "0")
        await self.muc.set_room_config(JID(self.room), form)

    def say(self, text: str) -> None:
        self.agent.client.send_message(mto=JID(self.room), mbody=text, mtype="groupchat")

    async def said(self, text: str) -> None:
        """Say ``text`` and wait until the room has it (its echo comes back)."""
        self.say(text)
        while True:
            message = await asyncio.wait_for(self.heard.get(), SAID_WITHIN)
            if message["from"].resource == self.nick and message["body"] == text:
                return

    def say_privately(self, nick: str, text: str) -> None:
        self.agent.client.send_message(mto=JID(f"{self.room}/{nick}"), mbody=text, mtype="chat")

    async def answer_from(self, nick: str) -> str:
        """The next thing ``nick`` says in the room."""
        while True:
            message = await asyncio.wait_for(self.heard.get(), SAID_WITHIN)
            if message["from"].resource == nick and not message.get_plugin("delay", check=True):
                return str(message["body"])

    def leave(self) -> None:
        self.muc.leave_muc(JID(self.room), self.nick)


async def govern(room: InRoom, agent: ClientAgent, nick: str = "governor") -> InRoom:
    """As the room's owner, make ``agent`` an admin of it, and bring it in: the room then
    says, in its presence, that ``agent`` governs it (and may bind it)."""
    await room.muc.set_affiliation(JID(room.room), "admin", jid=agent.jid.bare)
    governor = InRoom(agent, room.room, nick)
    await governor.join()
    return governor


async def occupants_of(room: InRoom) -> list[str]:
    """The nicknames in the room, as its presences told ``room``'s agent."""
    return list(room.muc.get_roster(JID(room.room)) or [])


async def eventually(check: Callable[[], Awaitable[bool]], what: str) -> None:
    """Wait until ``check`` holds (the agent records in the background)."""
    deadline = time.monotonic() + SAID_WITHIN
    while not await check():
        assert time.monotonic() < deadline, f"not within {SAID_WITHIN:g} s: {what}"
        await asyncio.sleep(0.2)


async def members_only_room(host: ClientAgent, name: str, admin: ClientAgent, agent: str) -> InRoom:
    """A members-only room that ``host`` makes, owns and stays in, with the memory
    ``agent`` (a bare JID) a member and ``admin`` an admin who is not in it."""
    room = InRoom(host, room_name(name), "host")
    await room.join()
    await room.configure(members_only=True)
    await room.muc.set_affiliation(JID(room.room), "member", jid=JID(agent))
    await room.muc.set_affiliation(JID(room.room), "admin", jid=admin.jid.bare)
    return room
