"""Supersedes in the store: the memory a new one replaces, found or named, closed.

A store looks for what it replaces among the current memories of its place about the
same subject (``subject_key``, an index): each one's frame is compared with the new
one's (``facts.conflicts``). A confident replacement that the sender may change (its
own, or anyone's where it is an admin: the rule of update) is superseded; the others
are reported to the caller, who decides.
"""

from __future__ import annotations

from spade_memory.base_memory.facts.conflicts import replacement
from spade_memory.base_memory.facts.frames import frame_of
from spade_memory.base_memory.graph import links as graph_links
from spade_memory.base_memory.store.rows import Row, select
from spade_memory.protocol.errors import BadRequest, Conflict, ItemNotFound, NotAuthorized
from spade_memory.protocol.memories import StoreMemory
from spade_memory.protocol.ops import Place
from spade_memory.protocol.validity import PossibleConflict
from spade_memory.storage.connection import Database

CURRENT = (
    "m.superseded_by IS NULL AND (m.valid_to IS NULL OR m.valid_to > ?)"
    " AND (m.expires_at IS NULL OR m.expires_at > ?)"
)
"""A memory current now (now, now): not replaced, not past its validity, not expired."""
CANDIDATES = 50
"""Current memories about the same subject a store compares itself with, newest first."""


async def detect(
    db: Database, op: StoreMemory, place: Place, sender: str, now: float
) -> tuple[Row | None, list[PossibleConflict]]:
    """Returns the memory ``op`` supersedes on its own (None: none) and the likely
    conflicts it only reports, by its ``conflicts`` policy. A memory that starts being
    true before the one it would replace (history told out of order) only reports it."""
    frame = frame_of(op.content)
    if frame is None or op.conflicts == "off":
        return None, []
    rows = await select(
        db,
        f"WHERE m.space = ? AND m.subject_key = ? AND {CURRENT} ORDER BY m.created_at DESC LIMIT ?",
        (place.key, frame.key, now, now, CANDIDATES),
    )
    chosen: Row | None = None
    conflicts: list[PossibleConflict] = []
    for row in rows:
        old = frame_of(row.content)
        if old is None or (found := replacement(frame, old)) is None:
            continue
        allowed = row.owner == sender or place.may_change_any
        starts = None if op.valid_from is None else op.valid_from.timestamp()
        later = starts is None or row.valid_from is None or starts > row.valid_from
        if chosen is None and found.confident and allowed and later and op.conflicts == "auto":
            chosen = row
            continue
        conflicts.append(
            PossibleConflict(
                id=row.id,
                content=row.content,
                subject=f"{old.subject} · {old.attribute}",
                was=old.value,
                now=frame.value,
                confident=found.confident,
            )
        )
    return chosen, conflicts


def named(row: Row) -> Row:
    """Returns ``row``, a memory a store names in ``supersedes``; raises ``Conflict``
    when another memory superseded it already."""
    if row.superseded_by is not None:
        raise Conflict(
            f"memory {row.id!r} was already superseded by {row.superseded_by!r}: supersede that one"
        )
    return row


async def successor(db: Database, memory_id: str, place: Place, sender: str, now: float) -> Row:
    """Returns the current memory ``memory_id`` of ``place`` that a supersede names
    ``by``, which the link changes too (it names the older one, and starts where the
    older ends). Raises ``ItemNotFound`` when the place has none, ``NotAuthorized`` when
    ``sender`` may not change it (another member's, and ``sender`` no admin)."""
    rows = await select(
        db, f"WHERE m.id = ? AND m.space = ? AND {CURRENT}", (memory_id, place.key, now, now)
    )
    if not rows:
        raise ItemNotFound(f"no current memory {memory_id!r} to supersede with")
    if rows[0].owner != sender and not place.may_change_any:
        raise NotAuthorized(
            f"memory {memory_id!r} was stored by {rows[0].owner}; supersede with it only"
            f" as its author or an admin of {place.name!r} (or give the new content)"
        )
    return rows[0]


def starts(old: Row, valid_from: float | None, now: float) -> float:
    """When the new memory starts being valid (its ``valid_from``, else now); raises
    ``BadRequest`` when that is not after the old one started."""
    start = now if valid_from is None else valid_from
    if old.valid_from is not None and start <= old.valid_from:
        raise BadRequest(
            f"valid_from must come after the start of memory {old.id!r}, which it supersedes"
        )
    return start


