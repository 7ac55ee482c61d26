"""The beads sync agent: memories as beads issues that travel with git.

It serves the beads memory ops to any agent, and mirrors the base memory
agent: told after each committed write, it waits ``debounce`` seconds for
more, fetches the changes after its cursor with ``changes_since``, writes
them to beads in one batch, and only then moves its cursor (kept in a small
file). It also catches up when it starts and every ``poll`` seconds, so
nothing the base memory agent acknowledged is lost if either agent dies;
re-applying a change finds its issue by ``external_ref`` and never adds a
second one.
"""

from __future__ import annotations

import json
import logging
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter
from spade.behaviour import CyclicBehaviour

from .. import protocol
from ..beads.engine import BeadsError
from ..beads.git import GitCommitter
from ..beads_ops import (
    BeadsStoreMemory,
    BeadsSyncOp,
    DeleteBeadsMemory,
    GetSessionContext,
    LinkMemories,
    MarkMemoryAccessed,
    RestoreSession,
    RetrieveMemories,
    SearchBeadsMemories,
    beads_sync_ops,
)
from ..client import MemoryClient
from ..errors import InternalServerError, MemoryServiceError
from ..files import write_atomically
from ..limits import Limits
from ..ops import ChangesSince
from ..records import ChangeList, Record
from ..stores.beads_memories import BeadsMemoryStore
from .serving import MemoryAgent

logger = logging.getLogger("spade_memory.beads")
_WRITES = (BeadsStoreMemory, MarkMemoryAccessed, LinkMemories, DeleteBeadsMemory)


class BeadsSyncService:
    """Serves the beads memory ops; a retried write (same request id) is applied once."""

    name = "beads-sync"

    def __init__(self, memories: BeadsMemoryStore, limits: Limits | None = None) -> None:
        self.memories = memories
        self.limits = limits or Limits()
        self.ops: TypeAdapter[BeadsSyncOp] = beads_sync_ops
        self.wrote = False
        """Set after a direct write, so the next flush commits it to git."""
        self._answered: OrderedDict[tuple[str, str], Record] = OrderedDict()

    async def handle(self, owner: str, op: BeadsSyncOp, request_id: str | None) -> Record:
        key = (owner, request_id or "")
        if request_id and isinstance(op, _WRITES) and key in self._answered:
            return self._answered[key]
        try:
            result = await self._apply(owner, op, request_id)
        except BeadsError as error:
            logger.error("beads operation %s failed: %s", op.op, error)
            raise InternalServerError("the beads tracker could not be read or written") from None
        if isinstance(op, _WRITES):
            self.wrote = True
            if request_id:
                self._answered[key] = result
                while len(self._answered) > 10_000:
                    self._answered.popitem(last=False)
        return result

    async def _apply(self, owner: str, op: BeadsSyncOp, request_id: str | None) -> Record:
        memories = self.memories
        if isinstance(op, BeadsStoreMemory):
            return await memories.store(owner, op, request_id)
        if isinstance(op, RetrieveMemories):
            return await memories.retrieve(owner, op)
        if isinstance(op, RestoreSession):
            return await memories.restore_session(owner, op.session_id)
        if isinstance(op, GetSessionContext):
            return await memories.session_context(owner, op.session_id)
        if isinstance(op, MarkMemoryAccessed):
            return await memories.mark_accessed(owner, op.memory_id)
        if isinstance(op, LinkMemories):
            return await memories.link(owner, op)
        if isinstance(op, DeleteBeadsMemory):
            return await memories.delete(owner, op.memory_id, op.reason)
        assert isinstance(op, SearchBeadsMemories)
        return await memories.search(owner, op.query, op.limit)


class SyncCursor:
    """The last base memory change written to beads, in a file replaced atomically."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> int:
        try:
            return int(json.loads(self.path.read_text())["cursor"])
        except FileNotFoundError:
            return 0
        except (ValueError, KeyError, TypeError):
            # safe: re-mirrored changes find their issues and are not added twice
            logger.warning("unreadable %s; mirroring from the oldest change kept", self.path)
            return 0

    def save(self, cursor: int) -> None:
        write_atomically(self.path, json.dumps({"cursor": cursor}))


class MirrorBaseMemory(CyclicBehaviour):  # type: ignore[misc]
    """Debounced, batched catch-up from the base memory agent's change feed."""

    PAGE = 500
    RETRY_AFTER = 2.0

    def __init__(self, agent: BeadsSyncAgent, client: MemoryClient) -> None:
        super().__init__()
        self.sync = agent
        self.client = client
        self.cursor = agent.cursor.load()
        self.due: float | None = time.monotonic()  # catch up at start
        self.next_poll = 0.0

    async def run(self) -> None:
        notice = await self.receive(timeout=0.25)
        now = time.monotonic()
        if (notice is not None or self.sync.beads_service.wrote) and self.due is None:
            self.due = now + self.sync.debounce
        if self.due is None and now >= self.next_poll:
            self.due = now
        if self.due is None or now < self.due:
            return
        self.due, self.next_poll = None, now + self.sync.poll
        try:
            await self.flush()
        except (MemoryServiceError, BeadsError) as error:
            logger.warning("beads mirror will retry: %s", error)
            self.due = now + self.RETRY_AFTER

    async def flush(self) -> None:
        """Write every change after the cursor, then commit whatever was written to git."""
        wrote, self.sync.beads_service.wrote = self.sync.beads_service.wrote, False
        try:
            wrote = await self.catch_up() or wrote
        finally:
            if wrote and self.sync.git is not None:
                await self.sync.git.commit(f"spade-memory: memories up to change {self.cursor}")

    async def catch_up(self) -> bool:
        """Mirror the changes after the cursor a page at a time; True if beads changed."""
        wrote = False
        while True:
            op = ChangesSince(after=self.cursor, limit=self.PAGE)
            feed = await self.client.request(self.client.base_memory_jid, op, ChangeList)
            if feed is None or not feed.changes:
                return wrote
            wrote = await self.sync.memories.mirror(feed.changes) > 0 or wrote
            self.cursor = feed.changes[-1].seq
            self.sync.cursor.save(self.cursor)  # after the beads file is on disk
            logger.info("mirrored base memory changes up to %d into beads", self.cursor)
            if len(feed.changes) < self.PAGE:
                return wrote


class BeadsSyncAgent(MemoryAgent):
    """A memory agent keeping memories in beads and mirroring the base memory agent."""

    def __init__(
        self,
        jid: str,
        password: str,
        memories: BeadsMemoryStore,
        *,
        cursor_path: Path,
        base_memory_jid: str | None = None,
        debounce: float = 5.0,
        poll: float = 30.0,
        git: GitCommitter | None = None,
        limits: Limits | None = None,
        **agent_options: Any,
    ) -> None:
        self.beads_service = BeadsSyncService(memories, limits)
        super().__init__(jid, password, self.beads_service, **agent_options)
        self.memories = memories
        self.cursor = SyncCursor(cursor_path)
        self.base_memory_jid = base_memory_jid
        self.debounce = debounce
        self.poll = poll
        self.git = git

    async def setup(self) -> None:
        await super().setup()
        if self.base_memory_jid is not None:
            client = MemoryClient(self, self.base_memory_jid, timeout=5.0)
            mirror = MirrorBaseMemory(self, client)
            self.add_behaviour(mirror, protocol.change_notice_template())
