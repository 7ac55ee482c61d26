"""What differs between the two engines a long-term store runs on, chosen once at open.

A SQLite file has one writer, this store. A PostgreSQL database may be shared by
several agents writing side by side: rows another agent is changing must be locked
or skipped, and anything may change between two transactions. The store's other
statements are the same on both; ``filters`` and the ranking are told the engine's
``name`` (``sizes``, ``words`` and ``journal`` ask ``storage.postgres.dialect`` for
the few of theirs that differ).
"""

from __future__ import annotations

from dataclasses import dataclass

from spade_memory.storage.connection import Transactions
from spade_memory.storage.postgres import Dialect, PgTransactions


@dataclass(frozen=True)
class Engine:
    """The engine of one store and its few differing SQL fragments."""

    name: Dialect
    single_writer: bool
    """Whether this store is the database's only writer (SQLite): a batch's stores may
    then write their bookkeeping once (``ledger``), and no other agent stores an
    expiring memory unseen."""
    lock_row: str
    """What reading a memory about to change adds: on PostgreSQL the row is locked to
    the commit, so another agent changing it waits and then sees it as this write left
    it."""
    share_row: str
    """What the background embedding's reading of a memory's text adds: on PostgreSQL the
    row is held to the commit, so a change by another transaction either waits for the
    vector and then replaces it, or is seen, and the old text's vector is not written."""
    skip_locked: str
    """What a purge's selection adds: on PostgreSQL, rows another agent is purging stay
    its own (two purges would otherwise both record the same deletion)."""
    newest_change: str
    """The statement reading the change feed's newest number (no row: none yet)."""


SQLITE = Engine(
    name="sqlite",
    single_writer=True,
    lock_row="",
    share_row="",
    skip_locked="",
    newest_change="SELECT seq FROM sqlite_sequence WHERE name = 'changes'",
)
POSTGRESQL = Engine(
    name="postgresql",
    single_writer=False,
    lock_row=" FOR UPDATE",
    share_row=" FOR SHARE",
    skip_locked=" FOR UPDATE SKIP LOCKED",
    newest_change="SELECT pg_sequence_last_value(pg_get_serial_sequence('changes', 'seq'))",
)


def engine_of(tx: Transactions | PgTransactions) -> Engine:
    """Returns the engine ``tx`` writes to."""
    return POSTGRESQL if isinstance(tx, PgTransactions) else SQLITE
