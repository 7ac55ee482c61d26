"""What every committed write of the long-term store leaves behind, in its own transaction.

- the **change feed** (``changes``): every store, update and delete, for the mirror
  (the beads sync agent), which confirms what it mirrored and the store forgets it;
- the **space journal** (``space_changes``): the writes in shared spaces, for their
  subscribers, who catch up from any cursor; kept ``JOURNAL_DAYS`` days, after which a
  cursor older than what is kept is answered as incomplete;
- the **usage** of every author and every space (memories, and the bytes they hold
  with their kept versions: ``sizes``), which the quotas are checked against without
  counting rows.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple, cast

from spade_memory.base_memory.graph.extract import names_in
from spade_memory.protocol.errors import ResourceConstraint
from spade_memory.protocol.limits import Limits
from spade_memory.protocol.memories import Change, ChangeKind, Memory
from spade_memory.protocol.ops import Place
from spade_memory.storage.connection import Database
from spade_memory.storage.postgres import dialect
from spade_memory.storage.quotas import check_bytes

FEED_LOCK = 0x5BADE_FEED
"""PostgreSQL's advisory lock that a transaction takes before it numbers a change: with
several agents writing, numbers taken in one order could commit in another, and a reader
of the feed that has seen change 11 would never see a 10 committed after it."""
JOURNAL_DAYS = 30
"""How long a shared space's changes stay in its journal for subscribers to catch up."""

CREATE = (
    "ALTER TABLE changes ADD COLUMN space TEXT",
    "ALTER TABLE changes ADD COLUMN author TEXT",
    """CREATE TABLE space_changes (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        space TEXT NOT NULL,
        kind TEXT NOT NULL,
        memory_id TEXT NOT NULL,
        author TEXT NOT NULL,
        actor TEXT NOT NULL,
        at REAL NOT NULL
    )""",
    "CREATE INDEX space_changes_space ON space_changes(space, seq)",
    """CREATE TABLE space_horizons (
        space TEXT PRIMARY KEY,
        seq INTEGER NOT NULL
    ) WITHOUT ROWID""",
    """CREATE TABLE usage (
        subject TEXT PRIMARY KEY,
        memories INTEGER NOT NULL,
        bytes INTEGER NOT NULL
    ) WITHOUT ROWID""",
    "INSERT INTO usage SELECT 'owner:' || owner, COUNT(*),"
    " SUM(length(CAST(content AS BLOB)) + COALESCE(length(CAST(context AS BLOB)), 0))"
    " FROM memories GROUP BY owner",
)


@dataclass(frozen=True)
class SpaceEvent:
    """A committed write in a shared space, for its subscribers."""

    seq: int
    """Its place in the space's journal (the cursor ``changes_since`` takes)."""
    space: str
    """The space's key (its id)."""
    kind: ChangeKind
    memory_id: str
    author: str
    actor: str
    memory: Memory | None = None
    """The memory as stored (None when deleted)."""
    name: str = ""
    """The space's name."""
    reason: str | None = None
    """Why, when not the write itself: ``expired``, ``forgotten``, ``merged``."""

    def change(self) -> Change:
        """The event as subscribers receive it."""
        return Change(
            seq=self.seq, kind=self.kind, memory_id=self.memory_id, owner=self.actor,
            memory=self.memory, space=self.name, author=self.author, reason=self.reason,
            entities=names_in(self.memory),
        )  # fmt: skip


async def record(
    db: Database,
    kind: ChangeKind,
    memory_id: str,
    *,
    actor: str,
    author: str,
    place: Place,
    reason: str | None = None,
) -> SpaceEvent | None:
    """Record one committed write: in the change feed, and in a shared space's journal
    (``reason``: why a memory was deleted, when not by a delete).

    Returns the journal's event for a shared space (None for a personal one).
    """
    space = None if place.personal else place.key
    if dialect(db) == "postgresql":  # numbers in the order writes commit (see FEED_LOCK)
        await db.execute("SELECT pg_advisory_xact_lock(?)", (FEED_LOCK,))
    await db.execute(
        "INSERT INTO changes (kind, memory_id, owner, space, author, reason)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (kind, memory_id, actor, space, author, reason),
    )
    if space is None:
        return None
    ((seq,),) = await db.execute_fetchall(
        "INSERT INTO space_changes (space, kind, memory_id, author, actor, at)"
        " VALUES (?, ?, ?, ?, ?, ?) RETURNING seq",
        (space, kind, memory_id, author, actor, time.time()),
    )
    return SpaceEvent(int(seq), space, kind, memory_id, author, actor, reason=reason)


async def forget_old_events(db: Database) -> None:
    """Drop journal entries older than ``JOURNAL_DAYS``, remembering per space how far
    (its horizon): a catch-up from before it is told it is incomplete."""
    gone = await db.execute_fetchall(
        "DELETE FROM space_changes WHERE at < ? RETURNING space, seq",
        (time.time() - JOURNAL_DAYS * 86400,),
    )
    horizons: dict[str, int] = {}
    for space, seq in gone:
        horizons[str(space)] = max(horizons.get(str(space), 0), int(seq))
    await db.executemany(
        "INSERT INTO space_horizons VALUES (?, ?) ON CONFLICT (space) DO UPDATE"
        " SET seq = CASE WHEN excluded.seq > space_horizons.seq THEN excluded.seq"
        " ELSE space_horizons.seq END",
        list(horizons.items()),
    )


