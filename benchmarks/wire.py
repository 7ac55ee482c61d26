"""Round trips over XMPP: a bare SPADE request/reply vs the memory agent's ops.

Five processes share one embedded XMPP server: the server itself, an echo
agent, two base memory agents (``spade-memory run --external-server``), one
with hybrid search and one with BM25 alone, and the requester (this
process). The echo agent and the memory agents are set up alike (own
process, same server), so the ratio is the memory agent's own cost. The
kinds of request are timed in alternating blocks, so that machine noise
falls on all of them. Then batches of a hundred stores (to each memory agent)
and of a hundred searches, and bare messages, are sent four at a time, for rates,
with the CPU time each process spent per item.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from spade.agent import Agent

from spade_memory import MemoryClient, MemoryMixin
from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.base_memory.store.tables import content_key
from spade_memory.protocol.batch import Batch, BatchResults
from spade_memory.protocol.memories import (
    MemoryList,
    MemoryStatsOp,
    SearchMemories,
    Stored,
    StoreMemory,
)
from spade_memory.testing import ChildProcess, MemoryServiceProcess, free_ports
from spade_memory.xmpp import wire
from spade_memory.xmpp.lifecycle import start_agent, stop_agent

from .corpus import Corpus
from .peers import READY
from .stats import CpuMeter, summary_ms

ECHO_JID = "bench-echo@localhost"


class Requester(MemoryMixin, Agent):  # type: ignore[misc]
    pass


@dataclass
class WireResult:
    name: str
    p50: float
    p99: float
    count: int


def peer_process(*args: str) -> ChildProcess:
    """A child process of `benchmarks.peers` (a bare XMPP server or an echo agent)."""
    return ChildProcess([sys.executable, "-m", "benchmarks.peers", *args], READY)


BM25_JID = "base-bm25@localhost"


async def bench_wire(
    round_trips: int = 2000, blocks: int = 10, batches: int = 200
) -> tuple[list[WireResult], list[RateResult]]:
    """Round trips of each kind (p50, p99), and the rates of batched requests."""
    with tempfile.TemporaryDirectory() as tmp:
        port, s2s = free_ports(2)
        server = peer_process("server", str(Path(tmp) / "xmpp"), str(port), str(s2s))
        echo = peer_process("echo", ECHO_JID, str(port))
        env = {"SPADE_MEMORY_PASSWORD": "bench"}
        memory = MemoryServiceProcess(
            Path(tmp) / "memory", "--external-server", "--services", "base-memory", env=env
        )
        bm25 = MemoryServiceProcess(
            Path(tmp) / "bm25", "--external-server", "--services", "base-memory",
            "--base-jid", BM25_JID, "--no-dense-search", env=env,
        )  # fmt: skip
        for service in (memory, bm25):
            service.command[service.command.index("--port") + 1] = str(port)
        started: list[ChildProcess] = []
        try:
            for child in (server, echo, memory, bm25):
                child.start()
                started.append(child)
            pids = {
                name: child.process.pid
                for name, child in (("server", server), ("echo", echo), ("memory", memory),
                                    ("bm25", bm25))
                if child.process is not None
            }  # fmt: skip
            return await _measure(port, round_trips, blocks, batches, pids)
        finally:
            for child in reversed(started):
                child.stop()


@dataclass
class RateResult:
    name: str
    per_second: float
    """Items (memories, searches, messages) per second."""
    messages_per_second: float
    cpu_us: dict[str, float] = field(default_factory=dict)
    """CPU time per item of the agent that served it, the XMPP server and the requester
    (``agent``, ``server``, ``requester``), in µs: where the two cores went."""


async def _measure(
    port: int, round_trips: int, blocks: int, batches: int, pids: dict[str, int]
) -> tuple[list[WireResult], list[RateResult]]:
    # a batch of a hundred searches is one request: its reply may take seconds
    agent = Requester(
        f"bench-{uuid.uuid4().hex[:6]}@localhost", "bench", port=port, memory_timeout=60.0
    )
    await start_agent(agent)
    try:
        return await _measure_with(agent.memory, round_trips, blocks, batches, pids)
    finally:
        await stop_agent(agent)


async def _measure_with(
    memory: MemoryClient, round_trips: int, blocks: int, batches: int, pids: dict[str, int]
) -> tuple[list[WireResult], list[RateResult]]:
    corpus = Corpus(seed=5)
    texts = iter(corpus.memories(2 * round_trips + 2400 + 4 * batches * BATCH))  # warm-up, floor
    queries = iter(corpus.queries(2 * round_trips + 400 + batches * BATCH, 2))

    async def bare(reply: str | None = None) -> None:
        request = wire.request_message(ECHO_JID, MemoryStatsOp(), uuid.uuid4().hex)
        if reply is not None:
            request.set_metadata("reply", reply)
        assert await memory.transport.round_trip(request) is not None, "echo agent did not answer"

    async def bare_large() -> None:
        await bare("ten-memories")

    async def store() -> None:
        await memory.store_memory("fact", next(texts))

    async def store_bm25() -> None:
        await memory.request(BM25_JID, StoreMemory(category="fact", content=next(texts)))

    async def search() -> None:
        await memory.search_memories(next(queries), limit=10)

    async def search_bm25() -> None:
        await memory.request(BM25_JID, SearchMemories(query=next(queries), limit=10))

    kinds: dict[str, Callable[[], Awaitable[None]]] = {
        "bare SPADE request/reply": bare,
        "store_memory": store,
        "store_memory, BM25 alone": store_bm25,
        "search_memories, hybrid (10 results)": search,
        "search_memories, BM25 alone (10 results)": search_bm25,
        "control: bare, reply of 10 memories": bare_large,
    }
    for _ in range(1000):  # memories to search in, and warm-up
        await store()
        await memory.request(BM25_JID, StoreMemory(category="fact", content=next(texts)))
    for run in kinds.values():
        for _ in range(100):
            await run()
    samples: dict[str, list[float]] = {name: [] for name in kinds}
    for _ in range(blocks):
        for name, run in kinds.items():
            for _ in range(round_trips // blocks):
                start = time.perf_counter()
                await run()
                samples[name].append(time.perf_counter() - start)
    rates = await _rates(memory, texts, queries, batches, pids)
    return [WireResult(name, *summary_ms(s), len(s)) for name, s in samples.items()], rates


BATCH = 100
"""Ops per batch request (the default ``--max-batch-ops``)."""
IN_FLIGHT = 4
"""Batch requests (or bare messages) sent before the first answer is awaited."""


async def _rates(
    memory: MemoryClient,
    texts: Iterator[str],
    queries: Iterator[str],
    batches: int,
    pids: dict[str, int],
) -> list[RateResult]:
    """Stores and searches per second in batches of ``BATCH``, ``IN_FLIGHT`` at a time,
    and bare messages per second sent the same way, with the CPU time each process
    spent per item."""

    async def stores() -> None:
        ops = [StoreMemory(category="fact", content=next(texts)) for _ in range(BATCH)]
        outcomes = await memory.batch(memory.base_memory_jid, ops)
        assert all(isinstance(o, Stored) for o in outcomes), outcomes[:3]

    async def stores_bm25() -> None:
        ops = [StoreMemory(category="fact", content=next(texts)) for _ in range(BATCH)]
        outcomes = await memory.batch(BM25_JID, ops)
        assert all(isinstance(o, Stored) for o in outcomes), outcomes[:3]

    async def searches() -> None:
        ops = [SearchMemories(query=next(queries), limit=10) for _ in range(BATCH)]
        outcomes = await memory.batch(memory.base_memory_jid, ops)
        assert all(isinstance(o, MemoryList) for o in outcomes), outcomes[:3]

    async def bare() -> None:
        request = wire.request_message(ECHO_JID, MemoryStatsOp(), uuid.uuid4().hex)
        assert await memory.transport.round_trip(request) is not None

    async def bare_batch() -> None:
        """A batch of stores to the echo agent, answered with a hundred stores' results,
        read as ``MemoryClient.batch`` reads them: the transport's part of a batch."""
        ops = [StoreMemory(category="fact", content=next(texts)) for _ in range(BATCH)]
        body = Batch(ops=[op.model_dump(mode="json", exclude_none=True) for op in ops])
        request = wire.request_message(ECHO_JID, body, uuid.uuid4().hex)
        request.set_metadata("reply", "hundred-stored")
        reply = await memory.transport.round_trip(request)
        assert reply is not None, "echo agent did not answer"
        results = BatchResults.model_validate_json(reply.body).results
        assert all(Stored.model_validate(item.result) for item in results)

    async def rate(
        name: str, send: Callable[[], Awaitable[None]], count: int, per: int, agent: str
    ) -> RateResult:
        """``count`` sends, ``IN_FLIGHT`` at a time, of ``per`` items each, served by the
        process ``agent``."""
        pending = iter(range(count))

        async def sender() -> None:
            for _ in pending:
                await send()

        processes = {"agent": pids[agent], "server": pids["server"], "requester": os.getpid()}
        meter = CpuMeter(processes)
        meter.start()
        started = time.perf_counter()
        await asyncio.gather(*(sender() for _ in range(IN_FLIGHT)))
        messages = count / (time.perf_counter() - started)
        return RateResult(name, messages * per, messages, meter.per_request_us(count * per))

    results = [
        await rate(f"store_memory, batches of {BATCH}", stores, batches, BATCH, "memory"),
        await rate(
            f"store_memory, BM25 alone, batches of {BATCH}", stores_bm25, batches, BATCH, "bm25"
        ),
        await rate(
            f"search_memories, batches of {BATCH}", searches, max(1, batches // 4), BATCH,
            "memory",
        ),
        await rate(
            f"control: bare request/reply the size of a batch of {BATCH} stores, each way",
            bare_batch, batches, BATCH, "echo",
        ),
        await rate("bare SPADE request/reply (one op each)", bare, batches * 10, 1, "echo"),
    ]  # fmt: skip
    floor = await sqlite_floor([next(texts) for _ in range(batches * BATCH)])
    floor_name = f"SQLite alone: the rows, FTS5 and indexes, {BATCH} a commit"
    return [*results, RateResult(floor_name, floor, 0, {"agent": 1e6 / floor})]


async def sqlite_floor(texts: list[str]) -> float:
    """Rows per second that SQLite alone takes into the store's own schema (memories
    table, its indexes and FTS5 index), ``BATCH`` rows a transaction, in this process:
    what a store costs before the change feed, quotas, request ids and the agent."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "floor.db"
        await (await LongTermStore.open(path)).close()  # the schema
        db = sqlite3.connect(path, isolation_level="IMMEDIATE")
        try:
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA wal_autocheckpoint=0")  # as the store: checkpoints elsewhere
            started = time.perf_counter()
            for start in range(0, len(texts), BATCH):
                now = time.time()
                db.executemany(
                    "INSERT INTO memories (id, owner, category, content, confidence,"
                    " created_at, last_accessed, content_key, space)"
                    " VALUES (?, 'floor@localhost', 'fact', ?, 1.0, ?, ?, ?, 'floor@localhost')",
                    [
                        (str(uuid.uuid4()), text, now, now, content_key(text))
                        for text in texts[start : start + BATCH]
                    ],
                )
                db.execute(  # the word index, one statement a batch as the store does
                    "INSERT INTO memories_fts (rowid, content, context)"
                    " SELECT seq, content, context FROM memories WHERE seq > ?",
                    (start,),
                )
                db.commit()
            return len(texts) / (time.perf_counter() - started)
        finally:
            db.close()
