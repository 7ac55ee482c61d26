"""PostgreSQL as a store's engine: a pool of asyncpg connections behind the stores' API.

A store written for SQLite speaks through ``Database`` (sqlite3's calls, awaited) and
``Transactions`` (one write transaction at a time). Here the same calls run on a
connection taken from an asyncpg pool, so several memory agents (in several
processes or machines) can share one database, each with its own pool:

- statements keep the stores' ``?`` placeholders, turned into PostgreSQL's ``$1, $2…``
  once per statement text (``numbered``);
- ``write()`` takes a connection for one transaction (``BEGIN`` … ``COMMIT``), and
  ``inline`` is the same thing (there is no thread to run in);
- the schema's version is kept per store in ``spade_memory_schema``, and migrations
  run under an advisory lock, so agents starting together migrate once;
- a lost server, a full disk on it or a connection it dropped are named faults, as
  the SQLite file's are (``serving_fault``).

Where the SQL of the two engines differs, the store asks ``dialect(db)``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
import zlib
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, Any, Literal, TypeVar
from urllib.parse import urlsplit, urlunsplit

from spade_memory.protocol.errors import (
    BadRequest,
    MemoryServiceError,
    ResourceConstraint,
    ServiceUnavailable,
)
from spade_memory.storage.faults import StoreFault

if TYPE_CHECKING:
    import asyncpg

logger = logging.getLogger("spade_memory.storage")
T = TypeVar("T")
Dialect = Literal["sqlite", "postgresql"]
PgMigration = Callable[["PgConnection"], Coroutine[Any, Any, None]]
POOL_SIZE = 8
"""Connections each agent's pool keeps at most (one write transaction holds one)."""
CONNECT_SECONDS = 10.0
"""How long opening waits for the server before it names it unreachable."""
SCHEMA_TABLE = """CREATE TABLE IF NOT EXISTS spade_memory_schema (
    store TEXT PRIMARY KEY,
    version INTEGER NOT NULL
)"""

_QUOTED = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|\?")


def is_url(location: object) -> bool:
    """Whether a store's location names a PostgreSQL database (not a SQLite file)."""
    return isinstance(location, str) and location.startswith(("postgresql://", "postgres://"))


def shown(url: str) -> str:
    """The URL without its password, for logs and error texts."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def dialect(db: object) -> Dialect:
    """Which engine ``db`` (a ``Database``) speaks to."""
    return "postgresql" if isinstance(db, PgConnection) else "sqlite"


@functools.lru_cache(maxsize=1024)
def numbered(sql: str) -> str:
    """``sql`` with its ``?`` placeholders numbered as PostgreSQL wants (``$1``, ``$2``…);
    a ``?`` inside a quoted literal or identifier is left alone."""
    count = 0

    def number(match: re.Match[str]) -> str:
        nonlocal count
        if match.group(0) != "?":
            return match.group(0)
        count += 1
        return f"${count}"

    return _QUOTED.sub(number, sql)


class Status:
    """What ``execute`` returns: the rows a statement changed, as sqlite3's cursor."""

    __slots__ = ("rowcount",)

    def __init__(self, status: str) -> None:
        last = status.rsplit(" ", 1)[-1]
        self.rowcount = int(last) if last.isdigit() else -1


class PgConnection:
    """``Database``'s calls over one asyncpg connection, in one transaction at a time."""

    def __init__(self, conn: asyncpg.Connection, trace: Callable[[str], None] | None = None):
        self._conn = conn
        self._in_transaction = False
        self._trace = trace

    @contextmanager
    def _sending(self, sql: str) -> Iterator[None]:
        """Around each statement sent: told to the trace; text PostgreSQL cannot hold (a
        NUL character, which JSON and SQLite accept) is the request's fault,
        ``bad-request``, and nothing is written."""
        import asyncpg

        if self._trace is not None:
            self._trace(sql)
        try:
            yield
        except (asyncpg.CharacterNotInRepertoireError, asyncpg.UntranslatableCharacterError):
            raise BadRequest(
                "the text holds a NUL character, which PostgreSQL cannot store"
            ) from None

    async def _run(self, sql: str, parameters: Sequence[Any] = ()) -> str:
        with self._sending(sql):
            return str(await self._conn.execute(sql, *parameters))

    @property
    def in_transaction(self) -> bool:
        return self._in_transaction

    async def begin(self) -> None:
        if not self._in_transaction:
            await self._run("BEGIN")
            self._in_transaction = True

    async def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Status:
        if sql.startswith("BEGIN"):
            await self.begin()
            return Status("BEGIN")
        return Status(await self._run(numbered(sql), parameters))

    async def execute_fetchall(self, sql: str, parameters: Sequence[Any] = (), /) -> list[Any]:
        with self._sending(sql):
            return [tuple(row) for row in await self._conn.fetch(numbered(sql), *parameters)]

    async def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Status:
        rows = list(parameters)
        if rows:
            with self._sending(sql):
                await self._conn.executemany(numbered(sql), rows)
        return Status(str(len(rows)))

    async def commit(self) -> None:
        if self._in_transaction:
            self._in_transaction = False
            await self._run("COMMIT")

    async def rollback(self) -> None:
        if self._in_transaction:
            self._in_transaction = False
            await self._run("ROLLBACK")