class Entry(NamedTuple):
    """One change of a shared space's journal."""

    seq: int
    kind: ChangeKind
    memory_id: str
    author: str
    actor: str
    """The member who made the change."""


async def journal(
    db: Database, space: str, after: int, limit: int
) -> tuple[list[Entry], int, bool]:
    """The space's changes after ``after``, oldest first, the newest seq of the space,
    and whether nothing was forgotten since."""
    rows = await db.execute_fetchall(
        "SELECT seq, kind, memory_id, author, actor FROM space_changes"
        " WHERE space = ? AND seq > ? ORDER BY seq LIMIT ?",
        (space, after, limit),
    )
    newest = await db.execute_fetchall(
        "SELECT max(seq) FROM space_changes WHERE space = ?", (space,)
    )
    horizon = await db.execute_fetchall("SELECT seq FROM space_horizons WHERE space = ?", (space,))
    forgotten = max((int(seq) for (seq,) in horizon), default=0)
    last = max([forgotten, *(int(seq) for (seq,) in newest if seq is not None)])
    found = [
        Entry(int(seq), cast(ChangeKind, str(kind)), str(memory_id), str(author), str(actor))
        for seq, kind, memory_id, author, actor in rows
    ]
    return found, last, after >= forgotten


async def newest_event(db: Database, space: str) -> int:
    """The newest seq of the space's journal (0 when it has none)."""
    _, last, _ = await journal(db, space, 2**62, 1)
    return last


# -- usage and quotas --------------------------------------------------------------


async def use(db: Database, author: str, place: Place, memories: int, size: int) -> None:
    """Add ``memories`` and ``size`` bytes (negative to take away) to the author's usage
    and, in a shared space, to the space's."""
    await add_usage(db, {subject: (memories, size) for subject in usage_subjects(author, place)})


def usage_subjects(author: str, place: Place) -> list[str]:
    """The usage subjects a write of ``author`` in ``place`` counts against."""
    return [f"owner:{author}"] + ([] if place.personal else [f"space:{place.key}"])


async def add_usage(db: Database, added: Mapping[str, tuple[int, int]]) -> None:
    """Add (memories, bytes) to each subject's usage."""
    if not added:
        return
    await db.executemany(
        "INSERT INTO usage VALUES (?, ?, ?) ON CONFLICT (subject) DO UPDATE SET"
        " memories = usage.memories + excluded.memories, bytes = usage.bytes + excluded.bytes",
        [(subject, memories, size) for subject, (memories, size) in added.items()],
    )


async def record_personal(db: Database, changes: Sequence[tuple[str, str, str, str]]) -> None:
    """Record committed writes in personal spaces (kind, memory id, actor, author) in the
    change feed, in one statement: what ``record`` does for each, on SQLite (a batch's
    ``ledger``; PostgreSQL's feed needs ``record``'s lock)."""
    if changes:
        await db.executemany(
            "INSERT INTO changes (kind, memory_id, owner, author) VALUES (?, ?, ?, ?)", changes
        )


async def usage_of(db: Database, subject: str) -> tuple[int, int]:
    """(memories, bytes) held by ``owner:JID`` or ``space:KEY``."""
    rows = await db.execute_fetchall(
        "SELECT memories, bytes FROM usage WHERE subject = ?", (subject,)
    )
    return next(((int(m), int(b)) for m, b in rows), (0, 0))


async def check_quota(
    db: Database,
    limits: Limits,
    author: str,
    place: Place,
    memories: int,
    size: int,
    held: Callable[[Database, str], Awaitable[tuple[int, int]]] = usage_of,
) -> None:
    """Raise ``ResourceConstraint`` with the figures when adding ``memories`` and ``size``
    bytes would take the author or the space over its quota (as ``held`` reads a
    subject's usage: a batch's ``ledger`` adds what it has not written yet)."""
    bounds: list[tuple[str, str, int, int]] = [
        (f"owner:{author}", author, limits.max_memories_per_owner, limits.max_bytes_per_owner)
    ]
    if not place.personal:
        bounds.append((
            f"space:{place.key}", f"space {place.name!r}",
            place.max_memories or limits.max_memories_per_space,
            place.max_bytes or limits.max_bytes_per_space,
        ))  # fmt: skip
    for subject, who, most, most_bytes in bounds:
        held_memories, held_bytes = await held(db, subject)
        if memories > 0 and held_memories + memories > most:
            raise ResourceConstraint(f"quota: {who} holds {held_memories:,} of {most:,} memories")
        check_bytes(who, held_bytes, most_bytes, size)


async def forget_space(db: Database, key: str, authors: Sequence[tuple[str, int, int]]) -> None:
    """A deleted space's usage and journal go; its authors' usage gives back what it held
    ((author, memories, bytes) each)."""
    await db.execute("DELETE FROM usage WHERE subject = ?", (f"space:{key}",))
    await db.executemany(
        "UPDATE usage SET memories = memories - ?, bytes = bytes - ? WHERE subject = ?",
        [(memories, size, f"owner:{author}") for author, memories, size in authors],
    )
    await db.execute("DELETE FROM space_changes WHERE space = ?", (key,))
    await db.execute("DELETE FROM space_horizons WHERE space = ?", (key,))
