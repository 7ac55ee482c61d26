"""WAL checkpoints off the write path.

SQLite copies the WAL back into the database file (a checkpoint, which
fsyncs both files) inside the commit that takes the WAL past
``wal_autocheckpoint`` pages. Measured here, those fsyncs were three
quarters of the commit time of batches of a hundred stores. So a store's
connection checkpoints by itself only as a safety net (``SAFETY_NET_PAGES``),
and ``Checkpoints`` runs a PASSIVE checkpoint from a connection of its own,
in a daemon thread, at most once per ``EVERY_SECONDS`` after a commit: the
writer goes on meanwhile, and a stalled disk stalls the checkpoint, not the
store's requests.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import threading
import time
from pathlib import Path

logger = logging.getLogger("spade_memory.storage")

SAFETY_NET_PAGES = 20_000
"""The connection's own ``wal_autocheckpoint``: reached only if background checkpoints
fall behind (about 80 MB of WAL with 4 kB pages)."""
EVERY_SECONDS = 1.0
"""Least time between two background checkpoints of one file."""
WAL_LIMIT_BYTES = 64 << 20
"""``journal_size_limit``: what a reset WAL file is truncated to."""


class Checkpoints:
    """Background checkpoints of one database file."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._last = time.monotonic()
        self._running: threading.Thread | None = None

    def after_commit(self) -> None:
        """A transaction was committed: start a checkpoint if none ran for a while."""
        now = time.monotonic()
        if now - self._last < EVERY_SECONDS or self.busy:
            return
        self._last = now
        self._running = threading.Thread(
            target=self._checkpoint, name="spade-memory-checkpoint", daemon=True
        )
        self._running.start()

    @property
    def busy(self) -> bool:
        return self._running is not None and self._running.is_alive()

    async def finish(self, timeout: float = 5.0) -> None:
        """Wait (at most ``timeout`` seconds) for a running checkpoint to end."""
        deadline = time.monotonic() + timeout
        while self.busy and time.monotonic() < deadline:
            await asyncio.sleep(0.01)

    def _checkpoint(self) -> None:
        try:
            with contextlib.closing(sqlite3.connect(self._path, timeout=1.0)) as db:
                db.execute("PRAGMA wal_checkpoint(PASSIVE)")
        except sqlite3.Error as error:  # the next one tries again; the safety net holds
            logger.debug("%s: background checkpoint failed (%s)", self._path, error)
