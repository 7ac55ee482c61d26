"""Governed spaces as the base memory agent serves them: a writer's store, update or
delete there is kept as a proposal (``spaces.proposals``) and answered
``pending-approval``; the space's owner and admins are told by a chat message any XMPP
client shows, holding the two ops that decide it; an admin's approval applies the write
as the proposer's own (its role checked again), and the proposer hears every outcome.

Writes that cannot wait as one proposal (a supersede, a forget by filter, a
consolidation) are refused to a writer of a governed space: its admins do them.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from pydantic import ValidationError

from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.protocol.consolidation import ConsolidateMemories
from spade_memory.protocol.errors import (
    BadRequest,
    Conflict,
    ItemNotFound,
    MemoryServiceError,
    NotAuthorized,
    PendingApproval,
    ResourceConstraint,
)
from spade_memory.protocol.limits import Limits
from spade_memory.protocol.memories import (
    WRITE_OPS,
    DeleteMemory,
    GetMemory,
    Memory,
    StoreMemory,
    UpdateMemory,
    base_memory_ops,
)
from spade_memory.protocol.ops import Op, Outcome, Place, Request
from spade_memory.protocol.space_names import rank
from spade_memory.protocol.spaces import (
    DecideProposal,
    ListProposals,
    ProposalDecided,
    ProposalInfo,
    ProposalList,
)
from spade_memory.spaces.directory import Space, SpaceDirectory
from spade_memory.spaces.gate import Gate
from spade_memory.spaces.proposals import Proposal, State

PROPOSAL_HOURS = 168.0
"""How long a proposal waits for an admin by default (a week)."""
RESUME_AFTER = 60.0
"""Seconds after which an approved proposal with no recorded write is applied by the
sweep (an approval takes milliseconds; this one's agent stopped in between)."""
PROPOSED = (StoreMemory, UpdateMemory, DeleteMemory)
"""The writes a writer of a governed space may propose."""


@dataclass(frozen=True)
class Told:
    """A message for a person or an agent: an admin asked to decide, or a proposer told
    the outcome."""

    to: str
    body: str
    stanza_type: str = "chat"
    """``headline`` for a question to an admin: shown to its sessions that are online and
    never kept for an offline one (whose server's store it would fill, pushing out
    others' messages); ``list_proposals`` finds what it missed."""


class Governance:
    """Proposals of the governed spaces of one directory, for the base memory agent."""

    def __init__(
        self,
        directory: SpaceDirectory,
        store: LongTermStore,
        hours: float = PROPOSAL_HOURS,
        changed: asyncio.Event | None = None,
        limits: Limits | None = None,
    ) -> None:
        self.directory = directory
        self.store = store
        self.limits = limits or Limits()
        """Its bounds on pending proposals (``max_pending_proposals``, ...)."""
        self.lifetime = hours * 3600
        self.changed = changed
        """Set after an approved write is applied (the mirror's wake-up)."""
        self.gate = Gate(directory, proposes=True)
        self.told: asyncio.Queue[Told | None] = asyncio.Queue()
        """The messages ``TellOfProposals`` sends."""

    @staticmethod
    def held(request: Request) -> bool:
        """Whether ``request`` is a writer's write in a governed space (the gate let it
        through for this service to keep as a proposal)."""
        return isinstance(request.op, (*WRITE_OPS, ConsolidateMemories)) and any(
            place.governed and place.role == "writer" for place in request.places
        )

    async def propose(self, owner: str, address: str, request: Request) -> MemoryServiceError:
        """Keep the held ``request`` of ``owner`` as a proposal (the same request again
        finds the first) and ask the space's admins, once.

        Returns the ``PendingApproval`` to answer with, or the typed error refusing it.
        """
        op = request.op
        place = request.places[0] if len(request.places) == 1 else None
        if not isinstance(op, PROPOSED) or place is None:
            return NotAuthorized(
                f"{op.tag()} waits for no one: in a governed space, a writer proposes"
                " stores, updates and deletes one at a time, and admins do the rest"
            )
        if isinstance(op, (UpdateMemory, DeleteMemory)):
            refused = await self._not_its_own(owner, op, place)
            if refused is not None:
                return refused
        body = op.model_dump_json(exclude_none=True, by_alias=True)
        bounds = (self.limits.max_pending_proposals, self.limits.max_space_proposals)
        try:
            proposal, new = await self.directory.proposals.propose(
                place.key, owner, address, body, self.lifetime, request.id, bounds
            )
        except ResourceConstraint as full:
            return full
        space = await self.directory.by_id(place.key)
        if new and space is not None:  # (None: deleted this instant)
            for admin in await self.admins(space):
                self.told.put_nowait(Told(admin, asking(space, proposal, op), "headline"))
        return PendingApproval(
            f"{place.name!r} is governed: the {op.tag()} waits for an admin as proposal"
            f" {proposal.id}; you will be told the outcome",
            proposal.id,
        )

    async def _not_its_own(
        self, owner: str, op: UpdateMemory | DeleteMemory, place: Place
    ) -> MemoryServiceError | None:
        """The error the store would give when the write is applied, now: no admin is
        asked about a memory the writer may not change."""
        read = GetMemory(id=op.id, space=op.space, count_access=False)
        (found,) = await self.store.batch(owner, [Request(read, None, (place,))])
        if isinstance(found, MemoryServiceError):
            return found
        assert isinstance(found, Memory)
        if found.author != owner:
            return NotAuthorized(f"only an admin of {place.name!r} changes others' memories")
        return None

    async def admins(self, space: Space) -> list[str]:
        """Who decides the space's proposals and can be told: its owner and the admins
        granted by name (a domain's grant names no one to tell)."""
        return [
            member
            for member, role in await self.directory.members(space)
            if role in ("owner", "admin") and not member.startswith("*@")
        ]

    async def pending(self, sender: str, op: ListProposals) -> ProposalList:
        """The space's pending proposals: all for an admin, the sender's own otherwise.

        Raises ``ItemNotFound`` for a space the sender is not a member of.
        """
        space, role = await self.gate.membership(sender, op.space)
        mine = None if rank(role) >= rank("admin") else sender
        found = await self.directory.proposals.pending(space.id, mine)
        return ProposalList(proposals=[info(space, proposal) for proposal in found])

    async def decide(self, sender: str, op: DecideProposal) -> ProposalDecided:
        """Approve (apply as the proposer's own) or reject the proposal; tell its proposer.

        Returns the proposal decided (``failed`` when the approved write could not be
        applied, with why) and the write's result; raises ``ItemNotFound`` (no such
        proposal in a space the sender is a member of), ``NotAuthorized`` (not an admin)
        or ``Conflict`` (decided or expired before).
        """
        space, role = await self.gate.membership(sender, op.space)
        if rank(role) < rank("admin"):
            raise NotAuthorized(f"only admins of {space.name!r} decide its proposals")
        proposals = self.directory.proposals
        found = await proposals.get(op.proposal)
        if found is None or found.space_id != space.id:
            raise ItemNotFound(f"no proposal {op.proposal!r} in {space.name!r}")
        state: State = "approved" if op.approve else "rejected"
        decided = await proposals.decide(found.id, state, sender, op.reason)
        if decided is None:
            again = await proposals.get(found.id)
            raise Conflict(f"proposal {found.id} is {again.state if again else 'gone'} already")
        if op.approve:
            decided = await self._carry_out(decided)
        self.told.put_nowait(Told(decided.address, outcome_of(space, decided)))
        result = None if decided.result is None else json.loads(decided.result)
        return ProposalDecided(proposal=info(space, decided), result=result)

    async def _carry_out(self, approved: Proposal) -> Proposal:
        """Apply the approved proposal and record what it gave (its result, or why it
        failed). Returns the proposal as recorded."""
        outcome = await self._apply(approved)
        proposals = self.directory.proposals
        if isinstance(outcome, MemoryServiceError):
            recorded = await proposals.failed(approved.id, outcome.text)
        else:
            recorded = await proposals.applied(approved.id, outcome.model_dump_json())
            if self.changed is not None:
                self.changed.set()
        return recorded or approved

    async def _apply(self, proposal: Proposal) -> Outcome:
        """The approved write, applied as its proposer's own where its role still lets
        it write (once, however often the approval is retried: its request id)."""
        try:
            write: Op[Any] = base_memory_ops.validate_json(proposal.op)
            places = await self.gate.places(proposal.proposer, write)
        except ValidationError:
            return BadRequest("the proposal no longer parses as a write of this version")
        except MemoryServiceError as error:
            return error
        (outcome,) = await self.store.batch(
            proposal.proposer, [Request(write, f"proposal:{proposal.id}", places)]
        )
        return outcome

    async def sweep(self, now: float | None = None) -> int:
        """Expire the proposals whose time is up; apply those approved more than
        ``RESUME_AFTER`` seconds ago whose write was never recorded (their agent stopped
        in between; applied once, by their request id); tell each proposer.

        Returns how many proposals it settled."""
        now = time.time() if now is None else now
        proposals = self.directory.proposals
        settled = await proposals.expire(now)
        for approved in await proposals.unapplied(now - RESUME_AFTER):
            settled.append(await self._carry_out(approved))
        spaces = await self.directory.by_ids({proposal.space_id for proposal in settled})
        for proposal in settled:
            space = spaces.get(proposal.space_id)
            if space is not None:
                self.told.put_nowait(Told(proposal.address, outcome_of(space, proposal)))
        return len(settled)


def info(space: Space, proposal: Proposal) -> ProposalInfo:
    """A proposal as its space's members see it."""
    return ProposalInfo(
        id=proposal.id,
        space=space.name,
        proposer=proposal.proposer,
        op=json.loads(proposal.op),
        created_at=datetime.fromtimestamp(proposal.created_at, tz=timezone.utc),
        expires_at=datetime.fromtimestamp(proposal.expires_at, tz=timezone.utc),
        state=proposal.state,
        decided_by=proposal.decided_by,
        note=proposal.note,
    )


def asking(space: Space, proposal: Proposal, op: Op[Any]) -> str:
    """The message asking an admin to decide: what is proposed, and the two requests
    (to send back to this agent as they are) that approve or reject it."""
    decide = {"op": "decide_proposal", "space": space.name, "proposal": proposal.id}
    expires = datetime.fromtimestamp(proposal.expires_at, tz=timezone.utc)
    return "\n".join([
        f"{proposal.proposer} proposes in the governed space {space.name!r}:",
        f"  {what(op)}",
        f"Proposal {proposal.id}, waiting until {expires:%Y-%m-%d %H:%M} UTC.",
        f"Approve: {json.dumps({**decide, 'approve': True})}",
        f"Reject: {json.dumps({**decide, 'approve': False, 'reason': 'why'})}",
    ])  # fmt: skip


def what(op: Op[Any]) -> str:
    """One line saying what a proposed write does."""
    if isinstance(op, StoreMemory):
        category = op.category or "(to classify)"
        return f"store a {category}: {_quoted(op.content)}"
    if isinstance(op, UpdateMemory):
        changes = ", ".join(f"{name}={_quoted(str(value))}" for name, value in op.changes().items())
        return f"update memory {op.id}: {changes}"
    assert isinstance(op, DeleteMemory)
    return f"delete memory {op.id}"


def outcome_of(space: Space, proposal: Proposal) -> str:
    """The message telling the proposer what became of its proposal."""
    head = f"Your proposal {proposal.id} in {space.name!r}"
    if proposal.state == "approved":
        result = json.loads(proposal.result or "{}")
        done = f" ({result['id']})" if "id" in result else ""
        return f"{head} was approved by {proposal.decided_by} and applied{done}."
    if proposal.state == "rejected":
        why = f": {proposal.note}" if proposal.note else ""
        return f"{head} was rejected by {proposal.decided_by}{why}."
    if proposal.state == "failed":
        return f"{head} was approved by {proposal.decided_by} but not applied: {proposal.note}"
    return f"{head} expired: no admin decided it in time."


def _quoted(text: str, most: int = 300) -> str:
    return json.dumps(text if len(text) <= most else text[: most - 1] + "…", ensure_ascii=False)
