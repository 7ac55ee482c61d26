"""Multi-user chat (XEP-0045) as a memory agent uses it, on slixmpp's ``xep_0045``:
joining a room and learning what the room says of itself and of its occupants.

A room on the agent's own server is believed about its occupants' real addresses (it
is the server that authenticated them); ``trusted_service`` says which rooms those are.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import datetime

from slixmpp import JID, ClientXMPP
from slixmpp.exceptions import IqError, IqTimeout, PresenceError
from slixmpp.stanza import Message, Presence

from spade_memory.protocol.errors import (
    BadRequest,
    FeatureNotImplemented,
    ItemNotFound,
    MemoryTimeout,
    NotAuthorized,
)

JOIN_TIMEOUT = 20.0
"""Seconds a room has to answer a join."""
DISCO_TIMEOUT = 3.0
"""Seconds a server has to say whether it hosts rooms (one that does not may say nothing)."""
MUC_FEATURE = "http://jabber.org/protocol/muc"
NON_ANONYMOUS = 100
"""Status code of a room that shows every occupant's real address to everyone."""
CREATED = 201
"""Status code of a room the join created (it did not exist)."""
NOW_NON_ANONYMOUS, NOW_SEMI_ANONYMOUS = 172, 173
"""Status codes of a configuration change making a room show, or hide, real addresses."""
BANNED = 301
OCCUPANT_ID = "urn:xmpp:occupant-id:0"
GOVERNING = ("owner", "admin")
"""The affiliations of those who govern a room (XEP-0045): only they may bind it."""


@dataclass(frozen=True)
class Occupant:
    """Someone in a room: nickname, real bare JID (empty when the room hides it), and
    affiliation (``owner``, ``admin``, ``member``, ``none``, ``outcast``)."""

    nick: str
    jid: str
    affiliation: str
    left: bool = False
    banned: bool = False
    occupant_id: str = ""
    """The room's stable id of the occupant (XEP-0421), which its messages carry too."""


@dataclass
class Joined:
    """What a join learnt: whether the room shows real addresses to everyone, whether the
    join created it, who is in it, and the history it replayed."""

    non_anonymous: bool
    created: bool
    occupants: list[Occupant] = field(default_factory=list)
    history: list[Message] = field(default_factory=list)


def enable(client: ClientXMPP) -> None:
    """Load slixmpp's multi-user chat plugin on ``client`` (once)."""
    if "xep_0045" not in client.plugin:
        client.register_plugin("xep_0045")


def trusted_service(room: str, own_domain: str) -> bool:
    """Whether ``room`` is on a service of the agent's own server (``own_domain`` or a
    subdomain of it), whose word on real addresses is the server's own."""
    service = str(JID(room).domain)
    return service == own_domain or service.endswith("." + own_domain)


def occupant_of(presence: Presence) -> Occupant:
    """The occupant a room's presence is about."""
    muc = presence["muc"]
    real = muc["jid"]
    codes = muc["status_codes"]
    return Occupant(
        nick=presence["from"].resource,
        jid=str(real.bare) if real else "",
        affiliation=muc["affiliation"] or "none",
        left=presence["type"] == "unavailable",
        banned=BANNED in codes or muc["affiliation"] == "outcast",
        occupant_id=occupant_id_of(presence),
    )


def occupant_id_of(stanza: Message | Presence) -> str:
    """The stable id the room gave the occupant a stanza is from (XEP-0421; a room that
    supports it removes any its occupants write themselves), or empty."""
    found = stanza.xml.find(f"{{{OCCUPANT_ID}}}occupant-id")
    return "" if found is None else str(found.get("id", ""))


