"""The client's space calls: manage spaces, and ``client.space(name)``, a handle that acts
in one space (its memories, its working-memory sessions, its knowledge, its changes)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from spade_memory.client.calls import Calls
from spade_memory.protocol.memories import Change, ChangeList, ChangesSince
from spade_memory.protocol.services import BASE_MEMORY
from spade_memory.protocol.space_names import Role
from spade_memory.protocol.spaces import (
    CreateSpace,
    DecideProposal,
    DeleteSpace,
    Govern,
    Grant,
    LeaveSpace,
    ListProposals,
    ListSpaces,
    ProposalDecided,
    ProposalInfo,
    Revoke,
    SpaceDetails,
    SpaceInfo,
    SpaceSummary,
    Subscribe,
    Unsubscribe,
)

if TYPE_CHECKING:
    from spade_memory.client.changes import ChangeRouter, SpaceChanges


class SpaceCalls(Calls):
    """Spaces at the base memory agent: create, grant, revoke, leave, list, describe,
    delete, follow their changes, and govern them (a writer's store, update and delete
    then raise ``PendingApproval`` and wait for an admin's ``decide_proposal``).

    Every call raises the reply's typed error (``MemoryServiceError``): ``ItemNotFound``
    for a space the sender is not a member of, ``NotAuthorized`` when its role does not
    allow the call, ``Conflict`` for a name someone else took; or ``MemoryTimeout``.
    """

    _change_router: ChangeRouter | None = None
    _followers: set[asyncio.Task[None]] | None = None

    @property
    def _base(self) -> str:
        return self.jids[BASE_MEMORY]

    async def create_space(
        self, name: str, description: str | None = None, governed: bool = False
    ) -> SpaceDetails | None:
        """A new space owned by the sender (its own space of that name if it has one, as
        it is); ``governed``: its writers' writes wait for an admin's approval."""
        op = CreateSpace(name=name, description=description, governed=governed)
        return await self.request(self._base, op)

    async def govern(self, space: str, governed: bool = True) -> SpaceDetails | None:
        """Make the space's writers' stores, updates and deletes wait for an admin's
        approval (``governed`` False: stop; what waits stays to be decided). Admins only."""
        return await self.request(self._base, Govern(space=space, governed=governed))

    async def list_proposals(self, space: str) -> list[ProposalInfo]:
        """The space's pending proposals, oldest first: all of them for an admin, the
        sender's own otherwise."""
        result = await self.request(self._base, ListProposals(space=space))
        return [] if result is None else list(result.proposals)

    async def decide_proposal(
        self, space: str, proposal: str, approve: bool, reason: str | None = None
    ) -> ProposalDecided | None:
        """Approve (the write is applied as its proposer's own) or reject a proposal
        (admins only); its proposer is told. Returns the decided proposal and the write's
        result; raises ``Conflict`` when it was decided or expired before."""
        op = DecideProposal(space=space, proposal=proposal, approve=approve, reason=reason)
        return await self.request(self._base, op)

    async def grant(self, space: str, member: str, role: Role) -> SpaceDetails | None:
        """Give ``member`` (bare JID or ``*@domain``) ``reader``, ``writer`` or ``admin``."""
        return await self.request(self._base, Grant(space=space, member=member, role=role))

    async def revoke(self, space: str, member: str) -> SpaceDetails | None:
        """Take ``member``'s role away; it is refused on its next request."""
        return await self.request(self._base, Revoke(space=space, member=member))

    async def leave_space(self, space: str) -> bool:
        """Give up the sender's membership; True when done."""
        return await self.request(self._base, LeaveSpace(space=space)) is not None

    async def list_spaces(self) -> list[SpaceSummary]:
        """The spaces the sender belongs to, with its role in each."""
        result = await self.request(self._base, ListSpaces())
        return [] if result is None else list(result.spaces)

    async def space_info(self, space: str) -> SpaceDetails | None:
        """Members, counts and quota of a space the sender belongs to."""
        return await self.request(self._base, SpaceInfo(space=space))

    async def delete_space(self, space: str) -> bool:
        """Delete a space the sender owns, and every memory in it; True when done."""
        return await self.request(self._base, DeleteSpace(space=space)) is not None

    async def subscribe(self, space: str) -> int:
        """Be sent the space's change notices; returns the cursor they follow (see
        ``changes`` for a stream that handles them)."""
        result = await self.request(self._base, Subscribe(space=space))
        return 0 if result is None else int(result.cursor)

    async def unsubscribe(self, space: str) -> bool:
        """Stop the space's change notices."""
        return await self.request(self._base, Unsubscribe(space=space)) is not None

    async def changes_since(self, space: str, after: int = 0, limit: int = 500) -> ChangeList:
        """The space's committed changes after the cursor ``after``, oldest first."""
        result = await self.request(self._base, ChangesSince(space=space, after=after, limit=limit))
        return ChangeList() if result is None else result

    def changes(self, space: str, after: int | None = None) -> SpaceChanges:
        """An async iterator of the space's changes as they are committed (from the cursor
        ``after`` when given, catching up first); ``aclose`` it to unsubscribe."""
        # SPADE's, imported only here: a client that never follows loads no SPADE
        from spade_memory.client.changes import ChangeRouter, SpaceChanges
        from spade_memory.client.xmpp_transport import XmppTransport
        from spade_memory.xmpp import wire
        from spade_memory.xmpp.notices import EVENTS_ONTOLOGY

        if self._change_router is None:
            transport = self.transport
            if not isinstance(transport, XmppTransport):
                raise TypeError("change notices come over XMPP: this client has no agent")
            agents = transport.agents(self.jids[BASE_MEMORY])
            self._change_router = ChangeRouter([wire.bare(jid) for jid in agents])
            transport.agent.add_behaviour(
                self._change_router, wire.notice_template(EVENTS_ONTOLOGY)
            )
        return SpaceChanges(self, self._change_router, space, after)

    async def on_change(
        self,
        space: str,
        callback: Callable[[Change], Awaitable[None] | None],
        after: int | None = None,
    ) -> asyncio.Task[None]:
        """Call ``callback`` with each change of the space committed after this returns
        (or after the cursor ``after``). It returns once the base memory agent has
        acknowledged the subscription, so a store made right after the call is heard:
        the task that calls ``callback``; cancel it to stop (it unsubscribes as it ends,
        awaited or not, and at the latest when the agent stops: ``stop_following``).

        Raises the subscription's typed error (``ItemNotFound`` for a space the sender is
        not a member of).
        """
        stream = self.changes(space, after)
        try:
            await stream.start()
        except BaseException:
            await stream.aclose()
            raise
        from spade_memory.client.changes import follow

        follower = asyncio.create_task(follow(stream, callback))
        if self._followers is None:
            self._followers = set()
        self._followers.add(follower)
        follower.add_done_callback(self._followers.discard)
        # let it reach its ``try``: a task cancelled before its first step never runs its
        # ``finally``, and the subscription would outlive it
        await asyncio.sleep(0)
        return follower

    async def stop_following(self, timeout: float = 5.0) -> None:
        """Cancel every ``on_change`` follower of this client and wait (up to ``timeout``
        seconds) while each unsubscribes: an agent that stops calls it first, while it
        can still send."""
        followers = list(self._followers or ())
        for follower in followers:
            follower.cancel()
        if followers:
            await asyncio.wait(followers, timeout=timeout)
