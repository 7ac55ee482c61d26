"""The graph's table: one row per (space, entity, memory), written with the memory.

``memory_entities`` holds each link with the entity's kind, its name as written (NULL
when it is its key, as most terms are: a link costs fewer bytes) and whether it is the
memory's subject; an entity is its key within a space, so nothing of
one space is filed under another's. Links go with their memory (a foreign key that
cascades), are written once per batch beside the word index, and are made again when a
memory's text changes. Stores made before the graph are linked when opened.

A store opened without the graph (``--no-entity-graph``) writes no links and notes so in
``graph_gaps``; opened with it again, it links what was stored or changed meanwhile.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone

from spade_memory.base_memory.graph.extract import mentions
from spade_memory.storage.connection import Database
from spade_memory.storage.postgres import dialect

log = logging.getLogger(__name__)

CREATE = (
    """CREATE TABLE IF NOT EXISTS memory_entities (
        space TEXT NOT NULL,
        key TEXT NOT NULL,
        seq {seq} NOT NULL REFERENCES memories(seq) ON DELETE CASCADE,
        kind TEXT NOT NULL,
        name TEXT,
        subject SMALLINT NOT NULL DEFAULT 0,
        PRIMARY KEY (space, key, seq)
    ){without_rowid}""",
    # what a memory names, read from the index alone (it holds the key columns too)
    "CREATE INDEX IF NOT EXISTS memory_entities_seq ON memory_entities(seq, kind)",
)
"""The table on either engine (``seq``: the type of ``memories.seq``)."""

INSERT = (
    "INSERT INTO memory_entities (space, key, seq, kind, name, subject)"
    " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
)

Unlinked = tuple[int, str, str, str | None]
"""A memory to link: (seq, space, content, context)."""


def rows_of(memories: Iterable[Unlinked]) -> list[tuple[str, str, int, str, str | None, int]]:
    """The link rows of ``memories``."""
    return [
        (space, m.key, seq, m.kind, None if m.name == m.key else m.name[:200], int(m.subject))
        for seq, space, content, context in memories
        for m in mentions(content, context)
        if m.key
    ]


async def link(db: Database, memories: Sequence[Unlinked]) -> None:
    """Write the links of new memories (in the caller's transaction)."""
    if memories:
        await db.executemany(INSERT, rows_of(memories))


async def relink(db: Database, memory: Unlinked, graph: bool = True) -> None:
    """Make a changed memory's links again from its new text (or drop them, in a store
    without the graph: it is linked when the graph is back)."""
    await db.execute("DELETE FROM memory_entities WHERE seq = ?", (memory[0],))
    if graph:
        await link(db, [memory])


async def create(db: Database) -> None:
    """The migration that adds the graph, and links every memory already stored."""
    sqlite = dialect(db) == "sqlite"
    seq, without_rowid = ("INTEGER", " WITHOUT ROWID") if sqlite else ("BIGINT", "")
    await db.execute(CREATE[0].format(seq=seq, without_rowid=without_rowid))
    await db.execute(CREATE[1])
    await link_unlinked(db)


async def create_gaps(db: Database) -> None:
    """The migration that adds ``graph_gaps``: a row while memories may lack links."""
    await db.execute("CREATE TABLE IF NOT EXISTS graph_gaps (since TEXT NOT NULL)")


async def open_with(db: Database, graph: bool) -> None:
    """At open: note that links may go missing (``graph`` off), or make those that went
    missing while it was off (the scan runs once per time the graph was off)."""
    ((since,),) = await db.execute_fetchall("SELECT MIN(since) FROM graph_gaps")
    if not graph and since is None:
        now = datetime.now(timezone.utc).isoformat(timespec="seconds")
        await db.execute("INSERT INTO graph_gaps (since) VALUES (?)", (now,))
    elif graph and since is not None:
        linked = await link_unlinked(db)
        await db.execute("DELETE FROM graph_gaps")
        log.info("entity graph off since %s: linked %d memories stored meanwhile", since, linked)


async def link_unlinked(db: Database) -> int:
    """Link every memory that names nothing in the graph yet, 10,000 at a time; returns
    how many were linked."""
    after, count = -1, 0
    while rows := list(
        await db.execute_fetchall(
            "SELECT seq, space, content, context FROM memories WHERE seq > ?"
            " AND NOT EXISTS (SELECT 1 FROM memory_entities e WHERE e.seq = memories.seq)"
            " ORDER BY seq LIMIT 10000",
            (after,),
        )
    ):
        await link(db, [(int(s), str(space), str(c), x) for s, space, c, x in rows])
        after, count = rows[-1][0], count + len(rows)
    return count
