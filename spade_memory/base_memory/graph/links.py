"""The graph's table: one row per (space, entity, memory), written with the memory.

``memory_entities`` holds each link with the entity's kind, its name as written (NULL
when it is its key, as most terms are: a link costs fewer bytes) and whether it is the
memory's subject; an entity is its key within a space, so nothing of
one space is filed under another's. A space is written in a link as a number
(``entity_spaces``): its key repeated in every link and in the index by memory took
more than half of a link's bytes, and writing them most of a store's cost of its links
(``benchmarks.graph``). Links go with their memory (a foreign key that cascades), are
written once per batch beside the word index, and are made again when a memory's text
changes. Stores made before the graph are linked when opened, and so are stores whose
links an older version of the rules made (``graph_finder`` holds the version that made
them, ``extract.FINDER``).

A store opened without the graph (``--no-entity-graph``) writes no links and notes so in
``graph_gaps``; opened with it again, it links what was stored or changed meanwhile.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Sequence
from datetime import datetime, timezone

from spade_memory.base_memory.graph.extract import FINDER, mentions
from spade_memory.storage.connection import Database
from spade_memory.storage.postgres import dialect
from spade_memory.storage.statements import parts, placeholders

log = logging.getLogger(__name__)

FIRST_TABLE = """CREATE TABLE IF NOT EXISTS memory_entities (
    space TEXT NOT NULL,
    key TEXT NOT NULL,
    seq {seq} NOT NULL REFERENCES memories(seq) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    name TEXT,
    subject SMALLINT NOT NULL DEFAULT 0,
    PRIMARY KEY (space, key, seq)
){without_rowid}"""
"""The table as the graph's first version made it (its spaces as text); ``numbered``
rewrites it as ``TABLE``."""
SPACES = (
    "CREATE TABLE IF NOT EXISTS entity_spaces (id {id} PRIMARY KEY, space TEXT NOT NULL UNIQUE)"
)
"""The number of each space that links name (``id``: the engine's self-numbering type)."""
TABLE = """CREATE TABLE memory_entities_numbered (
    space_id INTEGER NOT NULL,
    key TEXT NOT NULL,
    seq {seq} NOT NULL REFERENCES memories(seq) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    name TEXT,
    subject SMALLINT NOT NULL DEFAULT 0,
    PRIMARY KEY (space_id, key, seq)
){without_rowid}"""
"""The table on either engine (``seq``: the type of ``memories.seq``), created under a
name of its own and renamed once filled (see ``numbered``)."""
BY_MEMORY = "CREATE INDEX IF NOT EXISTS memory_entities_seq ON memory_entities(seq, kind)"
"""What a memory names, read from the index alone (it holds the key columns too)."""

INSERT = (
    "INSERT INTO memory_entities (space_id, key, seq, kind, name, subject)"
    " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
)

Unlinked = tuple[int, str, str, str | None]
"""A memory to link: (seq, space, content, context)."""


async def space_ids(db: Database, spaces: Collection[str]) -> list[int]:
    """The numbers of those of ``spaces`` that links name (read first, and given to the
    statements as values: in a subquery, the planner could not tell how few they are,
    and read links by memory instead)."""
    return sorted((await _numbered(db, spaces)).values()) if spaces else []


async def numbers_of(db: Database, spaces: Collection[str]) -> dict[str, int]:
    """The number of each of ``spaces``, given one if it has none yet (in the caller's
    transaction)."""
    numbers = await _numbered(db, spaces)
    if missing := sorted(set(spaces) - numbers.keys()):
        await db.executemany(
            "INSERT INTO entity_spaces (space) VALUES (?) ON CONFLICT DO NOTHING",
            [(space,) for space in missing],
        )
        numbers = await _numbered(db, spaces)
    return numbers


async def _numbered(db: Database, spaces: Collection[str]) -> dict[str, int]:
    """The number of each of ``spaces`` that has one."""
    rows = await db.execute_fetchall(
        f"SELECT space, id FROM entity_spaces WHERE space IN ({placeholders(spaces)})",
        [*spaces],
    )
    return {str(space): int(id_) for space, id_ in rows}


Link = tuple[int, str, int, str, str | None, int]
"""A link row: (space_id, key, seq, kind, name, subject)."""


def rows_of(memories: Iterable[Unlinked], numbers: dict[str, int]) -> list[Link]:
    """The link rows of ``memories`` (``numbers``: of their spaces)."""
    rows: list[Link] = []
    for seq, space, content, context in memories:
        number = numbers[space]
        for m in mentions(content, context):
            if m.key:
                name = None if m.name == m.key else m.name[:200]
                rows.append((number, m.key, seq, m.kind, name, int(m.subject)))
    return rows


async def link(db: Database, memories: Sequence[Unlinked]) -> None:
    """Write the links of new memories (in the caller's transaction)."""
    if memories:
        numbers = await numbers_of(db, {space for _, space, _, _ in memories})
        await db.executemany(INSERT, rows_of(memories, numbers))


async def relink(db: Database, memory: Unlinked, graph: bool = True) -> None:
    """Make a changed memory's links again from its new text (or drop them, in a store
    without the graph: it is linked when the graph is back)."""
    await db.execute("DELETE FROM memory_entities WHERE seq = ?", (memory[0],))
    if graph:
        await link(db, [memory])


async def unlink(db: Database, seqs: Sequence[int]) -> None:
    """Drop the links of memories no longer current (superseded or merged): they name
    nothing, and an entity's count, which search weighs it by, is of current memories."""
    for part in parts(seqs):
        await db.execute(f"DELETE FROM memory_entities WHERE seq IN ({placeholders(part)})", part)


async def replaced(db: Database, seqs: Sequence[int]) -> set[int]:
    """Which of ``seqs`` are memories superseded or merged into another already."""
    found: set[int] = set()
    for part in parts(seqs):
        rows = await db.execute_fetchall(
            f"SELECT seq FROM memories WHERE seq IN ({placeholders(part)})"
            " AND superseded_by IS NOT NULL",
            part,
        )
        found.update(int(row[0]) for row in rows)
    return found


async def create(db: Database) -> None:
    """The migration that adds the graph (as its first version made it: ``numbered``
    rewrites it and links every memory already stored)."""
    sqlite = dialect(db) == "sqlite"
    seq, without_rowid = ("INTEGER", " WITHOUT ROWID") if sqlite else ("BIGINT", "")
    await db.execute(FIRST_TABLE.format(seq=seq, without_rowid=without_rowid))
    await db.execute(BY_MEMORY)


async def create_gaps(db: Database) -> None:
    """The migration that adds ``graph_gaps``: a row while memories may lack links."""
    await db.execute("CREATE TABLE IF NOT EXISTS graph_gaps (since TEXT NOT NULL)")


async def numbered(db: Database) -> None:
    """The migration that writes each link's space as a number (``entity_spaces``), and
    links every memory that names nothing in the graph yet (all of them in a store made
    before the graph)."""
    sqlite = dialect(db) == "sqlite"
    seq, without_rowid = ("INTEGER", " WITHOUT ROWID") if sqlite else ("BIGINT", "")
    await db.execute(SPACES.format(id="INTEGER" if sqlite else "SERIAL"))
    columns = (
        "SELECT name FROM pragma_table_info('memory_entities')"
        if sqlite
        else "SELECT column_name FROM information_schema.columns"
        " WHERE table_schema = current_schema() AND table_name = 'memory_entities'"
    )
    if "space" not in {str(row[0]) for row in await db.execute_fetchall(columns)}:
        await link_unlinked(db)  # numbered already (a store whose version was set back)
        return
    await db.execute(
        "INSERT INTO entity_spaces (space) SELECT DISTINCT space FROM memory_entities"
        " WHERE true ON CONFLICT DO NOTHING"
    )
    await db.execute(TABLE.format(seq=seq, without_rowid=without_rowid))
    await db.execute(
        "INSERT INTO memory_entities_numbered (space_id, key, seq, kind, name, subject)"
        " SELECT s.id, e.key, e.seq, e.kind, e.name, e.subject"
        " FROM memory_entities e JOIN entity_spaces s ON s.space = e.space"
    )
    await db.execute("DROP TABLE memory_entities")  # and its index
    await db.execute("ALTER TABLE memory_entities_numbered RENAME TO memory_entities")
    await db.execute(BY_MEMORY)
    await link_unlinked(db)


async def versioned(db: Database) -> None:
    """The migration that adds ``graph_finder``: the version of the rules that made the
    links (1, the first, for a store linked before it)."""
    await db.execute("CREATE TABLE IF NOT EXISTS graph_finder (version INTEGER NOT NULL)")
    await db.execute("INSERT INTO graph_finder (version) VALUES (1)")


async def open_with(db: Database, graph: bool) -> None:
    """At open: note that links may go missing (``graph`` off), or make those that went
    missing while it was off (the scan runs once per time the graph was off); with the
    graph, make every link again if another version of the rules made them."""
    if graph:
        await _relink_by(db, FINDER)
    ((since,),) = await db.execute_fetchall("SELECT MIN(since) FROM graph_gaps")
    if not graph and since is None:
        now = datetime.now(timezone.utc).isoformat(timespec="seconds")
        await db.execute("INSERT INTO graph_gaps (since) VALUES (?)", (now,))
    elif graph and since is not None:
        linked = await link_unlinked(db)
        await db.execute("DELETE FROM graph_gaps")
        log.info("entity graph off since %s: linked %d memories stored meanwhile", since, linked)


async def _relink_by(db: Database, finder: int) -> None:
    """Every memory linked again if older rules than ``finder`` made its links (once: on
    a shared database, the first agent to open it claims the change, and the others wait
    for it and find it done; an agent of an older version leaves newer links as they
    are, rather than every agent linking everything again at each open in turn)."""
    claimed = await db.execute(
        "UPDATE graph_finder SET version = ? WHERE version < ?", (finder, finder)
    )
    if claimed.rowcount > 0:
        await db.execute("DELETE FROM memory_entities")
        if linked := await link_unlinked(db):
            log.info("entity graph: %d memories linked again (rules version %d)", linked, finder)


async def link_unlinked(db: Database) -> int:
    """Link every current memory that names nothing in the graph yet, 10,000 at a time;
    returns how many were linked."""
    after, count = -1, 0
    while rows := list(
        await db.execute_fetchall(
            "SELECT seq, space, content, context FROM memories WHERE seq > ?"
            " AND superseded_by IS NULL"
            " AND NOT EXISTS (SELECT 1 FROM memory_entities e WHERE e.seq = memories.seq)"
            " ORDER BY seq LIMIT 10000",
            (after,),
        )
    ):
        await link(db, [(int(s), str(space), str(c), x) for s, space, c, x in rows])
        after, count = rows[-1][0], count + len(rows)
    return count
