"""The beads mirror of the base memory agent: its cursor and its debounced catch-up.

Told after each committed write of the base memory agent, the mirror waits
``debounce`` seconds for more, fetches the changes after its cursor with
``changes_since``, writes them to beads in one batch, and only then moves
its cursor (kept in a small file). It also catches up when it starts and
every ``poll`` seconds, so nothing the base memory agent acknowledged is lost
if either agent dies; re-applying a change finds its issue by
``external_ref`` and never adds a second one.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path

from spade_memory.beads.errors import BeadsError
from spade_memory.beads.git import GitCommitter
from spade_memory.beads_sync.store import BeadsMemoryStore
from spade_memory.client.xmpp_transport import XmppTransport
from spade_memory.protocol.errors import MemoryServiceError
from spade_memory.protocol.memories import ChangesSince
from spade_memory.storage.files import write_atomically
from spade_memory.xmpp.lifecycle import WakesWhenKilled

logger = logging.getLogger("spade_memory.beads")


class SyncCursor:
    """The last base memory change written to beads, in a file replaced atomically."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> int:
        """The cursor; 0 when there is none yet or the file cannot be read."""
        try:
            return int(json.loads(self.path.read_text())["cursor"])
        except FileNotFoundError:
            return 0
        except (ValueError, KeyError, TypeError):
            # safe: re-mirrored changes find their issues and are not added twice
            logger.warning("unreadable %s; mirroring from the oldest change kept", self.path)
            return 0

    def save(self, cursor: int) -> None:
        """Keep ``cursor`` (after the beads file it covers is on disk)."""
        write_atomically(self.path, json.dumps({"cursor": cursor}))


@dataclass
class Mirror:
    """What the beads sync agent mirrors, and how often."""

    base_memory_jid: str
    cursor: SyncCursor
    debounce: float = 5.0
    poll: float = 30.0
    git: GitCommitter | None = None
    direct_writes: bool = False
    """Set after an agent wrote to beads directly, so the next flush commits it to git."""


class MirrorBaseMemory(WakesWhenKilled):
    """Debounced, batched catch-up from the base memory agent's change feed."""

    PAGE = 500
    RETRY_AFTER = 2.0

    def __init__(
        self, memories: BeadsMemoryStore, mirror: Mirror, transport: XmppTransport
    ) -> None:
        super().__init__()
        self.memories = memories
        self.mirror = mirror
        self.transport = transport
        self.cursor = mirror.cursor.load()
        self.due: float | None = time.monotonic()  # catch up at start
        self.next_poll = 0.0

    async def run(self) -> None:
        notice = await self.receive(timeout=0.25)
        if self.is_killed():
            return
        now = time.monotonic()
        if (notice is not None or self.mirror.direct_writes) and self.due is None:
            self.due = now + self.mirror.debounce
        if self.due is None and now >= self.next_poll:
            self.due = now
        if self.due is None or now < self.due:
            return
        self.due, self.next_poll = None, now + self.mirror.poll
        try:
            await self.flush()
        except (MemoryServiceError, BeadsError) as error:
            logger.warning("beads mirror will retry: %s", error)
            self.due = now + self.RETRY_AFTER

    async def flush(self) -> None:
        """Write every change after the cursor, then commit whatever was written to git."""
        wrote, self.mirror.direct_writes = self.mirror.direct_writes, False
        try:
            wrote = await self.catch_up() or wrote
        finally:
            if wrote and self.mirror.git is not None:
                await self.mirror.git.commit(f"spade-memory: memories up to change {self.cursor}")

    async def catch_up(self) -> bool:
        """Mirror the changes after the cursor a page at a time; True if beads changed."""
        wrote = False
        while True:
            op = ChangesSince(after=self.cursor, limit=self.PAGE)
            feed = await self.transport.request(self.mirror.base_memory_jid, op)
            if feed is None or not feed.changes:
                return wrote
            wrote = await self.memories.mirror(feed.changes) > 0 or wrote
            self.cursor = feed.changes[-1].seq
            self.mirror.cursor.save(self.cursor)  # after the beads file is on disk
            logger.info("mirrored base memory changes up to %d into beads", self.cursor)
            if len(feed.changes) < self.PAGE:
                return wrote
