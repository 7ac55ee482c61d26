"""What each owner and each shared space holds at the interaction memory agent, in bytes,
against its byte budget (``quotas``).

The subject is a place's key: an owner's bare JID (its notes, its personal sessions,
its folder of the context directory) or a shared space's id (its sessions and its
knowledge folder). Each has two figures: ``bytes``, its notes (text and conversation
id) and working memories (the JSON document) as stored, kept by the store's writes in
their own transactions; and ``files``, its folder of the context directory, as the
folder's index last measured it (``set_files``; a file write first reserves what it
adds, ``reserve_files``, which the next measure replaces by what is on disk).
"""

from __future__ import annotations

from collections.abc import Mapping

from spade_memory.protocol.limits import Limits
from spade_memory.protocol.ops import Place
from spade_memory.storage.connection import Database
from spade_memory.storage.postgres import Dialect, dialect
from spade_memory.storage.quotas import byte_budget, check_bytes

TABLE = "interaction_usage"
"""Its table (the long-term store's ``usage`` may share a PostgreSQL database)."""
CREATE = f"""CREATE TABLE {TABLE} (
    subject TEXT PRIMARY KEY,
    bytes BIGINT NOT NULL DEFAULT 0,
    files BIGINT NOT NULL DEFAULT 0
)"""
_LENGTH: dict[Dialect, str] = {
    "sqlite": "length(CAST({} AS BLOB))",
    "postgresql": "octet_length({})",
}


def note_bytes(engine: Dialect) -> str:
    """SQL for what a row of ``notes`` holds."""
    return f"{_LENGTH[engine].format('content')} + {_LENGTH[engine].format('conversation_id')}"


def document_bytes(engine: Dialect) -> str:
    """SQL for what a row of ``working_memories`` holds."""
    return _LENGTH[engine].format("document")


def size_of(*texts: str) -> int:
    """The UTF-8 bytes of ``texts`` together."""
    return sum(len(text.encode("utf-8", "surrogatepass")) for text in texts)


async def held(db: Database, subject: str) -> tuple[int, int]:
    """(bytes in the store, bytes in files) of ``subject``."""
    rows = await db.execute_fetchall(
        f"SELECT bytes, files FROM {TABLE} WHERE subject = ?", (subject,)
    )
    return next(((int(b), int(f)) for b, f in rows), (0, 0))


async def check(db: Database, limits: Limits, place: Place, needed: int) -> None:
    """Raise ``ResourceConstraint`` with the figures when ``needed`` more bytes would take
    ``place``'s owner (or shared space) over its byte budget."""
    if needed <= 0:
        return
    who, most = byte_budget(place, limits)
    stored, files = await held(db, place.key)
    check_bytes(who, stored + files, most, needed)


async def add(db: Database, added: Mapping[str, int]) -> None:
    """Add bytes (negative: take away) to what each subject holds in the store."""
    rows = [(subject, size) for subject, size in added.items() if size]
    if rows:
        await db.executemany(
            f"INSERT INTO {TABLE} (subject, bytes) VALUES (?, ?)"
            f" ON CONFLICT (subject) DO UPDATE SET bytes = {TABLE}.bytes + excluded.bytes",
            rows,
        )


async def set_files(db: Database, subject: str, size: int) -> None:
    """``subject``'s folder holds ``size`` bytes, as measured."""
    await db.execute(
        f"INSERT INTO {TABLE} (subject, files) VALUES (?, ?)"
        " ON CONFLICT (subject) DO UPDATE SET files = excluded.files",
        (subject, size),
    )


async def reserve_files(db: Database, limits: Limits, place: Place, grown: int) -> None:
    """Count ``grown`` more bytes in the folder of ``place`` before a file is written.

    Raises ``ResourceConstraint`` (nothing counted) when that would cross its budget."""
    await check(db, limits, place, grown)
    await db.execute(
        f"INSERT INTO {TABLE} (subject, files) VALUES (?, ?)"
        f" ON CONFLICT (subject) DO UPDATE SET files = {TABLE}.files + excluded.files",
        (place.key, grown),
    )


async def forget(db: Database, subject: str) -> None:
    """``subject`` holds nothing any more (its notes, sessions and files were deleted)."""
    await db.execute(f"DELETE FROM {TABLE} WHERE subject = ?", (subject,))


async def recount(db: Database) -> None:
    """Count what every subject holds in the store from what is stored (the migration
    that brought the table; files are measured as their folders are next read)."""
    engine = dialect(db)
    await db.execute(f"DELETE FROM {TABLE}")
    await db.execute(
        f"INSERT INTO {TABLE} (subject, bytes) SELECT subject, SUM(size) FROM ("
        f" SELECT owner AS subject, {note_bytes(engine)} AS size FROM notes"
        f" UNION ALL SELECT owner, {document_bytes(engine)} FROM working_memories"
        ") AS stored GROUP BY subject"
    )
