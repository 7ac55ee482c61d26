"""One long-lived SQLite connection, in a thread of its own (``sqlite_thread``), with the
settings every store wants.

WAL lets readers run beside the writer; ``busy_timeout`` waits instead of
failing with "database is locked" when another process holds the lock;
``synchronous`` is NORMAL by default, which in WAL mode keeps every committed
transaction across a crash of the process (``kill -9``) and FULL adds
durability across power loss at the cost of an fsync per commit. The schema
version lives in ``PRAGMA user_version`` and advances through a list of
migrations, each run in its own transaction.

A whole batch can also run in the connection's own thread in one trip
(``Transactions.inline``): each trip to that thread costs a thread wake-up on
both sides, which for a short statement is most of its cost.

Opening checks the file (``PRAGMA quick_check``, bounded in time) and, with a
``Manifest``, that it still holds what it held; any failure closes the new
connection (and ends its thread) and is raised as a named ``StoreFault``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

from spade_memory.protocol.errors import MemoryServiceError
from spade_memory.storage.checkpoints import SAFETY_NET_PAGES, WAL_LIMIT_BYTES, Checkpoints
from spade_memory.storage.faults import DamagedStore, StoreFault, opening_fault, serving_fault
from spade_memory.storage.manifest import Manifest
from spade_memory.storage.sqlite_thread import ThreadedConnection

logger = logging.getLogger("spade_memory.storage")
CACHE_KIB = 32 * 1024
"""Page cache of a connection, grown as pages are read (SQLite's default is 2 MB). A
word search at a million memories reads a page of FTS5's document sizes for each match:
with the default cache most of those pages were read again from the file at every
search, which made word searches slower; a larger cache than this gained nothing more."""
QUICK_CHECK_SECONDS = 5.0
"""How long the check at open may take; a larger file is checked fully by ``spade-memory check``."""

Synchronous = Literal["NORMAL", "FULL"]
T = TypeVar("T")
GROUPED = "grouped"
"""The savepoint of each transaction in a group (``Transactions.inline``)."""


class Database(Protocol):
    """What the stores' code uses of a connection: ``ThreadedConnection``, or
    ``InlineConnection`` (or ``postgres.PgConnection``)."""

    @property
    def in_transaction(self) -> bool: ...

    def execute(self, sql: str, parameters: Any = ..., /) -> Awaitable[Any]: ...

    def execute_fetchall(self, sql: str, parameters: Any = ..., /) -> Awaitable[Iterable[Any]]: ...

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> Awaitable[Any]: ...

    def commit(self) -> Awaitable[None]: ...

    def rollback(self) -> Awaitable[None]: ...


Migration = Callable[[Database], Awaitable[None]]


class Transacting(Protocol):
    """What a store uses of its engine's transactions: ``Transactions`` on a SQLite file,
    ``postgres.PgTransactions`` on a PostgreSQL pool."""

    @property
    def path(self) -> Path | str: ...

    out_of_service: MemoryServiceError | None

    def write(self) -> AbstractAsyncContextManager[Database]: ...

    async def read(self, sql: str, parameters: Sequence[Any] = ()) -> list[Any]: ...

    async def inline(self, body: Callable[[Any], Coroutine[Any, Any, T]]) -> T: ...

    async def close(self) -> None: ...

    def fault(self, error: BaseException) -> MemoryServiceError | None: ...


class InlineConnection:
    """``Database`` over the plain sqlite3 connection, for code that runs in that
    connection's own thread (``Transactions.inline``): every call is done when it returns,
    so the coroutines using it finish without ever suspending."""

    def __init__(self, conn: sqlite3.Connection, savepoint: str | None = None) -> None:
        self._conn = conn
        self._savepoint = savepoint
        """Within a group of transactions (``Transactions.inline``): the savepoint that
        is this one's whole transaction, which ``rollback`` rolls back to."""

    @property
    def in_transaction(self) -> bool:
        return self._conn.in_transaction

    async def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        return self._conn.execute(sql, parameters)

    async def execute_fetchall(self, sql: str, parameters: Any = (), /) -> list[Any]:
        return self._conn.execute(sql, parameters).fetchall()

    async def executemany(self, sql: str, parameters: Iterable[Any], /) -> sqlite3.Cursor:
        return self._conn.executemany(sql, parameters)

    async def commit(self) -> None:
        if self._savepoint is not None:
            raise RuntimeError("a transaction of a group cannot commit the others")
        self._conn.commit()

    async def rollback(self) -> None:
        if self._savepoint is None:
            self._conn.rollback()
        else:
            self._conn.execute(f"ROLLBACK TO {self._savepoint}")


Body = Callable[[InlineConnection], Coroutine[Any, Any, T]]
"""A transaction run in the connection's thread (``Transactions.inline``)."""


def run_to_completion(coroutine: Coroutine[Any, Any, T]) -> T:
    """The result of a coroutine that never suspends (it awaits only ``InlineConnection``).

    Raises ``RuntimeError`` if it does suspend: it waited for something that needs the
    event loop, which code run inline must not do.
    """
    try:
        coroutine.send(None)
    except StopIteration as finished:
        return finished.value  # type: ignore[no-any-return]
    coroutine.close()
    raise RuntimeError("code run in the database thread waited for the event loop")


async def connect(
    path: str | Path, synchronous: Synchronous = "NORMAL", manifest: Manifest | None = None
) -> ThreadedConnection:
    """Open a checked connection whose first write statement begins an IMMEDIATE transaction.

    Letting sqlite3 issue the BEGIN itself saves a round trip to the connection's
    thread per write transaction (each trip is a thread wake-up). Returns the
    connection; raises ``StoreFault`` (``DamagedStore``, ``UnreachableStore``)
    naming the file and the way out.
    """
    path = Path(path)
    try:
        if str(path) != ":memory:":
            path.parent.mkdir(parents=True, exist_ok=True)
            _still_there(path, manifest)
        db = await ThreadedConnection.open(str(path), isolation_level="IMMEDIATE")
    except StoreFault:
        raise
    except Exception as error:
        raise opening_fault(path, error) or error from None
    try:
        await db.execute("PRAGMA journal_mode=WAL")
        await db.execute(f"PRAGMA synchronous={synchronous}")
        await db.execute("PRAGMA busy_timeout=5000")
        await db.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
        await db.execute(f"PRAGMA wal_autocheckpoint={SAFETY_NET_PAGES}")  # see checkpoints
        await db.execute(f"PRAGMA journal_size_limit={WAL_LIMIT_BYTES}")
        await db.execute("PRAGMA foreign_keys=ON")
        await _quick_check(db, path)
    except BaseException as error:
        await db.close()
        fault = opening_fault(path, error) if isinstance(error, Exception) else None
        if fault is None:
            raise
        raise fault from None
    return db


def _still_there(path: Path, manifest: Manifest | None) -> None:
    """A store the manifest knows must not be missing or empty."""
    held = 0 if manifest is None else manifest.pages(path)
    if held and (not path.exists() or path.stat().st_size == 0):
        state = "is missing" if not path.exists() else "is empty"
        raise DamagedStore(path, f"{state}, but held {held} pages when the service last ran")


async def _quick_check(db: ThreadedConnection, path: Path) -> None:
    """``PRAGMA quick_check``, given up (and said) after ``QUICK_CHECK_SECONDS``."""
    try:
        rows = await db.run(_checked)
    except sqlite3.OperationalError as error:
        if "interrupted" not in str(error):
            raise
        logger.warning("%s is too large to check at start; run spade-memory check", path)
        return
    problems = [str(row[0]) for row in rows if str(row[0]) != "ok"]
    if problems:
        raise DamagedStore(path, f"fails its integrity check ({problems[0]})")


def _checked(conn: sqlite3.Connection) -> list[Any]:
    """The rows of ``PRAGMA quick_check``, interrupted after ``QUICK_CHECK_SECONDS``."""
    deadline = time.monotonic() + QUICK_CHECK_SECONDS
    conn.set_progress_handler(lambda: time.monotonic() > deadline, 10_000)
    try:
        return conn.execute("PRAGMA quick_check").fetchall()
    finally:
        conn.set_progress_handler(None, 0)


async def open_migrated(
    path: str | Path,
    migrations: Sequence[Migration],
    synchronous: Synchronous = "NORMAL",
    manifest: Manifest | None = None,
    on_open: Migration | None = None,
) -> ThreadedConnection:
    """``connect`` and ``migrate``, hold the store to what the manifest says it held, and
    run ``on_open`` (in a transaction of its own).

    Returns the connection (closed again if anything fails); raises ``StoreFault``.
    """
    db = await connect(path, synchronous, manifest)
    try:
        await migrate(db, migrations)
        if manifest is not None and str(path) != ":memory:":
            await _holds_what_it_held(db, Path(path), manifest)
        if on_open is not None:
            await on_open(db)
            await db.commit()
    except BaseException as error:
        await db.close()
        fault = opening_fault(path, error) if isinstance(error, Exception) else None
        if fault is None:
            raise
        raise fault from None
    return db


async def _holds_what_it_held(db: Database, path: Path, manifest: Manifest) -> None:
    pages = await page_count(db)
    held = manifest.pages(path)
    if pages < held:
        raise DamagedStore(path, f"holds {pages} pages, but held {held} when the service last ran")
    manifest.record(path, pages)


async def page_count(db: Database) -> int:
    """How many pages the database holds (with what is still in its WAL)."""
    (row,) = await db.execute_fetchall("PRAGMA page_count")
    return int(row[0])


async def migrate(db: Database, migrations: Sequence[Migration]) -> int:
    """Apply the migrations the database has not seen yet; return the new version."""
    (row,) = await db.execute_fetchall("PRAGMA user_version")
    version = int(row[0])
    for number, migration in enumerate(migrations[version:], start=version + 1):
        await db.execute("BEGIN IMMEDIATE")
        try:
            await migration(db)
            await db.execute(f"PRAGMA user_version={number}")
            await db.execute("COMMIT")
        except BaseException:
            # not ``ROLLBACK``: a Ctrl-C while COMMIT runs on the connection's thread leaves
            # no transaction, and its error would stand for the interruption
            await db.rollback()
            raise
    return len(migrations)


class Transactions:
    """A store's connection: serialises the transactions of coroutines sharing it.

    Its thread runs statements one at a time, but two coroutines could still
    interleave their statements inside each other's BEGIN ... COMMIT; the lock
    keeps each transaction whole.
    """

    def __init__(
        self, db: ThreadedConnection, path: Path | None = None, manifest: Manifest | None = None
    ) -> None:
        self.db = db
        self.path = path or Path(":memory:")
        self.manifest = manifest
        self.out_of_service: MemoryServiceError | None = None
        """Set when the file was found damaged while serving: every later op fails with it."""
        self._lock = asyncio.Lock()
        self._grouping = False
        """A transaction of ``inline`` runs: the next ones join ``_pending``."""
        self._pending: list[tuple[Body[Any], asyncio.Future[Any]]] = []
        self._idle = asyncio.Event()
        """Set when no transaction of ``inline`` runs or waits (``close`` waits for it)."""
        self._idle.set()
        self._grouper: asyncio.Task[None] | None = None
        """The task running the groups (held: asyncio keeps only a weak reference)."""
        self._checkpoints = None if str(self.path) == ":memory:" else Checkpoints(self.path)

    async def close(self) -> None:
        """Record what the store holds in the manifest, then close the connection; the
        connection is closed whatever failed before."""
        try:
            await self._idle.wait()  # what was accepted is written before the close
            if self._checkpoints is not None:
                await self._checkpoints.finish()
            if self.manifest is not None and self.out_of_service is None:
                self.manifest.record(self.path, await page_count(self.db))
        except Exception as error:
            logger.warning("%s: what it holds was not recorded at close (%s)", self.path, error)
        finally:
            await self.db.close()

    async def read(self, sql: str, parameters: Sequence[Any] = ()) -> list[Any]:
        """The rows of one query, outside any write transaction."""
        return list(await self.db.execute_fetchall(sql, parameters))

    def fault(self, error: BaseException) -> MemoryServiceError | None:
        """The typed failure for ``error`` met while serving, if it is a named fault of
        the file (see ``faults``)."""
        return serving_fault(self.path, error)

    async def inline(self, body: Body[T]) -> T:
        """Run ``body`` as one write transaction in the connection's own thread, in one
        trip: committed when it returns, rolled back when it raises.

        While a transaction runs, the bodies that arrive join the next group: one
        transaction and one commit for all of them, each body in a savepoint of its own
        (group commit). A body that raises is rolled back alone, unless the error is a
        named fault of the file, which rolls back and fails the whole group (none of it
        was committed). ``body`` may await only the connection it is given. Returns what
        ``body`` returns; raises what it raises, or the group's fault.
        """
        if self._grouping:
            joined: asyncio.Future[T] = asyncio.get_running_loop().create_future()
            self._pending.append((body, joined))
            return await joined
        self._grouping = True
        self._idle.clear()
        try:
            async with self._lock:
                result = await self.db.run(functools.partial(self._run_inline, body))
            self._committed()
        finally:
            self._next_group()
        return result

    def _committed(self) -> None:
        if self._checkpoints is not None:
            self._checkpoints.after_commit()

    def _next_group(self) -> None:
        """Hand the bodies that arrived meanwhile to a task that runs them as groups; it
        starts once the caller has gone on to its next await."""
        if self._pending:
            self._grouper = asyncio.create_task(self._groups(), name="spade-memory-group")
        else:
            self._grouping = False
            self._idle.set()

    async def _groups(self) -> None:
        """Run what waits, a group at a time, until nothing does."""
        try:
            while self._pending:
                group, self._pending = self._pending, []
                try:
                    async with self._lock:
                        outcomes = await self.db.run(
                            functools.partial(self._run_group, [body for body, _ in group])
                        )
                    self._committed()
                except BaseException as error:  # none of the group was committed
                    outcomes = [error] * len(group)
                for (_, joined), outcome in zip(group, outcomes, strict=True):
                    if joined.done():  # its caller was cancelled
                        continue
                    if isinstance(outcome, BaseException):
                        joined.set_exception(outcome)
                    else:
                        joined.set_result(outcome)
                # their callers go on to their notes after the commit before the next group
                await asyncio.sleep(0)
        finally:
            for _, joined in self._pending:  # left only if this task was cancelled
                if not joined.done():
                    joined.set_exception(RuntimeError(f"{self.path} was closed"))
            self._pending = []
            self._grouping = False
            self._idle.set()

    def _run_inline(self, body: Body[T], conn: sqlite3.Connection) -> T:
        try:
            result = run_to_completion(body(InlineConnection(conn)))
        except BaseException:
            self._roll_back(conn)
            raise
        if conn.in_transaction:
            conn.commit()
        return result

    def _run_group(self, bodies: list[Body[Any]], conn: sqlite3.Connection) -> list[Any]:
        """Each body in a savepoint of one transaction: what each returned or raised.
        Raises, the whole group rolled back, on a fault of the file or a failed commit."""
        outcomes: list[Any] = []
        try:
            conn.execute("BEGIN IMMEDIATE")
            for body in bodies:
                conn.execute(f"SAVEPOINT {GROUPED}")
                try:
                    outcomes.append(run_to_completion(body(InlineConnection(conn, GROUPED))))
                except Exception as error:
                    if self.fault(error) is not None or not conn.in_transaction:
                        raise  # the file's fault (or SQLite rolled everything back)
                    conn.execute(f"ROLLBACK TO {GROUPED}")
                    outcomes.append(error)
                conn.execute(f"RELEASE {GROUPED}")
            conn.commit()
        except BaseException:
            self._roll_back(conn)
            raise
        return outcomes

    def _roll_back(self, conn: sqlite3.Connection) -> None:
        if conn.in_transaction:
            try:
                conn.rollback()
            except Exception as failed:  # the error that brought us here matters more
                logger.warning("%s: rollback failed (%s)", self.path, failed)

    @asynccontextmanager
    async def write(self) -> AsyncIterator[ThreadedConnection]:
        """A write transaction: committed on success, rolled back on any error.

        It begins with its first INSERT, UPDATE or DELETE; reads before that
        run outside it, which is safe because the lock keeps writers of this
        connection one at a time and a store's file has one writing process.
        """
        async with self._lock:
            try:
                yield self.db
            except BaseException:
                if self.db.in_transaction:
                    try:
                        await self.db.rollback()
                    except Exception as failed:  # the error that brought us here matters more
                        logger.warning("%s: rollback failed (%s)", self.path, failed)
                raise
            if self.db.in_transaction:
                await self.db.commit()
                if self._checkpoints is not None:
                    self._checkpoints.after_commit()
