"""The word (FTS5) index of new memories, written in one statement per batch.

Indexing each new memory in a statement of its own, as an insert trigger did,
took most of what a store's insert cost, since FTS5 writes out what it has
pending at such statement boundaries; the same rows in one statement for the
batch cost a small part of that. So a store notes the texts of the memories it
inserts, and the batch indexes them before its commit, and before any op of the
same batch that reads or changes the index (a search, an update, a deletion),
always outside the ops' savepoints. A changed or deleted memory keeps its
triggers: they need its old text, and they are rare.
"""

from __future__ import annotations

from spade_memory.base_memory.graph import links as graph_links
from spade_memory.storage.connection import Database
from spade_memory.storage.postgres import dialect

DROP_INSERT_TRIGGER = "DROP TRIGGER IF EXISTS memories_ai"
"""The migration that hands new memories' indexing to ``index``."""

Unindexed = list[tuple[int, str, str | None, str]]
"""New memories not yet in the word index: (seq, content, context, space) each."""


async def index(db: Database, rows: Unindexed, graph: bool = True) -> None:
    """Add ``rows`` to the word index and, when the store keeps it, to the entity graph
    (in the caller's transaction), and empty the list. On PostgreSQL the word index is a
    generated column, written with the row."""
    if rows and dialect(db) == "sqlite":
        await db.executemany(
            "INSERT INTO memories_fts (rowid, content, context) VALUES (?, ?, ?)",
            [(seq, content, context) for seq, content, context, _ in rows],
        )
    if graph:  # not those a later store of the batch superseded: they name nothing
        replaced = await graph_links.replaced(db, [seq for seq, *_ in rows])
        await graph_links.link(
            db,
            [(seq, space, text, x) for seq, text, x, space in rows if seq not in replaced],
        )
    rows.clear()
