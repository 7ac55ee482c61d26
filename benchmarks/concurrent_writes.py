"""Single stores from many writers at once, in the store: what group commit is for.

The same long-term store (BM25 alone, so the model does not compete for the CPU)
takes one-op stores from one writer at a time, then from sixteen at once, in
alternating blocks so that machine noise falls on both. Sixteen writers' stores
share transactions (see ``Transactions.inline``); one writer's cannot. Printed:
stores per second and the process's CPU time per store, each way.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.protocol.memories import StoreMemory

from .corpus import Corpus

WRITERS = 16
BLOCKS = 4


@dataclass
class WritesResult:
    writers: int
    per_second: float
    cpu_us: float
    """Process CPU time per store (the event loop and the database thread)."""


async def bench_concurrent_writes(writes: int = 6000) -> list[WritesResult]:
    """Stores per second and CPU per store with one writer and with ``WRITERS`` at once,
    ``writes`` stores each way."""
    texts = iter(Corpus(seed=11).memories(2 * writes + 200))
    elapsed = {1: 0.0, WRITERS: 0.0}
    cpu = {1: 0.0, WRITERS: 0.0}
    with tempfile.TemporaryDirectory() as tmp:
        store = await LongTermStore.open(Path(tmp) / "memory.db")
        try:
            for n in range(200):  # warm-up: the classifier, the file's first pages
                await store.apply(f"writer-{n % WRITERS}@localhost", _op(next(texts)))
            each = writes // BLOCKS
            for _ in range(BLOCKS):
                for writers in (1, WRITERS):
                    ops = [_op(next(texts)) for _ in range(each)]
                    seconds, cpu_seconds = await _write(store, ops, writers)
                    elapsed[writers] += seconds
                    cpu[writers] += cpu_seconds
        finally:
            await store.close()
    done = BLOCKS * (writes // BLOCKS)
    return [
        WritesResult(writers, done / elapsed[writers], cpu[writers] / done * 1e6)
        for writers in (1, WRITERS)
    ]


def _op(text: str) -> StoreMemory:
    return StoreMemory(category="fact", content=text)


async def _write(store: LongTermStore, ops: list[StoreMemory], writers: int) -> tuple[float, float]:
    """Seconds and CPU seconds for ``writers`` writers, each storing the next op of
    ``ops`` once its previous one is acknowledged, until none is left."""
    pending = iter(enumerate(ops))
    block = uuid.uuid4().hex  # request ids never repeat between blocks (a repeat is not stored)

    async def writer(n: int) -> None:
        for index, op in pending:
            await store.apply(f"writer-{n}@localhost", op, f"{block}-{index}")

    cpu, started = time.process_time(), time.perf_counter()
    await asyncio.gather(*(writer(n) for n in range(writers)))
    return time.perf_counter() - started, time.process_time() - cpu
