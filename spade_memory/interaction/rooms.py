"""The interaction memory agent in group chats: it keeps the rooms bound to spaces
(``spaces.rooms``) joined, records what is said in them, and answers what it is asked.

One behaviour does everything a room needs, in the order the room said it: a presence
grants a member's real address ``reader`` of the room's space (a room owner ``admin``;
a passer-by in an open room nothing; a ban takes back what the room granted), a message
becomes a note (``room_notes``; consecutive ones in one transaction), and one addressed
to the agent's nickname (``memory: what did we decide about the deploy?``), or sent to
it privately in the room, is answered from the room's notes. Every ``every`` seconds, and
after every reconnection, it joins the rooms bound to it that it is not in (after a
restart of the agent or of the server) and leaves those no longer bound (their space was
deleted); a join asks the room only for what was said since the newest note.

Only a room on the agent's own server (``xmpp.rooms.trusted_service``) that shows every
occupant's real address can be bound: in any other, who said what, and who may read it,
would be a nickname's word. And only by someone the room says governs it
(``xmpp.rooms.governed_by``): a members-only room keeps the agent as its member after a
binding ends, and its history is not for any space owner who asks.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from dataclasses import dataclass
from datetime import datetime, timezone

from pydantic import TypeAdapter, ValidationError
from slixmpp.jid import InvalidJID
from slixmpp.stanza import Message as Stanza
from slixmpp.stanza import Presence
from spade.behaviour import CyclicBehaviour

from spade_memory.interaction.room_notes import said_at
from spade_memory.interaction.store import InteractionStore
from spade_memory.protocol.errors import (
    BadRequest,
    Conflict,
    ItemNotFound,
    MemoryServiceError,
    NotAuthorized,
)
from spade_memory.protocol.limits import Limits
from spade_memory.protocol.rooms import DEFAULT_NICK, RoomAddress, RoomInfo, RoomNote
from spade_memory.protocol.space_names import rank
from spade_memory.spaces.directory import Space, SpaceDirectory
from spade_memory.spaces.gate import as_place
from spade_memory.spaces.rooms import RoomBinding
from spade_memory.xmpp import rooms as muc
from spade_memory.xmpp import wire

logger = logging.getLogger("spade_memory.interaction.rooms")
CHECK_EVERY_SECONDS = 10.0
"""How often the agent makes the rooms it is in match the rooms bound to it."""
ANSWERED = 3
"""How many notes an answer in a room quotes."""
QUOTED_CHARS = 300
"""How much of a note an answer quotes."""
ROLE_OF_AFFILIATION = {"owner": "admin", "admin": "reader", "member": "reader"}
"""The role in the space of the room's members (XEP-0045 affiliations); an occupant
without one (anyone who walked into an open room) gets none."""
SEMI_ANONYMOUS = (
    "{room} does not show its occupants' real addresses to everyone, so who said what would"
    " be a nickname's word: make it non-anonymous (muc#roomconfig_whois = anyone) and"
    " bind it again"
)
NO_LONGER_GOVERNED = (
    "the room says that who bound it no longer governs it: the binding ends (an owner or"
    " admin of the room binds it again)"
)
NOT_GOVERNED = (
    "{room} does not say that {by} is its owner or admin, and only they may bind it: be in"
    " the room as one while you bind it (or, in a members-only room, be listed as one)"
)


@dataclass(frozen=True)
class Said:
    """A message of a room (or a private message in it) waiting to be handled."""

    room: str
    nick: str
    text: str
    stamp: datetime | None
    """When the room says it was said, for a message it replays (None: live)."""
    private: bool = False
    occupant_id: str = ""


@dataclass(frozen=True)
class Seen:
    """An occupant's presence in a room, waiting to be handled."""

    room: str
    occupant: muc.Occupant


RoomAddressOf: TypeAdapter[str] = TypeAdapter(RoomAddress)
_CHECK = object()
"""Put in the queue to make the behaviour check its rooms at once."""


