"""The client's calls for group-chat rooms bound to spaces (the interaction memory
agent's ``join_room``, ``leave_room``, ``list_rooms`` and ``search_room``)."""

from __future__ import annotations

from spade_memory.client.calls import Calls
from spade_memory.protocol.rooms import (
    DEFAULT_NICK,
    JoinRoom,
    LeaveRoom,
    ListRooms,
    RoomInfo,
    RoomNote,
    SearchRoom,
)
from spade_memory.protocol.services import INTERACTION_MEMORY as NAME


class RoomCalls(Calls):
    """Rooms whose talk the interaction memory agent keeps in a space.

    Every call raises the reply's typed error (``MemoryServiceError``) or
    ``MemoryTimeout``; a degraded client returns an empty answer instead of a timeout.
    """

    async def join_room(
        self, room: str, space: str, *, nick: str = DEFAULT_NICK
    ) -> RoomInfo | None:
        """Bind ``room`` (a bare JID) to ``space`` and have the agent join it as ``nick``
        (admins of the space only, whom the room says are its owner or admin).

        Returns the binding; raises ``BadRequest`` for a room that is not on the agent's
        server or hides its members' real addresses, ``ItemNotFound`` for a room that
        does not exist (or a space the sender is not in), ``NotAuthorized`` for a member
        below admin or a sender the room does not say governs it, ``Conflict`` for a
        room kept in another space the sender is no admin of."""
        op = JoinRoom(room=room, space=space, nick=nick)
        return await self.request(self.jids[NAME], op)

    async def leave_room(self, room: str) -> bool:
        """Unbind ``room`` and have the agent leave it (admins of its space only); its
        notes stay in the space. Returns whether it was bound; raises ``ItemNotFound``
        for a room not bound to a space of the sender's."""
        result = await self.request(self.jids[NAME], LeaveRoom(room=room))
        return False if result is None else result.left

    async def list_rooms(self) -> list[RoomInfo]:
        """The rooms bound to spaces the sender can read."""
        result = await self.request(self.jids[NAME], ListRooms())
        return [] if result is None else result.rooms

    async def search_room(self, room: str, query: str, *, limit: int = 5) -> list[RoomNote]:
        """What was said in ``room`` about ``query``, best first (readers of its space).
        Raises ``ItemNotFound`` for a room not bound to a space of the sender's."""
        result = await self.request(
            self.jids[NAME], SearchRoom(room=room, query=query, limit=limit)
        )
        return [] if result is None else result.notes
