"""The beads sync agent: memories as beads issues that travel with git, and its registry entry.

It serves the beads memory ops to any agent and, given a ``Mirror``, mirrors
the base memory agent (see ``mirror``). A retried write (same request id) is
applied once: a store finds the request id recorded in its issue, other
writes are answered from ``RecentAnswers``.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Sequence

from pydantic import TypeAdapter
from spade.agent import Agent

from spade_memory import base_memory
from spade_memory.beads_sync import NAME
from spade_memory.beads_sync.mirror import Mirror, MirrorBaseMemory
from spade_memory.beads_sync.store import BeadsMemoryStore
from spade_memory.client.xmpp_transport import XmppTransport
from spade_memory.protocol.beads import WRITES, BeadsForgotten, BeadsSyncOp, beads_sync_ops
from spade_memory.protocol.errors import MemoryServiceError
from spade_memory.protocol.limits import Limits
from spade_memory.protocol.ops import AppliesOps, Outcome, Request, in_place
from spade_memory.serving.plugin import (
    Behaviours,
)
from spade_memory.storage.answers import RecentAnswers
from spade_memory.xmpp.notices import change_notice_template

CURSOR = "beads-sync-cursor.json"
"""The mirror's cursor file in the data directory."""
BEADS_WAY_OUT = (
    "restore it from git or a backup, or move it aside to start with an empty one;"
    " --allow-damaged starts the other services"
)


class BeadsSyncService(AppliesOps):
    """Serves the beads memory ops; mirrors the base memory agent when given a ``Mirror``."""

    name = NAME

    def __init__(
        self,
        memories: BeadsMemoryStore,
        limits: Limits | None = None,
        *,
        mirror: Mirror | None = None,
        answers: RecentAnswers | None = None,
    ) -> None:
        self.memories = memories
        self.limits = limits or Limits()
        self.ops: TypeAdapter[BeadsSyncOp] = beads_sync_ops
        self.mirror = mirror
        self.answers = answers or RecentAnswers(max_bytes=self.limits.retry_answers_bytes)
        """Answers to recent writes, so a retry within this run is not applied twice."""

    async def batch(self, owner: str, requests: Sequence[Request]) -> list[Outcome]:
        """The ops applied in order; a write already answered is answered again."""
        replayed = {
            index: answer
            for index, request in enumerate(requests)
            if isinstance(request.op, WRITES)
            and (answer := self.answers.get(owner, request.id)) is not None
        }
        fresh = [request for index, request in enumerate(requests) if index not in replayed]
        applied = await self.memories.batch(owner, fresh) if fresh else []
        for index, (request, outcome) in enumerate(zip(fresh, applied, strict=True)):
            if isinstance(outcome, BeadsForgotten):  # the answers kept for its retries too
                replies = self.answers.forget(owner, outcome.dry_run)
                outcome = applied[index] = outcome.model_copy(update={"replies": replies})
            if isinstance(request.op, WRITES) and not isinstance(outcome, MemoryServiceError):
                if self.mirror is not None:
                    self.mirror.direct_writes = True
                self.answers.keep(owner, request.id, outcome)
        return in_place(len(requests), replayed, applied)

    def behaviours(self, agent: Agent) -> Behaviours:
        """With a mirror: the debounced catch-up from the base memory agent's feed."""
        if self.mirror is None:
            return []
        base = base_memory.NAME
        transport = XmppTransport(agent, {base: self.mirror.base_memory_jid}, timeout=5.0)
        behaviour = MirrorBaseMemory(self.memories, self.mirror, transport)
        return [(behaviour, change_notice_template())]


def new_session_id() -> str:
    """A session id that sorts by start time: ``20261122-083000-1a2b``."""
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)
