"""How many bytes a long-term memory holds against the byte quotas.

A memory holds the texts it was given — content, context, tags and metadata (as the
JSON stored) and source — and the same texts of every earlier version kept for
``memory_history``. Counting content and context alone let a writer hold many times
its quota in metadata, tags and versions. What is counted is what the row stores, in
UTF-8 bytes, so the figure Python computes for a new memory is the one SQL reads back
(``ROW_BYTES``), and a recount (``recount_usage``) lands where the counters did.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spade_memory.protocol.memories import StoreMemory
from spade_memory.protocol.tags import dumps
from spade_memory.storage.connection import Database
from spade_memory.storage.postgres import Dialect, dialect

if TYPE_CHECKING:
    from spade_memory.base_memory.store.imports import ImportMemory

_TEXTS = ("content", "context", "tags", "metadata", "source")
"""The columns counted, in ``memories`` and ``memory_versions`` alike."""
_LENGTH: dict[Dialect, str] = {
    "sqlite": "length(CAST({} AS BLOB))",
    "postgresql": "octet_length({})",
}


def row_bytes(engine: Dialect, alias: str = "") -> str:
    """SQL for the bytes one row of ``memories`` or ``memory_versions`` holds (``alias``:
    its table's name or alias in the statement, if any)."""
    prefix = f"{alias}." if alias else ""
    return " + ".join(
        f"COALESCE({_LENGTH[engine].format(prefix + column)}, 0)" for column in _TEXTS
    )


def size_of(*texts: str | None) -> int:
    """The UTF-8 bytes of ``texts`` together (None counts 0)."""
    return sum(len(text.encode("utf-8", "surrogatepass")) for text in texts if text)


def new_memory_bytes(op: StoreMemory | ImportMemory) -> int:
    """What the memory a store (or an import) adds holds, as its row will store it."""
    if not isinstance(op, StoreMemory):  # spade_llm's memories have nothing else
        return size_of(op.content, op.context)
    tags = dumps(op.tags) if op.tags else None
    metadata = dumps(op.metadata) if op.metadata else None
    return size_of(op.content, op.context, tags, metadata, op.source)


async def held(db: Database, seq: int) -> int:
    """The bytes memory ``seq`` holds now: its row and every version kept of it (0 when
    there is no such memory)."""
    engine = dialect(db)
    rows = await db.execute_fetchall(
        f"SELECT {row_bytes(engine, 'm')} + COALESCE((SELECT SUM({row_bytes(engine, 'v')})"
        " FROM memory_versions v WHERE v.memory_id = m.id), 0) FROM memories m WHERE m.seq = ?",
        (seq,),
    )
    return next((int(size) for (size,) in rows), 0)


async def held_in_space(db: Database, key: str) -> list[tuple[str, int, int]]:
    """(author, memories, bytes with their versions) of each author of the space ``key``."""
    engine = dialect(db)
    rows = await db.execute_fetchall(
        f"SELECT m.owner, COUNT(*), SUM({row_bytes(engine, 'm')}"
        f" + COALESCE((SELECT SUM({row_bytes(engine, 'v')}) FROM memory_versions v"
        " WHERE v.memory_id = m.id), 0)) FROM memories m WHERE m.space = ? GROUP BY m.owner",
        (key,),
    )
    return [(str(author), int(count), int(size or 0)) for author, count, size in rows]


async def recount_usage(db: Database) -> None:
    """Count every author's and every shared space's usage again from what is stored:
    the migration that makes the quotas count tags, metadata, source and versions of the
    memories stored before they did."""
    engine = dialect(db)
    each = (
        f"SELECT m.owner AS owner, m.space AS space, {row_bytes(engine, 'm')}"
        f" + COALESCE((SELECT SUM({row_bytes(engine, 'v')}) FROM memory_versions v"
        " WHERE v.memory_id = m.id), 0) AS size FROM memories m"
    )
    await db.execute("DELETE FROM usage")
    await db.execute(
        "INSERT INTO usage (subject, memories, bytes) SELECT 'owner:' || owner, COUNT(*),"
        f" SUM(size) FROM ({each}) AS held GROUP BY owner"
    )
    await db.execute(  # a personal memory's space is its author's JID (``Place``)
        "INSERT INTO usage (subject, memories, bytes) SELECT 'space:' || space, COUNT(*),"
        f" SUM(size) FROM ({each}) AS held WHERE space <> owner GROUP BY space"
    )
