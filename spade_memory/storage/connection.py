"""One long-lived aiosqlite connection with the settings every store wants.

WAL lets readers run beside the writer; ``busy_timeout`` waits instead of
failing with "database is locked" when another process holds the lock;
``synchronous`` is NORMAL by default, which in WAL mode keeps every committed
transaction across a crash of the process (``kill -9``) and FULL adds
durability across power loss at the cost of an fsync per commit. The schema
version lives in ``PRAGMA user_version`` and advances through a list of
migrations, each run in its own transaction.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Literal

import aiosqlite

Migration = Callable[[aiosqlite.Connection], Awaitable[None]]
Synchronous = Literal["NORMAL", "FULL"]


async def connect(path: str | Path, synchronous: Synchronous = "NORMAL") -> aiosqlite.Connection:
    """Open a connection whose first write statement begins an IMMEDIATE transaction.

    Letting sqlite3 issue the BEGIN itself saves a round trip to aiosqlite's
    thread per write transaction (each trip is a thread wake-up).
    """
    if str(path) != ":memory:":
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    db = await aiosqlite.connect(str(path), isolation_level="IMMEDIATE")
    await db.execute("PRAGMA journal_mode=WAL")
    await db.execute(f"PRAGMA synchronous={synchronous}")
    await db.execute("PRAGMA busy_timeout=5000")
    await db.execute("PRAGMA foreign_keys=ON")
    return db


async def open_migrated(
    path: str | Path, migrations: Sequence[Migration], synchronous: Synchronous = "NORMAL"
) -> aiosqlite.Connection:
    """``connect`` and ``migrate``; the connection is closed if a migration fails."""
    db = await connect(path, synchronous)
    try:
        await migrate(db, migrations)
    except BaseException:
        await db.close()
        raise
    return db


async def migrate(db: aiosqlite.Connection, migrations: Sequence[Migration]) -> int:
    """Apply the migrations the database has not seen yet; return the new version."""
    async with db.execute("PRAGMA user_version") as cursor:
        row = await cursor.fetchone()
    version = int(row[0]) if row else 0
    for number, migration in enumerate(migrations[version:], start=version + 1):
        await db.execute("BEGIN IMMEDIATE")
        try:
            await migration(db)
            await db.execute(f"PRAGMA user_version={number}")
            await db.execute("COMMIT")
        except BaseException:
            await db.execute("ROLLBACK")
            raise
    return len(migrations)


class Transactions:
    """Serialises transactions of coroutines sharing one connection.

    aiosqlite runs statements one at a time, but two coroutines could still
    interleave their statements inside each other's BEGIN ... COMMIT; the lock
    keeps each transaction whole.
    """

    def __init__(self, db: aiosqlite.Connection) -> None:
        self.db = db
        self._lock = asyncio.Lock()

    @asynccontextmanager
    async def write(self) -> AsyncIterator[aiosqlite.Connection]:
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
                    await self.db.rollback()
                raise
            if self.db.in_transaction:
                await self.db.commit()

    @asynccontextmanager
    async def read(self) -> AsyncIterator[aiosqlite.Connection]:
        """A consistent read: never sees another coroutine's uncommitted writes."""
        async with self._lock:
            yield self.db