class KeepRooms(CyclicBehaviour):  # type: ignore[misc]
    """Keeps the agent in its bound rooms, records them and answers in them."""

    def __init__(
        self,
        store: InteractionStore,
        directory: SpaceDirectory,
        limits: Limits,
        every: float = CHECK_EVERY_SECONDS,
    ) -> None:
        super().__init__()
        self.store = store
        self.directory = directory
        self.limits = limits
        self.every = every
        self.events: asyncio.Queue[object] = asyncio.Queue()
        self.present: dict[str, RoomBinding] = {}
        """The rooms the agent is in now, with their bindings."""
        self.bound: set[str] = set()
        """The rooms bound to the agent (as of the last check)."""
        self.occupants: dict[str, dict[str, muc.Occupant]] = {}
        """Who is in each room the agent is in, by nickname."""
        self.known: dict[str, dict[str, str]] = {}
        """The real address of each occupant id (XEP-0421) met in each room."""
        self._next_check = 0.0
        self._full: set[str] = set()
        """Rooms whose space's budget refused a note (said once in the log)."""

    # -- XMPP events (they only queue: the behaviour handles them in order) ------------

    async def on_start(self) -> None:
        client = self.agent.client
        muc.enable(client)
        client.register_plugin("xep_0249")
        self.me = str(self.agent.jid.bare)
        self.domain = str(self.agent.jid.domain)
        client.add_event_handler("groupchat_message", self._heard)
        client.add_event_handler("groupchat_presence", self._seen)
        client.add_event_handler("groupchat_config_status", self._reconfigured)
        client.add_event_handler("groupchat_invite", self._invited_by_room)
        client.add_event_handler("groupchat_direct_invite", self._invited_directly)
        client.add_event_handler("session_start", self._connected)
        client.add_event_handler("disconnected", self._disconnected)

    def kill(self, exit_code: object | None = None) -> None:
        """Kill it, and wake its wait."""
        super().kill(exit_code)
        self.events.put_nowait(None)

    def claims(self, stanza: Stanza) -> bool:
        """Whether ``stanza`` comes from a bound room (an occupant's private message is
        a question here, never a request: a room's address is no one's identity)."""
        room = str(stanza["from"].bare)
        if room not in self.bound:
            return False
        if stanza["type"] == "chat" and stanza["body"] and room in self.present:
            self.events.put_nowait(Said(room, stanza["from"].resource, stanza["body"], None, True))
        return True

    def _heard(self, stanza: Stanza) -> None:
        room = str(stanza["from"].bare)
        if room not in self.present or not stanza["body"]:
            return
        # live: the join's history came before the room was present (``_join``); a
        # ``<delay/>`` an occupant added is its own claim, neither history nor a time
        nick, body = stanza["from"].resource, stanza["body"]
        self.events.put_nowait(Said(room, nick, body, None, False, muc.occupant_id_of(stanza)))

    def _seen(self, presence: Presence) -> None:
        room = str(presence["from"].bare)
        if room in self.present:
            self.events.put_nowait(Seen(room, muc.occupant_of(presence)))

    def _reconfigured(self, stanza: Stanza) -> None:
        room = str(stanza["from"].bare)
        if room in self.present and muc.NOW_SEMI_ANONYMOUS in stanza["muc"]["status_codes"]:
            self.events.put_nowait(("semi-anonymous", room))

    def _invited_by_room(self, stanza: Stanza) -> None:
        room = str(stanza["from"].bare)
        if muc.trusted_service(room, self.domain):  # the inviter is the room's word
            invite = stanza["muc"]["invite"]
            self._invited_to(str(invite["from"]), room, invite["reason"])

    def _invited_directly(self, stanza: Stanza) -> None:
        invite = stanza["groupchat_invite"]  # the inviter: authenticated by its server
        self._invited_to(str(stanza["from"]), str(invite["jid"]), invite["reason"])

    def _invited_to(self, inviter: str, room: str, reason: str) -> None:
        try:
            who, where = wire.bare(inviter), RoomAddressOf.validate_python(wire.bare(room))
        except (InvalidJID, ValidationError):
            logger.info("an invitation to %s from %s ignored: no room", ascii(room), ascii(inviter))
            return
        self.events.put_nowait(("invited", who, where, str(reason or "")))

    def _connected(self, _event: object) -> None:
        self.present.clear()
        self.events.put_nowait(_CHECK)

    def _disconnected(self, _event: object) -> None:
        self.present.clear()

    # -- the behaviour ----------------------------------------------------------------

    async def run(self) -> None:
        wait = max(0.0, self._next_check - time.monotonic())
        first = None
        with contextlib.suppress(asyncio.TimeoutError):
            first = await asyncio.wait_for(self.events.get(), timeout=wait)
        if self.is_killed():
            return
        if first is _CHECK or time.monotonic() >= self._next_check:
            self._next_check = time.monotonic() + self.every
            await self._check()
        events = [first] if first not in (None, _CHECK) else []
        while not self.events.empty():
            event = self.events.get_nowait()
            if event is _CHECK:
                self._next_check = 0.0
            elif event is not None:
                events.append(event)
        try:
            await self._handle(events)
        except Exception:  # a room's fault must not stop the others' recording
            logger.exception("room events not handled")

    async def _check(self) -> None:
        """Join the rooms bound to the agent that it is not in; leave the others."""
        try:
            bindings = {b.room: b for b in await self.directory.rooms.of_agent(self.me)}
        except MemoryServiceError as error:
            logger.warning("rooms not checked: %s", error)
            return
        self.bound = set(bindings)
        for room, binding in list(self.present.items()):
            if bindings.get(room) != binding:
                self._leave(binding, "this room is no longer bound to a space of mine")
        for room, binding in bindings.items():
            if room in self.present:
                continue
            try:
                await self._enter(binding)
            except MemoryServiceError as error:
                logger.warning("%s not joined: %s", room, error.text)
                if isinstance(error, BadRequest | ItemNotFound | NotAuthorized):  # for good
                    await self.directory.rooms.unbind(room)
                    self.bound.discard(room)

    async def _enter(self, binding: RoomBinding, by: str | None = None) -> muc.Joined:
        """Join the bound room, grant its occupants, queue its replayed history; ``by``:
        who binds it now, whom the room must say governs it (None: rejoining a room
        bound before).

        Returns what the join learnt; raises ``ItemNotFound`` when the room does not
        exist (the join created it: it is left at once), ``BadRequest`` when it hides
        real addresses, ``NotAuthorized`` when it does not say ``by`` governs it (left
        before anything of it is kept or granted), and what ``muc.join`` raises."""
        room, client = binding.room, self.agent.client
        since = await self.store.room_last_said(binding.space_id, room)
        joined = await muc.join(client, room, binding.nick, since)
        if joined.created:
            muc.leave(client, room, binding.nick, "I join existing rooms only")
            raise ItemNotFound(f"there is no room {room}")
        if not joined.non_anonymous:
            why = SEMI_ANONYMOUS.format(room=room)
            muc.leave(client, room, binding.nick, why)
            raise BadRequest(why)
        if by is not None and not await muc.governed_by(client, room, by, joined.occupants):
            muc.leave(client, room, binding.nick, "I was asked by someone who does not govern it")
            raise NotAuthorized(NOT_GOVERNED.format(room=room, by=by))
        if (
            by is None
            and await muc.governs(client, room, binding.bound_by, joined.occupants) is False
        ):
            muc.leave(client, room, binding.nick, NO_LONGER_GOVERNED)  # before anything is kept
            raise NotAuthorized(f"{room}: {NO_LONGER_GOVERNED}")
        space = await self.directory.by_id(binding.space_id)
        if space is None:
            muc.leave(client, room, binding.nick)
            raise ItemNotFound(f"the space {room} was bound to is gone")
        self.present[room] = binding
        self.bound.add(room)
        self.occupants[room] = {}
        for occupant in joined.occupants:
            await self._met(space, binding, occupant)
        for message in joined.history:
            delay = message.get_plugin("delay", check=True)
            stamp = delay["stamp"] if delay is not None else None
            nick, body, said_by = (
                message["from"].resource,
                message["body"],
                muc.occupant_id_of(message),
            )
            self.events.put_nowait(Said(room, nick, body, stamp, False, said_by))
        logger.info("joined %s as %s for the space %s", room, binding.nick, space.name)
        return joined

    def _leave(self, binding: RoomBinding, why: str) -> None:
        self.present.pop(binding.room, None)
        self.occupants.pop(binding.room, None)
        self.known.pop(binding.room, None)
        with contextlib.suppress(Exception):  # not connected: it is out of the room anyway
            muc.leave(self.agent.client, binding.room, binding.nick, why)
        logger.info("left %s: %s", binding.room, why)

    # -- binding (the service's ops and invitations) -------------------------------------

    async def bind(self, room: str, space: Space, nick: str, by: str) -> RoomInfo:
        """Bind ``room`` to ``space`` for ``by`` (an admin of it, and an owner or admin of
        the room as the room says) and join it.

        Returns the binding as ``list_rooms`` shows it; raises ``BadRequest`` for a room
        not on this server or hiding real addresses, ``ItemNotFound`` for one that does
        not exist, ``Conflict`` for one kept in a space ``by`` is no admin of,
        ``NotAuthorized`` when the room does not say ``by`` governs it, and what joining
        raises."""
        if not muc.trusted_service(room, self.domain):
            raise BadRequest(
                f"{room} is not on this server ({self.domain}), whose word on who said what"
                " I could trust"
            )
        await self._not_kept_elsewhere(room, space, by)
        earlier = self.present.pop(room, None)
        if earlier is not None:
            self._leave(earlier, "bound again")
        binding = RoomBinding(room, space.id, self.me, nick, by, time.time())
        await self._enter(binding, by)
        binding = await self.directory.rooms.bind(room, space.id, self.me, nick, by)
        self.present[room] = binding
        return RoomInfo(room=room, space=space.name, nick=nick, bound_by=by, present=True)

    async def _not_kept_elsewhere(self, room: str, space: Space, by: str) -> None:
        """Raises ``Conflict`` when ``room`` is bound to another space of which ``by`` is
        no admin: binding it again would send that space's talk to ``space``."""
        earlier = await self.directory.rooms.get(room)
        if earlier is None or earlier.space_id == space.id:
            return
        other = await self.directory.by_id(earlier.space_id)
        role = None if other is None else await self.directory.role_of(other, by)
        if other is not None and (role is None or rank(role) < rank("admin")):
            raise Conflict(f"{room} is kept in another space: an admin of it unbinds it first")

    async def unbind(self, room: str) -> bool:
        """Unbind ``room`` and leave it; False if it was not bound."""
        binding = self.present.get(room)
        if binding is not None:
            self._leave(binding, "unbound by an admin of its space")
        self.bound.discard(room)
        return await self.directory.rooms.unbind(room)

    async def _invited(self, inviter: str, room: str, reason: str) -> None:
        """An invitation whose reason names a space: bound if the inviter is an admin of
        it; the inviter is told either way."""
        name = reason.strip().removeprefix("space:").strip()
        try:
            space = await self.directory.find(name) if name else None
            role = None if space is None else await self.directory.role_of(space, inviter)
            if space is None or role is None:
                raise ItemNotFound(
                    f"no space {name!r}: name one of yours as the invitation's reason"
                )
            if rank(role) < rank("admin"):
                raise NotAuthorized(f"only admins of {name!r} may bind a room to it")
            await self.bind(room, space, DEFAULT_NICK, inviter)
            text = f"I joined {room}: what is said there is kept in the space {name!r}."
        except MemoryServiceError as error:
            text = f"I did not join {room}: {error.text}"
        muc.send(self.agent.client, inviter, text, "chat")

    # -- handling what rooms said ------------------------------------------------------

    async def _handle(self, events: list[object]) -> None:
        notes: list[tuple[str, RoomNote, bool]] = []
        for event in events:
            if isinstance(event, Said) and not event.private and not self._asks(event):
                if self._kept(event):
                    notes.append((event.room, self._note(event), event.stamp is not None))
                continue
            await self._record(notes)
            notes = []
            if isinstance(event, Said) and (event.private or event.stamp is None):
                await self._answer(event)  # a replayed question was asked while away
            elif isinstance(event, Seen):
                await self._occupant(event)
            elif isinstance(event, tuple) and event[0] == "invited":
                await self._invited(*event[1:])
            elif isinstance(event, tuple) and event[0] == "semi-anonymous":
                binding = self.present.get(event[1])
                if binding is not None:
                    self._leave(binding, SEMI_ANONYMOUS.format(room=event[1]))
                    await self.directory.rooms.unbind(event[1])
        await self._record(notes)

    def _nick(self, room: str) -> str:
        binding = self.present.get(room)
        return binding.nick if binding is not None else ""

    def _asks(self, said: Said) -> bool:
        return question_in(said.text, self._nick(said.room)) is not None

    def _kept(self, said: Said) -> bool:
        """Whether a room message is recorded: not the agent's own, and not over the
        deployment's size of a text (said once in the log)."""
        if said.nick == self._nick(said.room):
            return False
        if len(said.text) > self.limits.max_content_chars:
            logger.info(
                "a message of %d characters in %s not kept (over %d)",
                len(said.text), said.room, self.limits.max_content_chars,
            )  # fmt: skip
            return False
        return True

    def _note(self, said: Said) -> RoomNote:
        """The note of a message: its author is the real address the room showed for
        its sender, through the room's id of the occupant when the room gives one (a
        replayed message's nickname may be someone else's by now)."""
        if said.occupant_id:
            author = self.known.get(said.room, {}).get(said.occupant_id, "")
        else:
            occupant = self.occupants.get(said.room, {}).get(said.nick)
            author = occupant.jid if occupant is not None and said.stamp is None else ""
        moment = said.stamp or datetime.now(timezone.utc)
        return RoomNote(said_at=said_at(moment), author=author, nick=said.nick, text=said.text)

    async def _record(self, notes: list[tuple[str, RoomNote, bool]]) -> None:
        by_room: dict[str, list[tuple[RoomNote, bool]]] = {}
        for room, note, replayed in notes:
            by_room.setdefault(room, []).append((note, replayed))
        for room, said in by_room.items():
            binding = self.present.get(room)
            space = None if binding is None else await self._space(binding)
            if binding is None or space is None:
                continue
            try:
                await self.store.record_room_notes(as_place(space, "owner"), room, said)
                self._full.discard(room)
            except MemoryServiceError as error:
                if room not in self._full:
                    logger.warning("notes of %s not kept: %s", room, error.text)
                    self._full.add(room)

    async def _space(self, binding: RoomBinding) -> Space | None:
        space = await self.directory.by_id(binding.space_id)
        if space is None:
            self._leave(binding, "the space this room was bound to was deleted")
        return space

    async def _answer(self, said: Said) -> None:
        """Answer a question asked in the room (to everyone) or privately (to its
        asker), from the room's notes, if the asker may read them."""
        binding = self.present.get(said.room)
        if binding is None:
            return
        question = said.text if said.private else question_in(said.text, binding.nick)
        occupant = self.occupants.get(said.room, {}).get(said.nick)
        space = await self._space(binding)
        if not question or space is None:
            return
        role = (
            None
            if occupant is None or not occupant.jid
            else await self.directory.role_of(space, occupant.jid)
        )
        if role is None:
            text = "You may not read this room's memory: ask an admin of its space."
        else:
            found = await self.store.search_room(space.id, said.room, question, ANSWERED)
            text = answer_text(found)
        if said.private:
            muc.send(self.agent.client, f"{said.room}/{said.nick}", text, "chat")
        else:
            muc.send(self.agent.client, said.room, f"{said.nick}: {text}")

    async def _occupant(self, seen: Seen) -> None:
        binding = self.present.get(seen.room)
        if binding is None:
            return
        who = seen.occupant
        if who.jid == binding.bound_by and who.affiliation not in muc.GOVERNING:
            self._leave(binding, NO_LONGER_GOVERNED)  # the room says its binder is demoted
            self.bound.discard(seen.room)
            await self.directory.rooms.unbind(seen.room)
            return
        space = await self._space(binding)
        if space is not None:
            await self._met(space, binding, seen.occupant)

    async def _met(self, space: Space, binding: RoomBinding, occupant: muc.Occupant) -> None:
        """Track ``occupant`` and grant (or, banned, revoke) its role in the space."""
        present = self.occupants.setdefault(binding.room, {})
        if occupant.occupant_id and occupant.jid:
            self.known.setdefault(binding.room, {})[occupant.occupant_id] = occupant.jid
        if occupant.left:
            present.pop(occupant.nick, None)
        else:
            present[occupant.nick] = occupant
        jid = occupant.jid
        if not jid or jid == self.me:
            return
        if occupant.banned:
            await self.directory.revoke_granted_by(space, jid, binding.grantor)
            return
        wanted = ROLE_OF_AFFILIATION.get(occupant.affiliation)
        if occupant.left or wanted is None:  # a passer-by in an open room reads nothing
            return
        role = await self.directory.role_of(space, jid)
        if role is None or rank(role) < rank(wanted):
            await self.directory.grant(space, jid, wanted, binding.grantor)


def question_in(text: str, nick: str) -> str | None:
    """The question of a room message addressed to ``nick`` (``nick: …``, ``nick, …``
    or ``@nick …``), or None."""
    if not nick:
        return None
    name = re.escape(nick)
    addressed = rf"\s*(?:@{name}(?:\s*[:,]|\s)|{name}\s*[:,])\s*(.+)"
    found = re.match(addressed, text, re.IGNORECASE | re.DOTALL)
    return None if found is None else found.group(1).strip() or None


def answer_text(notes: list[RoomNote]) -> str:
    """What the agent says back: the notes that best answer, or that there are none."""
    if not notes:
        return "I find nothing about that in this room's notes."
    lines = [
        f"- {note.said_at[:16].replace('T', ' ')} {note.nick}: {_quoted(note.text)}"
        for note in notes
    ]
    return "From this room's notes:\n" + "\n".join(lines)


def _quoted(text: str) -> str:
    return text if len(text) <= QUOTED_CHARS else text[: QUOTED_CHARS - 1] + "…"
