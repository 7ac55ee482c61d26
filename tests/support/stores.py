"""Stores for the tests: reading a store's file or database beside it (what it really
holds), marking it as made by an older version, watching the statements it runs, and
storing and searching as one owner, and a model whose background calls wait for the
test."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from spade_memory.base_memory.retrieval.dense import Vector
from spade_memory.base_memory.retrieval.embeddings import Embedder
from spade_memory.base_memory.store import pg_tables
from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.base_memory.store.tables import MIGRATIONS
from spade_memory.protocol.memories import (
    Category,
    MemoryList,
    SearchMemories,
    Stored,
    StoreMemory,
)
from spade_memory.protocol.ops import AppliesOps
from spade_memory.storage.connection import Migration
from spade_memory.storage.postgres import PgTransactions

ALICE = "alice@localhost"
Location = Callable[[str], "str | Path"]
"""Where a store lives, given a file name: a SQLite file, or a PostgreSQL URL."""


async def query(where: str | Path, sql: str, *params: object) -> list[tuple[object, ...]]:
    """Rows of ``sql`` (``?`` placeholders) read straight from a store's SQLite file or
    PostgreSQL database, beside the store: what it really holds."""
    if isinstance(where, Path):
        import sqlite3

        with sqlite3.connect(where) as db:
            return [tuple(row) for row in db.execute(sql, params)]
    import asyncpg

    from spade_memory.storage.postgres import numbered

    conn = await asyncpg.connect(where)
    try:
        return [tuple(row) for row in await conn.fetch(numbered(sql), *params)]
    finally:
        await conn.close()


async def set_back(
    where: str | Path, migration: Migration, on_postgres: Migration | None = None
) -> None:
    """The base memory store at ``where`` marked as made by the version before
    ``migration`` (on PostgreSQL, before ``on_postgres`` when its list differs): that
    migration runs at the next open, and those after it."""
    if isinstance(where, Path):
        await query(where, f"PRAGMA user_version = {MIGRATIONS.index(migration)}")
    else:
        version = pg_tables.MIGRATIONS.index(on_postgres or migration)
        await query(
            where, "UPDATE spade_memory_schema SET version = ? WHERE store = 'base_memory'", version
        )


async def everything(where: str | Path) -> str:
    """Every row of every table of a store, as text (to show what it no longer holds)."""
    if isinstance(where, Path):
        import sqlite3

        with sqlite3.connect(where) as db:
            return "\n".join(db.iterdump())
    tables = await query(
        where, "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1"
    )
    dumps = [str(await query(where, f'SELECT * FROM "{name}"')) for (name,) in tables]
    return "\n".join(dumps)


class Statements:
    """Every statement the store's connection runs."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def watch(self, store: AppliesOps) -> None:
        if isinstance(store._tx, PgTransactions):  # type: ignore[attr-defined]
            store._tx.trace = self.seen.append  # type: ignore[attr-defined]
            return
        db = store._tx.db  # type: ignore[attr-defined]
        await db.run(lambda conn: conn.set_trace_callback(self.seen.append))

    @property
    def commits(self) -> int:
        return sum(1 for statement in self.seen if statement.strip().upper() == "COMMIT")


PETS = [
    "The family dog is called Rex and loves the beach",
    "Quarterly taxes are due on the fifteenth",
    "The build server runs out of disk every Monday",
    "Carol prefers green tea over coffee",
]


QUESTION = "what is the name of our puppy"  # no word in common with the answer


async def put(
    store: LongTermStore,
    content: str,
    category: Category = "fact",
    owner: str = ALICE,
    **more: object,
) -> Stored:
    result = await store.apply(owner, StoreMemory(category=category, content=content, **more))  # type: ignore[arg-type]
    assert isinstance(result, Stored)
    return result


async def search(
    store: LongTermStore, query: str, owner: str = ALICE, **more: object
) -> MemoryList:
    result = await store.apply(owner, SearchMemories(query=query, **more))  # type: ignore[arg-type]
    assert isinstance(result, MemoryList)
    return result


class HeldInBackground:
    """The real model, but the background thread's calls wait until ``release``."""

    def __init__(self, model: Embedder) -> None:
        self.model, self.name, self.dimensions = model, model.name, model.dimensions
        self.entered, self._gate = threading.Event(), threading.Event()

    def embed(self, texts: Sequence[str]) -> Vector:
        if threading.current_thread().name.startswith("spade-memory-embed"):
            self.entered.set()
            assert self._gate.wait(timeout=60), "the test never released the gate"
        return self.model.embed(texts)

    def embed_queries(self, queries: Sequence[str]) -> list[Vector | None] | None:
        return self.model.embed_queries(queries)

    def load(self) -> None:
        self.model.load()

    def release(self) -> None:
        self._gate.set()
