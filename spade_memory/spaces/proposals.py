"""The writes of governed spaces that wait for an admin: proposals, kept in the directory
of spaces (so they survive restarts and any memory agent of the deployment decides them).

A proposal is pending until an admin approves or rejects it, or until it expires; it is
decided once, by whichever admin (through whichever agent) is first: the decision is one
``UPDATE … WHERE state = 'pending'``. The same write sent again (the same request id)
finds the proposal it made the first time. An approved proposal holds its write's
``result`` once applied; one approved without a result (its agent stopped in between)
is ``unapplied``, for the sweep to apply.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Literal

from spade_memory.protocol.errors import ResourceConstraint
from spade_memory.storage.connection import Database, Transacting

State = Literal["pending", "approved", "rejected", "expired", "failed"]
"""Where a proposal is: waiting, applied, refused, too old, or approved but not
applicable any more (the memory it changes was deleted meanwhile, the quota is full)."""

_NAMESPACE = uuid.UUID("5b7f1c2e-3d0a-4e58-9a61-6d2f0c4b8e17")
_COLUMNS = (
    "id, space_id, proposer, address, op, created_at, expires_at, state, decided_by,"
    " decided_at, note, result"
)


@dataclass(frozen=True)
class Proposal:
    """One write waiting for (or decided by) an admin of a governed space."""

    id: str
    space_id: str
    proposer: str
    """The writer's bare JID: the write is applied as its own."""
    address: str
    """Where the proposer hears the outcome (the full JID it wrote from)."""
    op: str
    """The write, as the JSON the proposer sent."""
    created_at: float
    expires_at: float
    state: State = "pending"
    decided_by: str | None = None
    decided_at: float | None = None
    note: str | None = None
    """Why it was rejected (the admin's reason), or why it could not be applied."""
    result: str | None = None
    """The applied write's result, as JSON (None until it is applied)."""


async def _within(db: Database, space_id: str, proposer: str, bounds: tuple[int, int]) -> None:
    """Raises ``ResourceConstraint`` when ``proposer`` or the space has as many pending
    proposals as ``bounds`` allow."""
    mine, everyone = bounds
    rows = await db.execute_fetchall(
        "SELECT COUNT(*), COALESCE(SUM(CASE WHEN proposer = ? THEN 1 ELSE 0 END), 0)"
        " FROM proposals WHERE space_id = ? AND state = 'pending'",
        (proposer, space_id),
    )
    (waiting, its_own), *_ = rows
    if its_own >= mine:
        raise ResourceConstraint(
            f"{proposer} has {its_own} proposals waiting in this space, the most one writer"
            f" may have ({mine}); one decided or expired makes room"
        )
    if waiting >= everyone:
        raise ResourceConstraint(
            f"{waiting} proposals wait in this space, the most it keeps ({everyone});"
            " one decided or expired makes room"
        )


