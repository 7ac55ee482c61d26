"""Applied request ids: a write is applied once per (owner, request id).

The id and the write's result are stored in the write's own transaction, so
a client's retry, even after a crash of the agent, gets the first answer back
instead of a second effect. Ids are kept for ``KEEP_SECONDS``: each store
forgets older ones when it opens and every ``RequestLog.FORGET_EVERY`` claims.

On PostgreSQL several agents may get the same request id at once (a client that
failed over while the first agent was still at work). ``earlier`` then holds the
id for the rest of the transaction (an advisory lock), so the second agent waits
for the first one's commit and finds its answer instead of applying it again;
SQLite's single writer gives the same without a lock.

Each store has its own table (``RequestLog.table``): stores that share a
PostgreSQL database must not read each other's answers.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from spade_memory.protocol.ops import Record
from spade_memory.storage.connection import Database
from spade_memory.storage.postgres import dialect

R = TypeVar("R")

KEEP_SECONDS = 24 * 3600
TABLE = "applied_requests"
"""The long-term store's table (the first store had it; the others name their own)."""


def create_table(table: str = TABLE, *, postgresql: bool = False) -> tuple[str, str]:
    """The statements creating ``table`` and its index by age, on either engine."""
    real, rowid = ("DOUBLE PRECISION", "") if postgresql else ("REAL", " WITHOUT ROWID")
    return (
        f"""CREATE TABLE {table} (
        owner TEXT NOT NULL,
        request_id TEXT NOT NULL,
        result TEXT NOT NULL,
        applied_at {real} NOT NULL,
        PRIMARY KEY (owner, request_id)
    ){rowid}""",
        f"CREATE INDEX {table}_age ON {table}(applied_at)",
    )


CREATE_TABLE = create_table()


class RequestLog:
    """The applied request ids of one store (in ``table``); old ones are forgotten as
    claims come in."""

    FORGET_EVERY = 1000
    """Claims between two deletions of ids older than ``KEEP_SECONDS``."""

    def __init__(self, table: str = TABLE) -> None:
        self.table = table
        self._claims = 0

    async def claim(self, db: Database, owner: str, request_id: str | None, result: Record) -> bool:
        """Record the request's result (nothing without a request id).

        Returns False if this id was already applied.
        """
        if request_id is None:
            return True
        cursor = await db.execute(
            self._insert, (owner, request_id, result.model_dump_json(), time.time())
        )
        await self._counted(db, 1)
        return bool(cursor.rowcount)

    async def claim_all(self, db: Database, claims: Sequence[tuple[str, str, str, float]]) -> None:
        """Record claims already checked to be new (owner, request id, result JSON, when),
        in one statement (a batch's ``ledger``)."""
        if claims:
            await db.executemany(self._insert, claims)
            await self._counted(db, len(claims))

    @property
    def _insert(self) -> str:
        return f"INSERT INTO {self.table} VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING"

    async def _counted(self, db: Database, claims: int) -> None:
        """``claims`` more ids were recorded (in ``db``'s transaction): forget the old ones
        if a multiple of ``FORGET_EVERY`` was passed."""
        before, self._claims = self._claims, self._claims + claims
        if before // self.FORGET_EVERY != self._claims // self.FORGET_EVERY:
            await forget_old(db, self.table)

    async def earlier(
        self, db: Database, owner: str, request_id: str | None, parse: Callable[[str], R]
    ) -> R | None:
        """The result recorded for an applied request id, read by ``parse``; None if the
        id was not applied (or there is none). Call it before applying the request: on
        PostgreSQL it holds the id until the transaction ends (see the module's text)."""
        if request_id is None:
            return None
        if dialect(db) == "postgresql":
            await db.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(?, 0))",
                (f"{self.table} {owner} {request_id}",),  # the id last: no two keys read alike
            )
        rows = await db.execute_fetchall(
            f"SELECT result FROM {self.table} WHERE owner = ? AND request_id = ?",
            (owner, request_id),
        )
        return next((parse(str(row[0])) for row in rows), None)


async def forget_old(db: Database, table: str = TABLE) -> None:
    """Delete ids older than ``KEEP_SECONDS`` from ``table``; call in a write transaction."""
    await db.execute(f"DELETE FROM {table} WHERE applied_at < ?", (time.time() - KEEP_SECONDS,))


async def forget_owner(db: Database, owner: str, table: str = TABLE, dry_run: bool = False) -> int:
    """Delete ``owner``'s applied ids, with the results they keep, from ``table`` (unless
    ``dry_run``); call in a write transaction. Returns how many there were. A retry of
    one of those requests is then applied again, as after ``KEEP_SECONDS``."""
    ((count,),) = await db.execute_fetchall(
        f"SELECT COUNT(*) FROM {table} WHERE owner = ?", (owner,)
    )
    if not dry_run:
        await db.execute(f"DELETE FROM {table} WHERE owner = ?", (owner,))
    return int(count)
