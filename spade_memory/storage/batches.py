"""Several ops of one owner applied in one SQLite transaction (langgraph's ``abatch``).

Every store's ``batch`` comes here: one write transaction for the whole list,
so a batch of a hundred stores is one commit, not a hundred. Inside it each op
runs in a savepoint: an op that fails (a typed error, or an unexpected
exception answered ``internal-server-error``) is rolled back alone and the
others go on. A lone op needs no savepoint: its error rolls the transaction
back, and an unexpected exception propagates to the serving behaviour.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence

import aiosqlite

from ..errors import InternalServerError, MemoryServiceError
from ..ops import Outcome, Record, Request
from .connection import Transactions

logger = logging.getLogger("spade_memory.storage")

ApplyOne = Callable[[aiosqlite.Connection, Request], Awaitable[Record]]
"""Applies one request inside the open transaction; returns its result or raises."""


async def apply_all(
    tx: Transactions, requests: Sequence[Request], apply_one: ApplyOne
) -> list[Outcome]:
    """Apply ``requests`` in order in one transaction.

    Returns one outcome per request (its result or its typed error); raises
    only when a lone request fails unexpectedly or the commit itself fails.
    """
    async with tx.write() as db:
        if len(requests) == 1:
            return [await _alone(db, requests[0], apply_one)]
        if not db.in_transaction:
            await db.execute("BEGIN IMMEDIATE")
        return [await _in_savepoint(db, request, apply_one) for request in requests]


async def _alone(db: aiosqlite.Connection, request: Request, apply_one: ApplyOne) -> Outcome:
    try:
        return await apply_one(db, request)
    except MemoryServiceError as error:
        if db.in_transaction:
            await db.rollback()
        return error


async def _in_savepoint(db: aiosqlite.Connection, request: Request, apply_one: ApplyOne) -> Outcome:
    await db.execute("SAVEPOINT op")
    try:
        result = await apply_one(db, request)
    except Exception as error:
        await db.execute("ROLLBACK TO op")
        await db.execute("RELEASE op")
        if isinstance(error, MemoryServiceError):
            return error
        logger.exception("a batched %s failed", request.op.tag())
        return InternalServerError("the memory agent failed")
    await db.execute("RELEASE op")
    return result