async def close(db: Database, old: Row, new_id: str, start: float, now: float) -> None:
    """Close ``old``'s validity where the new memory starts (an earlier end kept) and
    name the new one; it was retired ``now`` (for ``known_at``), and names nothing in
    the graph now."""
    await db.execute(
        "UPDATE memories SET valid_to = CASE WHEN valid_to IS NULL OR valid_to > ? THEN ?"
        " ELSE valid_to END, superseded_by = ?, retired_at = ?, retired_reason = 'superseded'"
        " WHERE seq = ?",
        (start, start, new_id, now, old.seq),
    )
    await graph_links.unlink(db, [old.seq])


CLOSED_BY_IT = "(valid_to = retired_at OR valid_to = ?)"
"""A replaced memory's validity ended where its replacement's began (``close``: at the
replacement's start, or when it was replaced), not at an earlier end of its own."""


async def reopen(db: Database, gone: Row, graph: bool) -> list[tuple[str, str]]:
    """The memories ``gone`` replaced (superseded, or merged into it), once ``gone`` is
    deleted: replaced by what replaced ``gone``, if something did, else current again
    (their validity reopened where ``gone`` closed it, their links made again if the
    store keeps the ``graph``). A delete leaves no memory pointing at nothing. Returns
    the id and author of each memory changed."""
    if gone.superseded_by is None:
        current = list(
            await db.execute_fetchall(
                "UPDATE memories SET superseded_by = NULL, retired_at = NULL,"
                " retired_reason = NULL,"
                f" valid_to = CASE WHEN {CLOSED_BY_IT} THEN NULL ELSE valid_to END"
                " WHERE superseded_by = ? RETURNING id, owner, seq, space, content, context",
                (gone.valid_from, gone.id),
            )
        )
        if graph:
            await graph_links.link(
                db, [(int(seq), str(space), str(text), x) for _, _, seq, space, text, x in current]
            )
        return [(str(memory_id), str(owner)) for memory_id, owner, *_ in current]
    # the middle of a chain: what it replaced now ends where it ended
    rows = list(
        await db.execute_fetchall(
            "UPDATE memories SET superseded_by = ?,"
            f" valid_to = CASE WHEN {CLOSED_BY_IT} THEN ? ELSE valid_to END"
            " WHERE superseded_by = ? RETURNING id, owner",
            (gone.superseded_by, gone.valid_from, gone.valid_to, gone.id),
        )
    )
    replaced = gone.supersedes or next((str(row[0]) for row in rows), None)
    await db.execute(
        "UPDATE memories SET supersedes = ? WHERE id = ? AND supersedes = ?",
        (replaced, gone.superseded_by, gone.id),
    )
    return [(str(memory_id), str(owner)) for memory_id, owner in rows]


async def reinstate(db: Database, old: Row, graph: bool) -> str | None:
    """Make ``old``, a memory replaced by another, current again: its validity reopened
    where the replacement closed it, its links made again if the store keeps the
    ``graph``; the replacement stays current but no longer names it. Returns the
    replacement's id (None: it is gone)."""
    newer = await select(db, "WHERE m.id = ?", (old.superseded_by,))
    starts = newer[0].valid_from if newer else None
    await db.execute(
        "UPDATE memories SET superseded_by = NULL, retired_at = NULL, retired_reason = NULL,"
        f" valid_to = CASE WHEN {CLOSED_BY_IT} THEN NULL ELSE valid_to END WHERE seq = ?",
        (starts, old.seq),
    )
    if graph:
        await graph_links.link(db, [(old.seq, old.space, old.content, old.context)])
    if not newer:
        return None
    await db.execute(
        "UPDATE memories SET supersedes = NULL WHERE seq = ? AND supersedes = ?",
        (newer[0].seq, old.id),
    )
    return newer[0].id


async def chain(db: Database, memory_id: str, space: str, column: str) -> list[str]:
    """The ids reached from ``memory_id`` by following ``column`` (``supersedes`` or
    ``superseded_by``) within ``space``, nearest first (at most 100)."""
    assert column in ("supersedes", "superseded_by")
    found: list[str] = []
    current = memory_id
    while len(found) < 100:
        rows = list(
            await db.execute_fetchall(
                f"SELECT {column} FROM memories WHERE id = ? AND space = ?", (current, space)
            )
        )
        if not rows or rows[0][0] is None or rows[0][0] in found:
            break
        current = str(rows[0][0])
        found.append(current)
    return found
