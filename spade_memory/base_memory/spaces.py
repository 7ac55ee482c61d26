"""The space ops as the base memory agent applies them: the directory's changes, checked
by the sender's role, and a deleted space's memories purged from the long-term store.

Roles: any member reads a space's description (``space_info``), subscribes and lists its
own proposals; admins (and the owner) grant and revoke, govern the space and decide its
proposals (``governance``); only the owner deletes. A space the sender is not a member of
answers ``item-not-found``, as one that does not exist.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from spade_memory.base_memory.governance import Governance
from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.protocol.errors import BadRequest, ItemNotFound, NotAuthorized
from spade_memory.protocol.ops import Op, Record
from spade_memory.protocol.space_names import is_domain_member, rank
from spade_memory.protocol.spaces import (
    CreateSpace,
    DecideProposal,
    DeleteSpace,
    Govern,
    Grant,
    LeaveSpace,
    ListProposals,
    ListSpaces,
    Membership,
    Revoke,
    SpaceDetails,
    SpaceDone,
    SpaceInfo,
    SpaceList,
    SpaceSummary,
    Subscribe,
    Subscribed,
    Unsubscribe,
)
from spade_memory.serving.agent import reply_address
from spade_memory.spaces.directory import Space, SpaceDirectory
from spade_memory.spaces.gate import Gate


class SpaceOps:
    """Applies the space ops of one sender at a time (outside the store's transactions:
    the directory is a file of its own)."""

    def __init__(
        self, directory: SpaceDirectory, store: LongTermStore, governance: Governance
    ) -> None:
        self.directory = directory
        self.store = store
        self.governance = governance
        self.gate = Gate(directory)

    async def apply(self, sender: str, op: Op[Any]) -> Record:
        """The op's result; raises its typed error."""
        if isinstance(op, CreateSpace):
            space = await self.directory.create(op.name, sender, op.description, op.governed)
            return await self.details(space, "owner")
        if isinstance(op, ListSpaces):
            return SpaceList(
                spaces=[
                    SpaceSummary(
                        name=s.name, owner=s.owner, role=role, description=s.description,
                        governed=s.governed,
                    )
                    for s, role in await self.directory.spaces_of(sender)
                ]
            )  # fmt: skip
        if isinstance(op, ListProposals):
            return await self.governance.pending(sender, op)
        if isinstance(op, DecideProposal):
            return await self.governance.decide(sender, op)
        space, role = await self.gate.membership(sender, op.space)  # type: ignore[attr-defined]
        if isinstance(op, SpaceInfo):
            return await self.details(space, role)
        if isinstance(op, Subscribe):
            await self.directory.subscribe(space, sender, reply_address.get() or sender)
            cursor = await self.store.newest_event(space.id)
            return Subscribed(space=space.name, cursor=cursor)
        if isinstance(op, Unsubscribe):
            await self.directory.unsubscribe(space, sender)
            return SpaceDone(space=space.name)
        if isinstance(op, LeaveSpace):
            return await self._leave(space, role, sender)
        if isinstance(op, DeleteSpace):
            if role != "owner":
                raise NotAuthorized(f"only the owner of {space.name!r} may delete it")
            await self.store.purge_space(space.id)
            await self.directory.delete(space.id)
            return SpaceDone(space=space.name)
        if rank(role) < rank("admin"):
            raise NotAuthorized(
                f"only admins of {space.name!r} may grant and revoke roles and govern it"
            )
        if isinstance(op, Govern):
            await self.directory.set_governed(space.id, op.governed)
            space = await self.directory.find(space.name) or space
        elif isinstance(op, Grant):
            if op.member == space.owner:
                raise BadRequest(f"{op.member} owns {space.name!r}; its role cannot change")
            await self.directory.grant(space, op.member, op.role, sender)
        elif isinstance(op, Revoke):
            if op.member == space.owner:
                raise BadRequest(f"{op.member} owns {space.name!r} and cannot be revoked")
            if not await self.directory.revoke(space, op.member):
                raise ItemNotFound(f"{op.member} has no role in {space.name!r}")
        return await self.details(space, role)

    async def _leave(self, space: Space, role: str, sender: str) -> SpaceDone:
        if role == "owner":
            raise BadRequest(f"the owner cannot leave {space.name!r}; delete it instead")
        if not await self.directory.revoke(space, sender):
            granted = [m for m, _ in await self.directory.members(space) if is_domain_member(m)]
            raise BadRequest(
                f"{sender} is a member of {space.name!r} through {', '.join(granted)};"
                " an admin must revoke that grant"
            )
        return SpaceDone(space=space.name)

    async def details(self, space: Space, role: str) -> SpaceDetails:
        """What a member sees of ``space``."""
        limits = self.store.limits
        memories, size = await self.store.usage(f"space:{space.id}")
        return SpaceDetails(
            name=space.name,
            owner=space.owner,
            description=space.description,
            created_at=datetime.fromtimestamp(space.created_at, tz=timezone.utc),
            role=role,
            members=[Membership(member=m, role=r) for m, r in await self.directory.members(space)],
            memories=memories,
            bytes=size,
            max_memories=space.max_memories or limits.max_memories_per_space,
            max_bytes=space.max_bytes or limits.max_bytes_per_space,
            subscribers=len(await self.directory.subscribers(space.id)),
            governed=space.governed,
            pending=await self.directory.proposals.count_pending(space.id),
        )
