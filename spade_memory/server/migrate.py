"""``spade-memory migrate --from DATA_DIR --to postgresql://…``: a data directory's
long-term memories, conversation notes, working memories and directory of spaces,
moved into PostgreSQL.

Every row moves as it is: ids, change numbers, access counts, versions, the usage
figures, the vectors' bytes and the applied request ids, so clients, the beads
mirror's cursor and the spaces' subscribers go on where they were. Each table is
copied with PostgreSQL's ``COPY`` (asyncpg's ``copy_records_to_table``), every store
in one transaction: a migration that fails leaves no row behind (only the empty
tables), so it can simply be run again. The numbering of the new database goes on
after the highest number SQLite ever gave (``sqlite_sequence``), so no number is
given twice. The word index is not copied: PostgreSQL computes its own.

The data directory must not be in use (a running service holds its lock), and the
database must hold no memories, notes or working memories yet; the SQLite files are
left as they were. The interaction agent's context directory (files, not rows) stays
on its disk.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spade_memory.base_memory.retrieval import pgvector
from spade_memory.base_memory.service import DATABASE
from spade_memory.base_memory.store import pg_tables as base_schema
from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.interaction import pg_tables as interaction_schema
from spade_memory.interaction.service import DATABASE as NOTES_DATABASE
from spade_memory.interaction.store import InteractionStore
from spade_memory.server.lock import lock
from spade_memory.spaces.directory import FILE as SPACES_FILE
from spade_memory.spaces.directory import PG_MIGRATIONS as SPACES_MIGRATIONS
from spade_memory.spaces.directory import PG_STORE as SPACES_STORE
from spade_memory.spaces.directory import SpaceDirectory
from spade_memory.storage.postgres import PgMigration, is_url, open_pool, shown
from spade_memory.storage.postgres import migrate as migrate_schema

CHUNK = 5000
"""Rows read from SQLite and sent to PostgreSQL at a time."""
_NUMBERED = {
    "memories": "seq",
    "changes": "seq",
    "space_changes": "seq",
    "notes": "seq",
    "entity_spaces": "id",
}
"""Tables whose number PostgreSQL gives (a serial or identity column), by that column."""
_MUST_BE_EMPTY = {
    "memories": "memories",
    "notes": "conversation notes",
    "working_memories": "working memories",
}
"""Tables that must hold no row before a migration, by what they hold."""


class MigrationRefused(RuntimeError):
    """The migration cannot start (nothing was changed); the text says why."""


@dataclass
class Migrated:
    """What was moved: rows per table, in order."""

    url: str
    rows: dict[str, int] = field(default_factory=dict)

    @property
    def memories(self) -> int:
        return self.rows.get("memories", 0)

    @property
    def notes(self) -> int:
        return self.rows.get("notes", 0)


@dataclass(frozen=True)
class _Source:
    """One SQLite store of the data directory and its PostgreSQL schema."""

    path: Path
    store: str
    migrations: list[PgMigration]


async def migrate(
    data_dir: Path, url: str, progress: Callable[[str, int], None] | None = None
) -> Migrated:
    """Move the long-term memories, the interaction store and the directory of spaces of
    ``data_dir`` into the PostgreSQL database at ``url``; ``progress`` is told (table,
    rows so far) as it goes.

    Returns the rows moved per table; raises ``MigrationRefused`` (a running service,
    no store, a database that already holds memories or notes), ``StoreFault`` (a
    damaged file, a server out of reach) or asyncpg's error, with no row written.
    """
    if not is_url(url):
        raise MigrationRefused(f"--to takes a postgresql:// URL, not {url!r}")
    memories, notes, spaces = data_dir / DATABASE, data_dir / NOTES_DATABASE, data_dir / SPACES_FILE
    if not memories.exists() and not notes.exists():
        raise MigrationRefused(
            f"{data_dir} holds no long-term memories ({DATABASE}) and no notes ({NOTES_DATABASE})"
        )
    held = lock(data_dir)  # raises DataDirectoryInUse while a service runs on it
    try:
        # each opened once through its own code: an older file gets the newest schema
        sources = []
        if memories.exists():
            await (await LongTermStore.open(memories)).close()
            sources.append(_Source(memories, base_schema.STORE, base_schema.MIGRATIONS))
        if notes.exists():
            await (await InteractionStore.open(notes, purge_every=None)).close()
            sources.append(_Source(notes, interaction_schema.STORE, interaction_schema.MIGRATIONS))
        if spaces.exists():
            await (await SpaceDirectory.open(spaces)).close()
            sources.append(_Source(spaces, SPACES_STORE, SPACES_MIGRATIONS))
        migrated = Migrated(shown(url))
        migrated.rows.update(await _copy_stores(sources, url, progress))
        return migrated
    finally:
        held.close()


async def _copy_stores(
    sources: list[_Source], url: str, progress: Callable[[str, int], None] | None
) -> dict[str, int]:
    """Every table of the sources' PostgreSQL schemas, copied from their SQLite files in
    one transaction (the schemas themselves are made first, each by its migrations)."""
    tx = await open_pool(url, sources[0].store, sources[0].migrations, size=1)
    moved: dict[str, int] = {}
    try:
        for source in sources[1:]:
            await migrate_schema(tx, source.store, source.migrations)
        async with tx.pool.acquire() as conn, conn.transaction():
            for source in sources:
                with closing(sqlite3.connect(f"file:{source.path}?mode=ro", uri=True)) as db:
                    moved.update(await _copy_tables(db, conn, url, progress))
        async with tx.pool.acquire() as conn:
            await conn.execute("ANALYZE")  # the planner's figures, for what was just moved
    finally:
        await tx.close()
    return moved


async def _copy_tables(
    source: sqlite3.Connection,
    conn: Any,
    url: str,
    progress: Callable[[str, int], None] | None,
) -> dict[str, int]:
    """The tables of one SQLite file that its PostgreSQL schema has, copied on ``conn``
    (an asyncpg connection inside the migration's transaction)."""
    names = [str(row[0]) for row in source.execute("SELECT name FROM sqlite_master")]
    tables = await conn.fetch(
        "SELECT table_name, array_agg(column_name::text ORDER BY ordinal_position)"
        " FROM information_schema.columns WHERE table_schema = current_schema()"
        " AND is_generated = 'NEVER' AND table_name = ANY($1::text[])"
        " GROUP BY table_name",
        names,
    )
    in_postgres = {str(table): list(listed) for table, listed in tables}
    columns = {}
    for table, listed in in_postgres.items():  # a column only PostgreSQL has (``dense``)
        present = _columns_of(source, table)  # is filled there
        columns[table] = [column for column in listed if column in present]
    for table, what in _MUST_BE_EMPTY.items():
        if table in columns and await conn.fetchval(f"SELECT count(*) FROM {table}"):
            raise MigrationRefused(f"{shown(url)} already holds {what}; give an empty one")
    moved: dict[str, int] = {}
    for table in _in_key_order(columns):
        count = 0
        for chunk in _rows(source, table, columns[table]):
            await conn.copy_records_to_table(table, records=chunk, columns=columns[table])
            count += len(chunk)
            if progress is not None:
                progress(table, count)
        moved[table] = count
        if table == "embeddings" and "dense" in in_postgres[table]:
            await pgvector.fill_all(conn)
        if (column := _NUMBERED.get(table)) is not None:
            await conn.execute(
                f"SELECT setval(pg_get_serial_sequence('{table}', '{column}'),"
                f" GREATEST($1, (SELECT COALESCE(max({column}), 0) FROM "
                f"{table})) + 1, false)",
                _last_number(source, table),
            )  # fmt: skip
    return moved


def _columns_of(source: sqlite3.Connection, table: str) -> set[str]:
    return {str(row[1]) for row in source.execute(f'PRAGMA table_info("{table}")')}


def _in_key_order(columns: dict[str, list[str]]) -> list[str]:
    """The tables, the ones others refer to first (``embeddings`` needs ``memories``)."""
    first = [name for name in ("memories", "spaces") if name in columns]
    return first + sorted(name for name in columns if name not in first)


def _rows(
    source: sqlite3.Connection, table: str, columns: list[str]
) -> Iterator[list[tuple[object, ...]]]:
    """The table's rows in chunks of ``CHUNK``."""
    listed = ", ".join(f'"{column}"' for column in columns)
    cursor = source.execute(f'SELECT {listed} FROM "{table}"')
    while chunk := cursor.fetchmany(CHUNK):
        yield [tuple(row) for row in chunk]


def _last_number(source: sqlite3.Connection, table: str) -> int:
    """The highest number SQLite gave in ``table``, deleted rows included."""
    if not source.execute(
        "SELECT 1 FROM sqlite_master WHERE name = 'sqlite_sequence'"
    ).fetchall():  # a file with no AUTOINCREMENT table (the notes' numbers are rowids)
        return 0
    rows = source.execute("SELECT seq FROM sqlite_sequence WHERE name = ?", (table,)).fetchall()
    return int(rows[0][0]) if rows else 0
