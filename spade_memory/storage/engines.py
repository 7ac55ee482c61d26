"""A store's transactions on either engine: a SQLite file, or a PostgreSQL URL."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from spade_memory.storage.connection import (
    Database,
    Migration,
    Synchronous,
    Transactions,
    open_migrated,
)
from spade_memory.storage.manifest import Manifest
from spade_memory.storage.postgres import PgMigration, PgTransactions, is_url, open_pool


async def open_transactions(
    path: str | Path,
    migrations: Sequence[Migration],
    pg_store: str,
    pg_migrations: Sequence[PgMigration],
    synchronous: Synchronous = "NORMAL",
    manifest: Manifest | None = None,
    on_open: Callable[[Database], Awaitable[None]] | None = None,
) -> Transactions | PgTransactions:
    """Open (creating or migrating) the store at ``path``: the SQLite file with
    ``migrations``, or, for a ``postgresql://`` URL, the schema ``pg_store`` with
    ``pg_migrations`` (``synchronous`` and ``manifest`` are then the server's business);
    ``on_open`` runs once, in a transaction of its own.

    Returns the store's transactions; raises ``StoreFault`` naming the file (or the
    server) when it is damaged, lost, unreachable or cannot be opened.
    """
    if not is_url(path):
        db = await open_migrated(path, migrations, synchronous, manifest, on_open)
        return Transactions(db, Path(path), manifest)
    tx = await open_pool(str(path), pg_store, pg_migrations)
    if on_open is not None:
        try:
            async with tx.write() as pooled:
                await on_open(pooled)
        except BaseException:
            await tx.close()
            raise
    return tx