class Proposals:
    """The proposals table of the directory of spaces (both engines)."""

    def __init__(
        self, tx: Transacting, write: Callable[[], AbstractAsyncContextManager[Database]]
    ) -> None:
        self._tx = tx
        self._write = write

    async def propose(
        self, space_id: str, proposer: str, address: str, op: str, lifetime: float,
        request_id: str | None = None, bounds: tuple[int, int] | None = None,
    ) -> tuple[Proposal, bool]:  # fmt: skip
        """Keep ``op`` of ``proposer`` for the admins of the space, pending for
        ``lifetime`` seconds, unless ``bounds`` (the proposer's, the space's) of pending
        proposals are reached.

        Returns the proposal and whether it is new (False: the same request made it
        before); raises ``ResourceConstraint`` naming the bound reached, and the
        directory's typed failure on a fault.
        """
        key = (
            uuid.uuid4()
            if request_id is None
            else uuid.uuid5(_NAMESPACE, f"{space_id}\n{proposer}\n{request_id}")
        )
        now = time.time()
        proposal = Proposal(str(key), space_id, proposer, address, op, now, now + lifetime)
        async with self._write() as db:
            if bounds is not None and not await db.execute_fetchall(
                "SELECT 1 FROM proposals WHERE id = ?", (proposal.id,)
            ):  # (a request made again finds its proposal, whatever the count)
                await _within(db, space_id, proposer, bounds)
            made = await db.execute_fetchall(
                f"INSERT INTO proposals ({_COLUMNS})"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (id) DO NOTHING RETURNING id",
                (proposal.id, space_id, proposer, address, op, now, proposal.expires_at,
                 "pending", None, None, None, None),
            )  # fmt: skip
        if made:
            return proposal, True
        existing = await self.get(proposal.id)
        assert existing is not None, "a proposal is only deleted with its space"
        return existing, False

    async def get(self, proposal_id: str) -> Proposal | None:
        """The proposal with this id, in whatever state, if there is one."""
        rows = await self._tx.read(f"SELECT {_COLUMNS} FROM proposals WHERE id = ?", (proposal_id,))
        return next((_proposal(row) for row in rows), None)

    async def pending(self, space_id: str, proposer: str | None = None) -> list[Proposal]:
        """The space's pending proposals (only ``proposer``'s when given), oldest first."""
        sql = f"SELECT {_COLUMNS} FROM proposals WHERE state = 'pending' AND space_id = ?"
        parameters: tuple[str, ...] = (space_id,)
        if proposer is not None:
            sql += " AND proposer = ?"
            parameters += (proposer,)
        rows = await self._tx.read(sql + " ORDER BY created_at, id", parameters)
        return [_proposal(row) for row in rows]

    async def count_pending(self, space_id: str) -> int:
        """How many proposals of the space wait for a decision."""
        ((count,),) = await self._tx.read(
            "SELECT COUNT(*) FROM proposals WHERE state = 'pending' AND space_id = ?",
            (space_id,),
        )
        return int(count)

    async def decide(
        self, proposal_id: str, state: State, by: str, note: str | None = None
    ) -> Proposal | None:
        """Take the pending proposal out of waiting, as ``state``.

        Returns it decided; None when it is not pending (decided or expired before).
        """
        async with self._write() as db:
            rows = await db.execute_fetchall(
                "UPDATE proposals SET state = ?, decided_by = ?, decided_at = ?, note = ?"
                f" WHERE id = ? AND state = 'pending' RETURNING {_COLUMNS}",
                (state, by, time.time(), note, proposal_id),
            )
        return next((_proposal(row) for row in rows), None)

    async def applied(self, proposal_id: str, result: str) -> Proposal | None:
        """Record what applying the approved proposal gave (its write's result, JSON).

        Returns the proposal as recorded (None: there is none any more)."""
        async with self._write() as db:
            rows = await db.execute_fetchall(
                f"UPDATE proposals SET result = ? WHERE id = ? RETURNING {_COLUMNS}",
                (result, proposal_id),
            )
        return next((_proposal(row) for row in rows), None)

    async def failed(self, proposal_id: str, why: str) -> Proposal | None:
        """Mark the approved proposal ``failed``: its write could not be applied.

        Returns the proposal as recorded (None: there is none any more)."""
        async with self._write() as db:
            rows = await db.execute_fetchall(
                "UPDATE proposals SET state = 'failed', note = ?"
                f" WHERE id = ? RETURNING {_COLUMNS}",
                (why, proposal_id),
            )
        return next((_proposal(row) for row in rows), None)

    async def unapplied(self, decided_before: float) -> list[Proposal]:
        """Approved proposals with no result, decided before ``decided_before``: their
        agent stopped between the approval and the write."""
        rows = await self._tx.read(
            f"SELECT {_COLUMNS} FROM proposals WHERE state = 'approved' AND result IS NULL"
            " AND decided_at <= ? ORDER BY decided_at",
            (decided_before,),
        )
        return [_proposal(row) for row in rows]

    async def expire(self, now: float | None = None) -> list[Proposal]:
        """Expire every pending proposal whose time is up.

        Returns them; writes nothing when none is due (it runs every minute).
        """
        now = time.time() if now is None else now
        due = await self._tx.read(
            "SELECT id FROM proposals WHERE state = 'pending' AND expires_at <= ? LIMIT 1",
            (now,),
        )
        if not due:
            return []
        async with self._write() as db:
            rows = await db.execute_fetchall(
                "UPDATE proposals SET state = 'expired', decided_at = ?"
                f" WHERE state = 'pending' AND expires_at <= ? RETURNING {_COLUMNS}",
                (now, now),
            )
        return [_proposal(row) for row in rows]


def _proposal(row: Sequence[object]) -> Proposal:
    return Proposal(
        id=str(row[0]),
        space_id=str(row[1]),
        proposer=str(row[2]),
        address=str(row[3]),
        op=str(row[4]),
        created_at=float(str(row[5])),
        expires_at=float(str(row[6])),
        state=str(row[7]),  # type: ignore[arg-type]
        decided_by=None if row[8] is None else str(row[8]),
        decided_at=None if row[9] is None else float(str(row[9])),
        note=None if row[10] is None else str(row[10]),
        result=None if row[11] is None else str(row[11]),
    )
