"""Who may use which space: the one check every op of every memory service goes through.

An op names where it acts in its ``space`` field and what it asks there in its
``need`` (``read`` or ``write``). ``Gate.places`` turns that into the places the
store acts on, having checked the sender's role: a space the sender may not read
answers ``item-not-found``, exactly as one that does not exist; a member whose
role is too small is ``not-authorized``. Nothing in the body decides: only the
authenticated sender and the directory.

In a governed space a writer's write waits for an admin: only a gate that ``proposes``
(the base memory agent's, which keeps such writes as proposals) lets it through, marked
``governed``; every other refuses it with ``not-authorized``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spade_memory.protocol.errors import ItemNotFound, MemoryServiceError, NotAuthorized
from spade_memory.protocol.ops import Op, Outcome, Place, Request
from spade_memory.protocol.space_names import NEEDED, rank
from spade_memory.spaces import EVERY, PERSONAL
from spade_memory.spaces.directory import Space, SpaceDirectory


class Gate:
    """Resolves the spaces an op names into checked ``Place``s (``directory`` None:
    spaces are off and only personal spaces exist; ``proposes``: a writer's write in a
    governed space passes, for the caller to keep as a proposal)."""

    def __init__(self, directory: SpaceDirectory | None, proposes: bool = False) -> None:
        self.directory = directory
        self.proposes = proposes

    async def places(self, sender: str, op: Op[Any]) -> tuple[Place, ...]:
        """Where ``op`` of ``sender`` acts.

        Returns the places, the sender's personal space when the op names none;
        raises ``ItemNotFound`` for a space the sender may not read (or that does
        not exist) and ``NotAuthorized`` when its role does not allow the op.
        """
        need = type(op).need
        selection = getattr(op, "space", None) if need is not None else None
        if selection is None or selection == PERSONAL:
            return (Place(sender),)
        assert need is not None
        if selection == EVERY:
            return (Place(sender), *await self.readable(sender))
        names = [selection] if isinstance(selection, str) else list(dict.fromkeys(selection))
        return tuple([await self.place(sender, name, need) for name in names])

    async def place(self, sender: str, name: str, need: str = "read") -> Place:
        """One named space as ``sender`` may use it (see ``places`` for what it raises)."""
        if name == PERSONAL:
            return Place(sender)
        space, role = await self.membership(sender, name)
        if rank(role) < NEEDED[need]:  # type: ignore[index]
            raise NotAuthorized(f"a {role} of {name!r} may only read it")
        if need == "write" and space.governed and role == "writer" and not self.proposes:
            raise NotAuthorized(
                f"{name!r} is governed: a writer's writes there wait for an admin, and only"
                " the base memory agent takes them as proposals"
            )
        return as_place(space, role)

    async def membership(self, sender: str, name: str) -> tuple[Space, str]:
        """The space called ``name`` and ``sender``'s role in it.

        Raises ``ItemNotFound`` when there is none or the sender is not a member.
        """
        space = None if self.directory is None else await self.directory.find(name)
        role = None if space is None else await self.directory.role_of(space, sender)  # type: ignore[union-attr]
        if space is None or role is None:
            raise ItemNotFound(f"no space {name!r}")
        return space, role

    async def readable(self, sender: str) -> list[Place]:
        """Every space ``sender`` may read (not its personal one), by name."""
        if self.directory is None:
            return []
        return [as_place(space, role) for space, role in await self.directory.spaces_of(sender)]

    async def shared_sessions(self, sender: str) -> dict[tuple[str, str], str]:
        """(owner, session) of every beads session shared with ``sender``, with its role."""
        if self.directory is None:
            return {}
        return {(s.owner, s.session): s.role for s in await self.directory.shared_with(sender)}

    async def scope(
        self, sender: str, requests: Sequence[Request]
    ) -> tuple[dict[int, Outcome], list[Request]]:
        """Each request with its checked places; the ones refused, by index, with the
        typed error to answer them with."""
        refused: dict[int, Outcome] = {}
        allowed: list[Request] = []
        for index, request in enumerate(requests):
            try:
                places = await self.places(sender, request.op)
            except MemoryServiceError as error:
                refused[index] = error
                continue
            allowed.append(Request(request.op, request.id, places))
        return refused, allowed


def as_place(space: Space, role: str) -> Place:
    """A space of the directory as a store sees it."""
    return Place(space.id, space.name, role, space.max_memories, space.max_bytes, space.governed)