async def join(
    client: ClientXMPP, room: str, nick: str, since: datetime | None, timeout: float = JOIN_TIMEOUT
) -> Joined:
    """Join ``room`` as ``nick``, asking for the history said after ``since`` (None: what
    the room replays by default).

    Returns what the join learnt; raises ``FeatureNotImplemented`` when the room's
    server has no group chats, ``NotAuthorized`` when the room refuses the
    agent (members only, banned, a password), ``ItemNotFound`` when there is no such
    service, ``BadRequest`` for another refusal, and ``MemoryTimeout`` when the room
    does not answer in ``timeout`` seconds."""
    await _offers_group_chats(client, str(JID(room).domain))
    plugin = client.plugin["xep_0045"]
    try:
        presence, _subject, occupants, history = await plugin.join_muc_wait(
            JID(room), nick, since=since, timeout=timeout,
            presence_options={"pfrom": client.boundjid},  # how slixmpp matches the answer
        )  # fmt: skip
    except PresenceError as error:
        condition = error.condition
        text = f"{room} refused the join: {condition}"
        if condition in ("registration-required", "forbidden", "not-authorized"):
            raise NotAuthorized(text) from None
        if condition in ("remote-server-not-found", "item-not-found", "service-unavailable"):
            raise ItemNotFound(text) from None
        raise BadRequest(text) from None
    except asyncio.TimeoutError:
        raise MemoryTimeout(f"{room} did not answer a join within {timeout:g} s") from None
    codes = presence["muc"]["status_codes"]
    return Joined(
        non_anonymous=NON_ANONYMOUS in codes,
        created=CREATED in codes,
        occupants=[occupant_of(p) for p in occupants] + [occupant_of(presence)],
        history=list(history),
    )


async def governed_by(
    client: ClientXMPP, room: str, jid: str, occupants: list[Occupant],
    timeout: float = DISCO_TIMEOUT,
) -> bool:  # fmt: skip
    """Whether ``room`` says that ``jid`` (a bare JID) is its owner or admin (see
    ``governs``); False when it says not, or does not answer."""
    return await governs(client, room, jid, occupants, timeout) is True


async def governs(
    client: ClientXMPP, room: str, jid: str, occupants: list[Occupant],
    timeout: float = DISCO_TIMEOUT,
) -> bool | None:  # fmt: skip
    """What ``room`` says of ``jid`` (a bare JID) governing it: in the presence of
    ``jid`` among its ``occupants`` (its affiliation there), or else in its affiliation
    lists, asked of the room (Prosody shows them to the members of a members-only room
    that shows real addresses, and to its admins). True: its owner or admin; False: the
    room says otherwise; None: it does not answer (its lists are not shown to the agent).
    """
    for occupant in occupants:
        if occupant.jid == jid and not occupant.left:
            return occupant.affiliation in GOVERNING
    plugin = client.plugin["xep_0045"]
    for affiliation in GOVERNING:
        try:
            listed = await plugin.get_affiliation_list(JID(room), affiliation, timeout=timeout)
        except (IqError, IqTimeout):
            return None  # the room shows its lists to no one the agent is
        if any(str(JID(entry).bare) == jid for entry in listed):
            return True
    return False


async def _offers_group_chats(client: ClientXMPP, service: str) -> None:
    """Raises ``FeatureNotImplemented`` unless ``service`` says (XEP-0030) it hosts
    multi-user chat rooms (SPADE's embedded server has none, and answers nothing)."""
    try:
        info = await client.plugin["xep_0030"].get_info(jid=service, timeout=DISCO_TIMEOUT)
    except (IqError, IqTimeout):
        info = None
    if info is None or MUC_FEATURE not in info["disco_info"]["features"]:
        raise FeatureNotImplemented(f"the server has no group chats at {service}")


def leave(client: ClientXMPP, room: str, nick: str, why: str = "") -> None:
    """Leave ``room`` (saying ``why`` to its occupants)."""
    client.plugin["xep_0045"].leave_muc(JID(room), nick, why)


def send(client: ClientXMPP, to: str, text: str, kind: str = "groupchat") -> None:
    """Say ``text`` in a room (``groupchat``), or privately to an occupant (``chat``)."""
    client.send_message(mto=JID(to), mbody=text, mtype=kind)
