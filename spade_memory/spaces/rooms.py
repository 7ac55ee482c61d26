"""Group-chat rooms bound to spaces, kept in the directory of spaces: which interaction
memory agent keeps which room's notes in which space, so the binding survives restarts
and goes with its space (the agent leaves a room whose binding is gone)."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass

from spade_memory.storage.connection import Database, Transacting
from spade_memory.storage.statements import placeholders

_COLUMNS = "room, space_id, agent, nick, bound_by, bound_at"


@dataclass(frozen=True)
class RoomBinding:
    """One room bound to a space."""

    room: str
    """The room's bare JID."""
    space_id: str
    agent: str
    """The interaction memory agent (bare JID) that joins it."""
    nick: str
    bound_by: str
    """The admin of the space who bound it."""
    bound_at: float

    @property
    def grantor(self) -> str:
        """What the directory's grants made because of the room name as their grantor."""
        return f"room:{self.room}"


class RoomBindings:
    """The rooms table of the directory of spaces (both engines)."""

    def __init__(
        self, tx: Transacting, write: Callable[[], AbstractAsyncContextManager[Database]]
    ) -> None:
        self._tx = tx
        self._write = write

    async def bind(self, room: str, space_id: str, agent: str, nick: str, by: str) -> RoomBinding:
        """Bind ``room`` to the space (replacing the binding it had).

        Returns the binding; raises the directory's typed failure on a fault."""
        binding = RoomBinding(room, space_id, agent, nick, by, time.time())
        async with self._write() as db:
            await db.execute(
                f"INSERT INTO rooms ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (room) DO UPDATE SET space_id = excluded.space_id,"
                " agent = excluded.agent, nick = excluded.nick, bound_by = excluded.bound_by,"
                " bound_at = excluded.bound_at",
                (room, space_id, agent, nick, by, binding.bound_at),
            )
        return binding

    async def unbind(self, room: str) -> bool:
        """Forget the room's binding; False if it had none."""
        async with self._write() as db:
            gone = await db.execute_fetchall(
                "DELETE FROM rooms WHERE room = ? RETURNING room", (room,)
            )
        return bool(list(gone))

    async def get(self, room: str) -> RoomBinding | None:
        """The room's binding, if it has one."""
        rows = await self._tx.read(f"SELECT {_COLUMNS} FROM rooms WHERE room = ?", (room,))
        return next((_binding(row) for row in rows), None)

    async def of_agent(self, agent: str) -> list[RoomBinding]:
        """The rooms ``agent`` keeps, by room."""
        rows = await self._tx.read(
            f"SELECT {_COLUMNS} FROM rooms WHERE agent = ? ORDER BY room", (agent,)
        )
        return [_binding(row) for row in rows]

    async def of_spaces(self, space_ids: list[str]) -> list[RoomBinding]:
        """The rooms bound to any of these spaces, by room."""
        if not space_ids:
            return []
        marks = placeholders(space_ids)
        rows = await self._tx.read(
            f"SELECT {_COLUMNS} FROM rooms WHERE space_id IN ({marks}) ORDER BY room",
            tuple(space_ids),
        )
        return [_binding(row) for row in rows]


def _binding(row: tuple[object, ...]) -> RoomBinding:
    room, space_id, agent, nick, by, at = row
    return RoomBinding(str(room), str(space_id), str(agent), str(nick), str(by), float(at))  # type: ignore[arg-type]
