"""Access counting without a write on every read.

spade_llm bumps ``access_count`` and ``last_accessed`` of every memory a read
returns, one UPDATE and commit per memory. Here reads only note the access;
the notes are written in one transaction of their own (never inside another
write, whose rollback would take them along) before any read that orders by
``last_accessed``, once a second, when a thousand are pending, and at close.
A crash may lose up to a second of access statistics, never a memory.
"""

from __future__ import annotations

import time

from spade_memory.storage.connection import Database


class AccessLog:
    """Pending access counts by memory ``seq``."""

    FLUSH_AFTER_SECONDS = 1.0

    def __init__(self) -> None:
        self._pending: dict[int, tuple[int, float]] = {}

    def __bool__(self) -> bool:
        return bool(self._pending)

    def __len__(self) -> int:
        return len(self._pending)

    def note(self, seqs: list[int]) -> tuple[float, dict[int, int]]:
        """Record one access of each memory; returns the time and pending counts."""
        now = time.time()
        for seq in seqs:
            count, _ = self._pending.get(seq, (0, now))
            self._pending[seq] = (count + 1, now)
        return now, {seq: self._pending[seq][0] for seq in seqs}

    def pending(self, seqs: list[int]) -> dict[int, tuple[int, float]]:
        """The accesses noted but not written yet of ``seqs`` (count, newest time), noting
        none: what a read that does not count (``count_access`` false) adds to the rows."""
        return {seq: self._pending[seq] for seq in seqs if seq in self._pending}

    async def flush(self, db: Database) -> None:
        """Write the pending counts; call in a write transaction of their own."""
        if not self._pending:
            return
        await db.executemany(
            "UPDATE memories SET access_count = access_count + ?,"
            " last_accessed = CASE WHEN last_accessed < ? THEN ? ELSE last_accessed END"
            " WHERE seq = ?",
            [(count, when, when, seq) for seq, (count, when) in self._pending.items()],
        )
        self._pending.clear()
