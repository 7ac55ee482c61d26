"""Applied request ids: a write is applied once per (owner, request id).

The id and the write's result are stored in the write's own transaction, so
a client's retry, even after a crash of the agent, gets the first answer back
instead of a second effect. Ids are kept for ``KEEP_SECONDS``: each store
forgets older ones when it opens and every ``RequestLog.FORGET_EVERY`` claims.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from ..ops import Record
from .connection import Database

R = TypeVar("R")

KEEP_SECONDS = 24 * 3600

CREATE_TABLE = (
    """CREATE TABLE applied_requests (
        owner TEXT NOT NULL,
        request_id TEXT NOT NULL,
        result TEXT NOT NULL,
        applied_at REAL NOT NULL,
        PRIMARY KEY (owner, request_id)
    ) WITHOUT ROWID""",
    "CREATE INDEX applied_requests_age ON applied_requests(applied_at)",
)


class RequestLog:
    """The applied request ids of one store; old ones are forgotten as claims come in."""

    FORGET_EVERY = 1000
    """Claims between two deletions of ids older than ``KEEP_SECONDS``."""

    def __init__(self) -> None:
        self._claims = 0

    async def claim(self, db: Database, owner: str, request_id: str | None, result: Record) -> bool:
        """Record the request's result (nothing without a request id).

        Returns False if this id was already applied.
        """
        if request_id is None:
            return True
        cursor = await db.execute(
            "INSERT INTO applied_requests VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
            (owner, request_id, result.model_dump_json(), time.time()),
        )
        self._claims += 1
        if self._claims % self.FORGET_EVERY == 0:
            await forget_old(db)
        return bool(cursor.rowcount)


async def earlier(
    db: Database, owner: str, request_id: str | None, parse: Callable[[str], R]
) -> R | None:
    """The result recorded for an applied request id, read by ``parse``; None if the id
    was not applied (or there is none)."""
    if request_id is None:
        return None
    rows = await db.execute_fetchall(
        "SELECT result FROM applied_requests WHERE owner = ? AND request_id = ?",
        (owner, request_id),
    )
    return next((parse(str(row[0])) for row in rows), None)


async def forget_old(db: Database) -> None:
    """Delete ids older than ``KEEP_SECONDS``; call in a write transaction."""
    await db.execute(
        "DELETE FROM applied_requests WHERE applied_at < ?", (time.time() - KEEP_SECONDS,)
    )
