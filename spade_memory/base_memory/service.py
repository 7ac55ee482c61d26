"""The base memory agent: what it serves (the store's ops, the space ops, the change
feed), whom it tells of what committed (``Committed``, read by ``notifiers``), and the
agent itself; its registry entry is in ``plugin``."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from pydantic import TypeAdapter
from spade.agent import Agent
from spade.behaviour import CyclicBehaviour

from spade_memory.base_memory import NAME
from spade_memory.base_memory.commands import COMMANDS
from spade_memory.base_memory.governance import PROPOSAL_HOURS, Governance
from spade_memory.base_memory.notifiers import (
    Committed,
    NotifyMirror,
    NotifySubscribers,
    NotifyWorkEngine,
)
from spade_memory.base_memory.proposal_notices import (
    SWEEP_EVERY_SECONDS,
    SweepProposals,
    TellOfProposals,
)
from spade_memory.base_memory.spaces import SpaceOps
from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.protocol.consolidation import ConsolidateMemories
from spade_memory.protocol.errors import BadRequest, MemoryServiceError, NotAuthorized
from spade_memory.protocol.limits import Limits
from spade_memory.protocol.memories import (
    WRITE_OPS,
    AllForgotten,
    BaseMemoryOp,
    ChangeList,
    ChangesSince,
    base_memory_ops,
)
from spade_memory.protocol.ops import AppliesOps, Outcome, Request, in_place
from spade_memory.protocol.spaces import SPACE_OPS, DeleteSpace
from spade_memory.serving.agent import MemoryAgent, reply_address
from spade_memory.serving.plugin import (
    Behaviours,
)
from spade_memory.spaces.directory import SpaceDirectory
from spade_memory.spaces.gate import Gate
from spade_memory.xmpp import wire

logger = logging.getLogger("spade_memory.base_memory")
DATABASE = "base-memory.db"
"""The store's file in the data directory."""
ONE_CONSOLIDATION = (
    "one consolidate_memories per batch: each plans over the whole space, so a batch of"
    " them would cost the agent as many passes; send the others in batches of their own"
)
"""Why a batch's second consolidation is refused (the first is served)."""


