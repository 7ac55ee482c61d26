"""The bookkeeping rows of a batch's stores, written in one statement per table.

Besides its memory row, a store writes three bookkeeping rows: its request id
with its result (``storage.requests``), its change in the feed, and its usage
(``journal``). Written store by store, those three statements and the quota's
read were a large share of a store's SQL. So on SQLite a batch's stores note
them here instead, and the batch writes them before its commit and before any op
that is not a store into the sender's personal space (it may read them, or
record a change that must come after theirs), always outside the ops'
savepoints, as it does the word index (``words``). A store's own notes are kept
only if it succeeds (``succeeded``).

The request ids a batch's stores carry are read at once, before the first of
them, and again after each write of the notes (an op between may have claimed
one): an id already applied answers with its first result. SQLite's single
writer makes that read final until the commit; on PostgreSQL, where agents
write side by side, stores keep claiming their ids one by one (see
``storage.requests``), and nothing here is used.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from spade_memory.base_memory.store import journal
from spade_memory.protocol.ops import Place, Record
from spade_memory.storage import requests
from spade_memory.storage.connection import Database
from spade_memory.storage.statements import placeholders

Usage = dict[str, tuple[int, int]]
"""(memories, bytes) by usage subject (``owner:JID`` or ``space:KEY``)."""


@dataclass
class Notes:
    """Bookkeeping rows not written yet."""

    claims: list[tuple[str, str, str, float]] = field(default_factory=list)
    """Applied request ids: (owner, request id, result, when)."""
    results: dict[str, str] = field(default_factory=dict)
    """The result of each of ``claims`` by request id (a repeat in the batch gets it)."""
    changes: list[tuple[str, str, str, str]] = field(default_factory=list)
    """Changes of personal spaces: (kind, memory id, actor, author)."""
    usage: Usage = field(default_factory=dict)
    """What the notes add to each subject's usage."""

    def absorb(self, other: Notes) -> None:
        self.claims += other.claims
        self.results.update(other.results)
        self.changes += other.changes
        for subject, (memories, size) in other.usage.items():
            held, held_bytes = self.usage.get(subject, (0, 0))
            self.usage[subject] = (held + memories, held_bytes + size)


class Ledger:
    """One batch's notes: what its stores that succeeded noted, what the store being
    applied notes, and the request ids the batch's stores found already applied."""

    def __init__(self, log: requests.RequestLog) -> None:
        self._log = log
        self.kept = Notes()
        self.current = Notes()
        self._applied: dict[str, str] | None = None
        self._written: Usage = {}
        """Usage as read from the file since the notes were last written."""

    def begin(self) -> None:
        """A new op: the notes of the last one were absorbed or dropped."""
        self.current = Notes()

    def succeeded(self) -> None:
        self.kept.absorb(self.current)
        self.current = Notes()

    async def earlier(
        self, db: Database, owner: str, request_id: str | None, batch: Sequence[str]
    ) -> str | None:
        """The result (JSON) recorded for ``request_id``, in the file or earlier in the
        batch (or in the run of stores being applied); None if it was not applied. The
        first call after each ``write`` reads the ids of ``batch`` (the request ids of the
        batch's stores) in one statement."""
        if request_id is None:
            return None
        if self._applied is None:
            self._applied = await _applied(db, self._log.table, owner, batch)
        return (
            self._applied.get(request_id)
            or self.kept.results.get(request_id)
            or self.current.results.get(request_id)
        )

    def claim(self, owner: str, request_id: str | None, result: Record) -> None:
        if request_id is not None:
            answer = result.model_dump_json()
            self.current.claims.append((owner, request_id, answer, time.time()))
            self.current.results[request_id] = answer

    def change(self, kind: str, memory_id: str, actor: str, author: str) -> None:
        self.current.changes.append((kind, memory_id, actor, author))

    def use(self, author: str, place: Place, memories: int, size: int) -> None:
        for subject in journal.usage_subjects(author, place):
            held, held_bytes = self.current.usage.get(subject, (0, 0))
            self.current.usage[subject] = (held + memories, held_bytes + size)

    async def held(self, db: Database, subject: str) -> tuple[int, int]:
        """``subject``'s usage with what the batch's notes so far add to it; the file is
        read once per subject until the notes are written (an op other than a store may
        then change it)."""
        if subject not in self._written:
            self._written[subject] = await journal.usage_of(db, subject)
        written = self._written[subject]
        kept = self.kept.usage.get(subject, (0, 0))
        current = self.current.usage.get(subject, (0, 0))
        return written[0] + kept[0] + current[0], written[1] + kept[1] + current[1]

    async def write(self, db: Database) -> None:
        """Write what the stores that succeeded noted (in the caller's transaction)."""
        notes, self.kept = self.kept, Notes()
        self._written.clear()  # the ops until the next store may change usage ...
        self._applied = None  # ... or claim request ids
        await self._log.claim_all(db, notes.claims)
        await journal.record_personal(db, notes.changes)
        await journal.add_usage(db, notes.usage)


async def _applied(db: Database, table: str, owner: str, ids: Sequence[str]) -> dict[str, str]:
    """The results of the already applied ids among ``ids``, by id."""
    if not ids:
        return {}
    marks = placeholders(ids)
    rows = await db.execute_fetchall(
        f"SELECT request_id, result FROM {table} WHERE owner = ? AND request_id IN ({marks})",
        (owner, *ids),
    )
    return {str(request_id): str(result) for request_id, result in rows}
