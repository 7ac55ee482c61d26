"""Group chats (XEP-0045): the interaction memory agent's ops for rooms bound to spaces.

An admin of a space binds a multi-user chat room to it (``join_room``): the agent joins
the room, records what is said there as the notes of the conversation ``room:ROOM`` of
the space, grants the room's members with real addresses ``reader`` of the space (its
owners ``admin``), and answers a question addressed to its nickname from those notes.
Only a room that shows its members' real addresses (non-anonymous) can be bound: in any
other, who said what would be a nickname's word.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import AfterValidator, Field

from spade_memory.protocol.ops import Op, Record
from spade_memory.protocol.space_names import BARE_JID
from spade_memory.protocol.spaces import SharedSpace

DEFAULT_NICK = "memory"
"""The nickname the agent takes in a room unless the binding names another."""
ROOM_CONVERSATION = "room:"
"""Prefix of the conversation id that keeps a room's notes (``room:ROOM``)."""


def _room(address: str) -> str:
    folded = address.casefold()
    if BARE_JID.fullmatch(folded):
        return folded
    raise ValueError("a room is the bare JID of a multi-user chat room (name@service)")


RoomAddress = Annotated[str, Field(min_length=3, max_length=520), AfterValidator(_room)]
"""A room's bare JID (case-folded)."""
Nick = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[^\s/@:,][^/@:,]*$")]
"""The agent's nickname in a room: no ``/``, ``@``, ``:`` or ``,`` (its address form)."""


class RoomInfo(Record):
    """One bound room: the space keeping its notes, the agent's nickname, whether the
    agent is in it now."""

    room: str
    space: str
    nick: str
    bound_by: str
    present: bool


class RoomList(Record):
    """Result of ``list_rooms``: the rooms bound to spaces the sender can read."""

    rooms: list[RoomInfo]


class RoomLeft(Record):
    """Result of ``leave_room``: whether the room was bound."""

    left: bool


class RoomNote(Record):
    """One thing said in a room: when, by whom (the real bare JID the room showed, and
    the nickname), and what."""

    said_at: str
    author: str
    nick: str
    text: str


class RoomNotes(Record):
    """Result of ``search_room``: the room's notes that best answer the query, best
    first."""

    room: str
    notes: list[RoomNote]


class JoinRoom(Op[RoomInfo]):
    """Bind a room to a space and join it (admins of the space only, whom the room says
    are its owner or admin). The room must exist and be non-anonymous; the agent joins
    it again after every restart."""

    op: Literal["join_room"] = "join_room"
    room: RoomAddress
    space: SharedSpace
    nick: Nick = DEFAULT_NICK


class LeaveRoom(Op[RoomLeft]):
    """Unbind a room and leave it (admins of its space only); its notes stay in the
    space."""

    op: Literal["leave_room"] = "leave_room"
    room: RoomAddress
    in_a_space: ClassVar[bool] = True


class ListRooms(Op[RoomList]):
    """The rooms bound to the spaces the sender can read."""

    op: Literal["list_rooms"] = "list_rooms"
    reads_only: ClassVar[bool] = True


class SearchRoom(Op[RoomNotes]):
    """What was said in a bound room about ``query`` (readers of its space)."""

    op: Literal["search_room"] = "search_room"
    reads_only: ClassVar[bool] = True
    room: RoomAddress
    query: str = Field(min_length=1, max_length=1000)
    limit: int = Field(default=5, ge=1, le=50)


RoomOp = JoinRoom | LeaveRoom | ListRooms | SearchRoom
"""The interaction memory agent's ops for rooms."""