class BaseMemoryService(AppliesOps):
    """Serves the base memory ops from an injected long-term store, and the space ops
    from the directory of spaces (none given: personal spaces only).

    ``mirror`` (the beads sync agent's JID) is the one sender allowed to read
    the whole change feed; it is told after every committed write. Subscribers
    of a space are told of each committed write in it, when the store was opened
    with the ``listeners()`` of ``committed``. A writer's writes in a governed space
    wait ``proposal_hours`` for an admin (``governance``).
    """

    name = NAME

    def __init__(
        self,
        store: LongTermStore,
        limits: Limits | None = None,
        mirror: str | None = None,
        directory: SpaceDirectory | None = None,
        committed: Committed | None = None,
        proposal_hours: float = PROPOSAL_HOURS,
    ) -> None:
        self.store = store
        self.limits = limits or Limits()
        self.ops: TypeAdapter[BaseMemoryOp] = base_memory_ops
        self.mirror = None if mirror is None else wire.bare(mirror)
        committed = committed or Committed(store.work_items)
        self.committed = committed
        """What the store tells of its commits, for the notifiers."""
        self.changed = committed.changed
        self.gate = Gate(directory, proposes=True)
        self.governance: Governance | None = None
        """Governed spaces' proposals (None: spaces are off)."""
        self.spaces: SpaceOps | None = None
        if directory is not None:
            self.governance = Governance(
                directory, store, proposal_hours, self.changed, self.limits
            )
            self.spaces = SpaceOps(directory, store, self.governance)
        self.events = committed.events
        """Committed writes in shared spaces, for ``NotifySubscribers``."""
        self.links = committed.links
        """Committed links to work items, for ``NotifyWorkEngine`` (with a JID to tell)."""

    async def batch(self, owner: str, requests: Sequence[Request]) -> list[Outcome]:
        """Runs of memory ops in one store transaction each; space ops one by one, in order."""
        outcomes: list[Outcome] = []
        run: list[Request] = []
        for request in requests:
            if not isinstance(request.op, SPACE_OPS):
                run.append(request)
                continue
            outcomes += await self._memory_ops(owner, run)
            run = []
            outcomes.append(await self._space_op(owner, request))
        return outcomes + await self._memory_ops(owner, run)

    async def _space_op(self, owner: str, request: Request) -> Outcome:
        try:
            if self.spaces is None:
                raise BadRequest("spaces are not served by this memory agent")
            result = await self.spaces.apply(owner, request.op)
        except MemoryServiceError as error:
            return error
        if isinstance(request.op, DeleteSpace):
            self.changed.set()  # its memories reach the mirror as deletions
        return result

    async def _memory_ops(self, owner: str, requests: Sequence[Request]) -> list[Outcome]:
        """The ops applied in one store transaction, each where the gate let it act; the
        whole change feed is the mirror's only."""
        if not requests:
            return []
        refused: dict[int, Outcome] = {}
        candidates: list[tuple[int, Request]] = []
        consolidating = False
        for index, request in enumerate(requests):
            op = request.op
            if isinstance(op, ChangesSince) and op.space is None and owner != self.mirror:
                refused[index] = NotAuthorized("only the configured mirror may read the feed")
            elif isinstance(op, ConsolidateMemories) and consolidating:
                refused[index] = BadRequest(ONE_CONSOLIDATION)
            else:
                consolidating = consolidating or isinstance(op, ConsolidateMemories)
                candidates.append((index, request))
        gated, allowed = await self.gate.scope(owner, [request for _, request in candidates])
        refused.update({candidates[position][0]: error for position, error in gated.items()})
        if self.governance is not None:
            allowed = await self._proposed(owner, candidates, gated, allowed, refused)
        applied = await self.store.batch(owner, allowed) if allowed else []
        applied = [
            outcome.model_copy(update={"mirror": self.mirror})
            if isinstance(outcome, AllForgotten)
            else outcome
            for outcome in applied
        ]  # where the shell's forget goes next
        if owner == self.mirror:
            applied = [await self._named(outcome) for outcome in applied]
        if self.mirror is not None and any(
            isinstance(request.op, (*WRITE_OPS, ConsolidateMemories))
            and not isinstance(outcome, MemoryServiceError)
            for request, outcome in zip(allowed, applied, strict=True)
        ):
            self.changed.set()
        return in_place(len(requests), refused, applied)

    async def _proposed(
        self,
        owner: str,
        candidates: Sequence[tuple[int, Request]],
        gated: dict[int, Outcome],
        allowed: list[Request],
        refused: dict[int, Outcome],
    ) -> list[Request]:
        """The allowed requests left once a writer's writes in governed spaces are kept
        as proposals (their answers, ``pending-approval`` or the refusal, in ``refused``)."""
        assert self.governance is not None
        indices = [index for position, (index, _) in enumerate(candidates) if position not in gated]
        kept: list[Request] = []
        for index, request in zip(indices, allowed, strict=True):
            if not self.governance.held(request):
                kept.append(request)
                continue
            address = reply_address.get() or owner
            refused[index] = await self.governance.propose(owner, address, request)
        return kept

    async def _named(self, outcome: Outcome) -> Outcome:
        """The mirror's feed names spaces as their members do (the store knows their ids)."""
        if not isinstance(outcome, ChangeList) or self.spaces is None:
            return outcome
        keys = {change.space for change in outcome.changes if change.space is not None}
        spaces = await self.spaces.directory.by_ids(keys)
        names = {key: space.name for key, space in spaces.items()}
        changes = [
            change.model_copy(
                update={
                    "space": names.get(change.space, change.space),
                    "space_key": change.space,
                    "memory": None
                    if change.memory is None
                    else change.memory.model_copy(
                        update={"space": names.get(change.memory.space, change.memory.space)}
                    ),
                }
            )
            if change.space is not None
            else change
            for change in outcome.changes
        ]
        return outcome.model_copy(update={"changes": changes})

    commands = COMMANDS
    """Its ad-hoc commands (XEP-0050), for people in their own clients."""

    def behaviours(self, agent: Agent) -> Behaviours:
        """The behaviours telling the mirror (if any) and the spaces' subscribers."""
        behaviours: list[tuple[CyclicBehaviour, None]] = []
        if self.mirror is not None:
            behaviours.append((NotifyMirror(self.committed, self.mirror), None))
        if self.spaces is not None:
            behaviours.append((NotifySubscribers(self.committed, self.spaces.directory), None))
        if self.governance is not None:
            behaviours.append((TellOfProposals(self.governance), None))
            every = min(SWEEP_EVERY_SECONDS, self.governance.lifetime / 2)
            behaviours.append((SweepProposals(self.governance, every), None))
        if self.store.work_items.notify_jid is not None:
            notify = self.store.work_items.notify_jid
            behaviours.append((NotifyWorkEngine(self.committed, notify), None))
        return behaviours


class BaseMemoryAgent(MemoryAgent):
    """A memory agent serving long-term memories from ``store`` (opened with the
    ``listeners()`` of ``committed``, for its notices to reach their behaviours)."""

    def __init__(
        self,
        jid: str,
        password: str,
        store: LongTermStore,
        limits: Limits | None = None,
        *,
        mirror: str | None = None,
        directory: SpaceDirectory | None = None,
        committed: Committed | None = None,
        proposal_hours: float = PROPOSAL_HOURS,
        **agent_options: Any,
    ) -> None:
        service = BaseMemoryService(store, limits, mirror, directory, committed, proposal_hours)
        super().__init__(jid, password, service, **agent_options)