class PgTransactions:
    """A store's pool: each write transaction on a connection of its own, several at once.

    The interface is ``connection.Transactions``' (``write``, ``inline``, ``close``,
    ``path``, ``out_of_service``); PostgreSQL keeps concurrent transactions apart, so
    there is no lock here.
    """

    def __init__(self, pool: asyncpg.Pool, url: str) -> None:
        self.pool = pool
        self.url = url
        self.path = shown(url)
        """What logs and errors name (the URL without its password)."""
        self.out_of_service: MemoryServiceError | None = None
        self.trace: Callable[[str], None] | None = None
        """Told every statement, as it is sent (SQLite's ``set_trace_callback``)."""

    async def close(self) -> None:
        """Close the pool, waiting at most ``CONNECT_SECONDS`` for its connections."""
        try:
            await asyncio.wait_for(self.pool.close(), CONNECT_SECONDS)
        except (asyncio.TimeoutError, OSError) as error:
            logger.warning("%s: pool not closed cleanly (%r); terminated", self.path, error)
            self.pool.terminate()

    @asynccontextmanager
    async def write(self) -> AsyncIterator[PgConnection]:
        """A transaction on a pooled connection: committed on success, rolled back on
        any error."""
        async with self.pool.acquire() as conn:
            db = PgConnection(conn, self.trace)
            await db.begin()
            try:
                yield db
            except BaseException:
                if db.in_transaction and not conn.is_closed():
                    try:
                        await db.rollback()
                    except Exception as failed:  # the error that brought us here matters more
                        logger.warning("%s: rollback failed (%s)", self.path, failed)
                raise
            await db.commit()

    async def read(self, sql: str, parameters: Sequence[Any] = ()) -> list[Any]:
        """The rows of one query, on a pooled connection outside any transaction."""
        async with self.pool.acquire() as conn:
            return await PgConnection(conn, self.trace).execute_fetchall(sql, parameters)

    async def inline(self, body: Callable[[PgConnection], Coroutine[Any, Any, T]]) -> T:
        """``body`` as one transaction (what SQLite runs in its thread in one trip)."""
        async with self.write() as db:
            return await body(db)

    def fault(self, error: BaseException) -> MemoryServiceError | None:
        """The typed failure for ``error`` met while serving, if it is a named fault."""
        return serving_fault(self.path, error)


async def open_pool(
    url: str, store: str, migrations: Sequence[PgMigration], size: int = POOL_SIZE
) -> PgTransactions:
    """Connect to ``url`` and bring the schema of ``store`` to the newest migration.

    Returns the store's transactions; raises ``StoreFault`` naming the server when it
    cannot be reached or refuses the connection.
    """
    try:
        import asyncpg
    except ImportError:
        raise StoreFault(shown(url), "needs asyncpg", "install spade-memory[postgresql]") from None
    try:
        pool = await asyncio.wait_for(
            asyncpg.create_pool(url, min_size=1, max_size=size), CONNECT_SECONDS
        )
    except (OSError, asyncio.TimeoutError, asyncpg.PostgresError) as error:
        raise StoreFault(
            shown(url), f"cannot be reached ({error or type(error).__name__})",
            "start the PostgreSQL server, or give --database a database it serves",
        ) from None  # fmt: skip
    tx = PgTransactions(pool, url)
    try:
        await migrate(tx, store, migrations)
    except BaseException:
        await tx.close()
        raise
    return tx


async def migrate(tx: PgTransactions, store: str, migrations: Sequence[PgMigration]) -> int:
    """Apply the migrations of ``store`` the database has not seen yet, each in its own
    transaction and all under an advisory lock (agents starting together migrate once).
    Returns the newest version."""
    lock = zlib.crc32(f"spade-memory:{store}".encode())
    async with tx.pool.acquire() as conn:
        await conn.execute("SELECT pg_advisory_lock($1)", lock)
        try:
            await conn.execute(SCHEMA_TABLE)
            version = await conn.fetchval(
                "SELECT version FROM spade_memory_schema WHERE store = $1", store
            )
            version = int(version or 0)
            for number, migration in enumerate(migrations[version:], start=version + 1):
                db = PgConnection(conn)
                await db.begin()
                try:
                    await migration(db)
                    await db.execute(
                        "INSERT INTO spade_memory_schema VALUES (?, ?)"
                        " ON CONFLICT (store) DO UPDATE SET version = excluded.version",
                        (store, number),
                    )
                except BaseException:
                    await db.rollback()
                    raise
                await db.commit()
        finally:
            await conn.execute("SELECT pg_advisory_unlock($1)", lock)
    return len(migrations)


def statements(*sql: str) -> PgMigration:
    """A migration that runs ``sql`` in order."""

    async def run(db: PgConnection) -> None:
        for statement in sql:
            await db.execute(statement)

    return run


_UNREACHABLE_CLASSES = ("08", "57")
"""SQLSTATE classes of a lost connection and of a server shutting down."""


def serving_fault(name: str, error: BaseException) -> MemoryServiceError | None:
    """The typed failure for a PostgreSQL error met while serving, if it is a named one:
    a full disk on the server, or a server out of reach (nothing was committed)."""
    sqlstate = str(getattr(error, "sqlstate", "") or "")
    if sqlstate == "53100":
        return ResourceConstraint(f"disk full on the database server of {name}; nothing written")
    if sqlstate[:2] in _UNREACHABLE_CLASSES or _is_lost_connection(error):
        return ServiceUnavailable(f"the database {name} cannot be reached ({error}); not applied")
    return None


def _is_lost_connection(error: BaseException) -> bool:
    try:
        import asyncpg
    except ImportError:  # pragma: no cover - only reached with asyncpg installed
        return False
    lost = (asyncpg.InterfaceError, asyncpg.PostgresConnectionError, ConnectionError)
    return isinstance(error, (*lost, OSError))
