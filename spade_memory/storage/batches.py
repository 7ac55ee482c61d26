"""Several ops of one owner applied in one SQLite transaction (langgraph's ``abatch``).

Every store's ``batch`` comes here: one write transaction for the whole list,
so a batch of a hundred stores is one commit, not a hundred. Inside it each op
runs in a savepoint: an op that fails (a typed error, or an unexpected
exception answered ``internal-server-error``) is rolled back alone and the
others go on. A lone op needs no savepoint: its error rolls the transaction
back, and an unexpected exception propagates to the serving behaviour.

A named fault of the file (a full disk, damage, an I/O error: see ``faults``)
rolls the whole transaction back and fails every op of it with the fault's
typed failure, since none of them was committed; damage also puts the store
out of service until it is restored.

A store may defer work to one statement per batch (``settle``): it is called
outside every savepoint, before each op and before the commit, so what it
writes is never rolled back with one op while another op's rows stay.

A store may also apply a run of like ops in one pass (``Together``: a run of
plain stores is one read and one insert, not a hundred of each). The run has
one savepoint: when it raises anything but a fault of the file (a quota it would
cross, say), it is rolled back and applied op by op, so each op still gets its
own answer.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from spade_memory.protocol.errors import InternalServerError, MemoryServiceError
from spade_memory.protocol.ops import Outcome, Record, Request
from spade_memory.storage.connection import Database, Transacting
from spade_memory.storage.faults import free_bytes, is_damage

logger = logging.getLogger("spade_memory.storage")

ApplyOne = Callable[[Database, Request], Awaitable[Record]]
"""Applies one request inside the open transaction; returns its result or raises."""
Settle = Callable[[Database, Request | None], Awaitable[None]]
"""Writes what the ops so far deferred, if the next request (None: the commit) needs it."""


@dataclass(frozen=True)
class Together:
    """Ops a store applies several at a time: ``accepts`` says which requests may join a
    run; ``apply`` applies a run of two or more in order and returns one result each, or
    raises (the run is then rolled back and applied op by op)."""

    accepts: Callable[[Request], bool]
    apply: Callable[[Database, Sequence[Request]], Awaitable[list[Record]]]


async def apply_all(
    tx: Transacting,
    requests: Sequence[Request],
    apply_one: ApplyOne,
    *,
    inline: bool = False,
    settle: Settle | None = None,
    together: Together | None = None,
) -> list[Outcome]:
    """Apply ``requests`` in order in one transaction.

    With ``inline``, the whole transaction runs in the connection's thread in one trip
    (``Transactions.inline``): ``apply_one`` (and ``settle``, ``together``) must then
    await nothing but the connection. ``settle`` runs before each op (or run) and before
    the commit, outside the ops' savepoints. Consecutive requests ``together`` accepts are
    applied as one run. Returns one outcome per request (its result or its typed error);
    raises only when a lone request fails unexpectedly or the commit itself fails.
    """
    if tx.out_of_service is not None:
        return [tx.out_of_service] * len(requests)

    async def transaction(db: Database) -> list[Outcome]:
        outcomes: list[Outcome] = []
        if len(requests) == 1:
            outcomes.append(await _alone(db, requests[0], apply_one))
        else:
            if not db.in_transaction:
                await db.execute("BEGIN IMMEDIATE")
            for run in _runs(requests, together):
                if settle is not None:
                    await settle(db, run[0])
                results = None
                if len(run) > 1 and together is not None:
                    results = await _run_in_savepoint(db, tx, run, together)
                if results is not None:
                    outcomes += results
                    continue
                for index, request in enumerate(run):
                    if settle is not None and index > 0:
                        await settle(db, request)
                    outcomes.append(await _in_savepoint(db, tx, request, apply_one))
        if settle is not None and db.in_transaction:
            await settle(db, None)
        return outcomes

    try:
        if inline:
            return await tx.inline(transaction)
        async with tx.write() as db:
            return await transaction(db)
    except Exception as error:
        failure = tx.fault(error)
        if failure is None:
            raise
        if is_damage(error):
            tx.out_of_service = failure
            logger.error("%s is damaged (%s): its store is out of service", tx.path, error)
        else:
            logger.warning("%s: %s (%s MiB free)", tx.path, failure.text, _free_mib(tx))
        return [failure] * len(requests)


async def _alone(db: Database, request: Request, apply_one: ApplyOne) -> Outcome:
    try:
        return await apply_one(db, request)
    except MemoryServiceError as error:
        if db.in_transaction:
            await db.rollback()
        return error


async def _in_savepoint(
    db: Database, tx: Transacting, request: Request, apply_one: ApplyOne
) -> Outcome:
    await db.execute("SAVEPOINT op")
    try:
        result = await apply_one(db, request)
    except Exception as error:
        if tx.fault(error) is not None:
            raise  # the file's (or the server's) fault: the whole transaction goes
        await db.execute("ROLLBACK TO op")
        await db.execute("RELEASE op")
        if isinstance(error, MemoryServiceError):
            return error
        logger.exception("a batched %s failed", request.op.tag())
        return InternalServerError("the memory agent failed")
    await db.execute("RELEASE op")
    return result


def _runs(requests: Sequence[Request], together: Together | None) -> list[list[Request]]:
    """``requests`` in order, cut into runs: the longest stretches ``together`` accepts,
    and each other request alone."""
    runs: list[list[Request]] = []
    joining = False
    for request in requests:
        joins = together is not None and together.accepts(request)
        if joins and joining:
            runs[-1].append(request)
        else:
            runs.append([request])
        joining = joins
    return runs


async def _run_in_savepoint(
    db: Database, tx: Transacting, run: Sequence[Request], together: Together
) -> list[Outcome] | None:
    """The results of ``run`` applied in one pass; None (nothing of it left) when it
    raised anything but a fault, for the caller to apply it op by op."""
    await db.execute("SAVEPOINT run")
    try:
        results = await together.apply(db, run)
    except Exception as error:
        if tx.fault(error) is not None:
            raise
        await db.execute("ROLLBACK TO run")
        await db.execute("RELEASE run")
        logger.debug("a run of %d ops goes op by op: %r", len(run), error)
        return None
    await db.execute("RELEASE run")
    return list(results)


def _free_mib(tx: Transacting) -> str:
    free = free_bytes(Path(tx.path))  # None for a server's URL
    return "?" if free is None else str(free >> 20)
