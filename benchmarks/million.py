"""A million memories of one owner: search in the store, then over XMPP.

``python -m benchmarks.million`` (``--memories N``) loads N memories of one
owner into a store file (texts from the benchmark corpus; vectors
synthesised, since embedding a million texts takes hours here: unit vectors
around 2,000 random centres, whose cosine to their centre is about 0.6, as
sentence embeddings cluster) and prints:

- load: memories stored per second (batches of 1,000), disk per million;
- the index: seconds to read the vectors and to build the approximate index,
  RSS per million with the exact and with the approximate index;
- recall@10 of the approximate index against exact search on 200 query
  vectors drawn like the memories, and the time the index alone takes to answer them
  (the dense half of a hybrid search);
- in the store: search p50 / p99 (10 results) with BM25 alone, and hybrid
  (the query embedded by the real model) with the approximate index; and a question
  asking for several memories ("What X has Sam Y?"), BM25 alone, with the entity graph's
  second round and without it (the file opened again with ``entity_graph=False``), asked
  in turn;
- over XMPP: ``spade-memory run`` serving that file, hybrid search round trips
  against a control whose reply is as large (the wire benchmark's echo agent).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import os
import sqlite3
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from spade_memory import SearchMemories, StoreMemory
from spade_memory.base_memory.retrieval import ann
from spade_memory.base_memory.retrieval.embeddings import load_embedder
from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.protocol.limits import Limits
from spade_memory.protocol.memories import MemoryStatsOp
from spade_memory.protocol.ops import Request
from spade_memory.testing import ChildProcess, MemoryServiceProcess
from spade_memory.xmpp import wire
from spade_memory.xmpp.lifecycle import start_agent, stop_agent

from .corpus import Corpus
from .footprint import rss_mib
from .stats import summary_ms
from .wire import ECHO_JID, Requester, peer_process

OWNER = "million@localhost"
CENTRES = 2000
ROOMY = Limits(max_memories_per_owner=100_000_000, max_bytes_per_owner=1 << 40)


def clustered(rng: np.random.Generator, count: int, centres: np.ndarray) -> np.ndarray:
    near = centres[rng.integers(0, len(centres), count)]
    vectors = near + rng.normal(scale=0.045, size=(count, centres.shape[1])).astype(np.float32)
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


async def load(path: Path, memories: int, figures: dict[str, float]) -> np.ndarray:
    """Store the memories (BM25 alone), then their synthetic vectors; returns the
    centres the vectors were drawn around."""
    corpus = Corpus(seed=21)
    store = await LongTermStore.open(path, limits=ROOMY)
    started = time.perf_counter()
    try:
        for start in range(0, memories, 1000):
            texts = corpus.memories(min(1000, memories - start))
            await store.batch(
                OWNER, [Request(StoreMemory(category="fact", content=t), None) for t in texts]
            )
    finally:
        await store.close()
    figures["stores per second"] = memories / (time.perf_counter() - started)
    centres = add_vectors(path)
    figures["disk MB per million"] = _disk_mb(path) * 1_000_000 / memories
    return centres


def add_vectors(path: Path) -> np.ndarray:
    """Give every memory of the store file a synthetic vector, of the shipped model's
    name; returns the centres they were drawn around."""
    rng = np.random.default_rng(5)
    centres = rng.normal(size=(CENTRES, 384)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    embedder = load_embedder()
    assert embedder is not None, "pip install 'spade-memory[embeddings]'"
    with contextlib.closing(sqlite3.connect(path)) as db:
        with db:  # one transaction
            seqs = [row[0] for row in db.execute("SELECT seq FROM memories ORDER BY seq")]
            for start in range(0, len(seqs), 50_000):
                chunk = seqs[start : start + 50_000]
                vectors = clustered(rng, len(chunk), centres)
                db.executemany(
                    "INSERT INTO embeddings (seq, model, vector) VALUES (?, ?, ?)",
                    [(s, embedder.name, v.tobytes()) for s, v in zip(chunk, vectors, strict=True)],
                )
        # the vectors went through the write-ahead log: the disk figure is the store's
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return centres


async def in_store(
    path: Path, centres: np.ndarray, queries: int, figures: dict[str, float]
) -> None:
    """Recall of the approximate index, RSS, and search latency in the store."""
    embedder = load_embedder()
    store = await LongTermStore.open(path, embedder=embedder)
    plain = await LongTermStore.open(path)  # the same file, BM25 alone
    # and without the entity graph (links there, unread): a list question's second round
    no_graph = await LongTermStore.open(path, entity_graph=False)
    try:
        base = rss_mib(os.getpid())
        started = time.perf_counter()
        await store.apply(OWNER, SearchMemories(query="warm up", limit=10))  # starts the read
        while store.ranking.building:
            await asyncio.sleep(0.5)
        await store.apply(OWNER, SearchMemories(query="read", limit=10))  # takes it over
        figures["vectors read seconds"] = time.perf_counter() - started
        figures["RSS MB per million, exact"] = (rss_mib(os.getpid()) - base) * 1e6 / _count(path)
        exact = store.ranking._indexes[OWNER]
        started = time.perf_counter()
        while store.ranking.building:
            await asyncio.sleep(0.5)
        figures["approximate build seconds"] = time.perf_counter() - started
        probes = clustered(np.random.default_rng(99), 200, centres)
        truths = [set(exact.similar(q, 10, ()).best) for q in probes]
        await store.apply(OWNER, SearchMemories(query="takes over", limit=10))
        approximate = store.ranking._indexes[OWNER]
        assert isinstance(approximate, ann.ApproximateIndex), "no approximate index"
        found = [set(approximate.similar(q, 10, ()).best) for q in probes]
        overlap = [len(t & f) / 10 for t, f in zip(truths, found, strict=True)]
        figures["recall@10"] = float(np.mean(overlap))
        taken = []  # the dense half alone, as a search without filters asks it
        for q in probes:
            begun = time.perf_counter()
            approximate.similar(q, 10, ())
            taken.append(time.perf_counter() - begun)
        alone = summary_ms(taken)
        figures["approximate index alone p50"], figures["approximate index alone p99"] = alone
        del exact, truths
        gc.collect()
        figures["RSS MB per million, approximate"] = (
            (rss_mib(os.getpid()) - base) * 1e6 / _count(path)
        )
        words = Corpus(seed=22).queries(queries + 20, 2)
        for name, target in (("BM25 alone", plain), ("hybrid", store)):
            samples = []
            for n, query in enumerate(words):
                begun = time.perf_counter()
                await target.apply(OWNER, SearchMemories(query=query, limit=10))
                if n >= 20:
                    samples.append(time.perf_counter() - begun)
            figures[f"in-store {name} p50"], figures[f"in-store {name} p99"] = summary_ms(samples)
        asked = [f"What {a} has Sam {b}?" for a, b in (pair.split() for pair in words)]
        graph_samples: dict[str, list[float]] = {"with": [], "without": []}
        for n, query in enumerate(asked):
            for name, target in (("with", plain), ("without", no_graph)):
                begun = time.perf_counter()
                await target.apply(OWNER, SearchMemories(query=query, limit=10))
                if n >= 20:
                    graph_samples[name].append(time.perf_counter() - begun)
        for name, taken in graph_samples.items():
            p50, p99 = summary_ms(taken)
            figures[f"in-store list question, BM25, {name} the graph p50"] = p50
            figures[f"in-store list question, BM25, {name} the graph p99"] = p99
    finally:
        await no_graph.close()
        await plain.close()
        await store.close()
        # nothing was written without the graph: the note it left would have the next
        # open (the wire part's) scan the million memories for missing links
        with contextlib.closing(sqlite3.connect(path)) as db, db:
            db.execute("DELETE FROM graph_gaps")


async def over_xmpp(data_dir: Path, queries: int, figures: dict[str, float]) -> None:
    """``spade-memory run`` on the file: hybrid search round trips against the control."""
    service = MemoryServiceProcess(
        data_dir, "--services", "base-memory", "--max-memories-per-owner", "100000000",
        "--max-bytes-per-owner", str(1 << 40),
    )  # fmt: skip
    service.start()
    echo: ChildProcess = peer_process("echo", ECHO_JID, str(service.port))
    echo.start()
    agent = Requester(OWNER, "bench", port=service.port)
    try:
        await start_agent(agent)
        memory = agent.memory
        await memory.search_memories("warm up", limit=10)
        while (stats := await memory.get_memory_stats()) is None or (
            stats.vector_index != "approximate"
        ):
            await asyncio.sleep(2.0)
            await memory.search_memories("takes over", limit=10)
        words = iter(Corpus(seed=23).queries(queries + 50, 2))

        async def search() -> None:
            await memory.search_memories(next(words), limit=10)

        async def control() -> None:
            request = wire.request_message(ECHO_JID, MemoryStatsOp(), uuid.uuid4().hex)
            request.set_metadata("reply", "ten-memories")
            assert await memory.transport.round_trip(request) is not None

        samples: dict[str, list[float]] = {"search": [], "control": []}
        for n in range(queries + 50):
            for name, run in (("search", search), ("control", control)):
                begun = time.perf_counter()
                await run()
                if n >= 50:
                    samples[name].append(time.perf_counter() - begun)
        for name, taken in samples.items():
            figures[f"xmpp {name} p50"], figures[f"xmpp {name} p99"] = summary_ms(taken)
        assert service.process is not None
        figures["service RSS MB"] = rss_mib(service.process.pid)
    finally:
        await stop_agent(agent)
        echo.stop()
        service.stop()


def _count(path: Path) -> int:
    with sqlite3.connect(path) as db:
        return int(db.execute("SELECT COUNT(*) FROM memories").fetchone()[0])


def _disk_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*")) / (1 << 20)


async def main(args: argparse.Namespace) -> None:
    console = Console()
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        data_dir = Path(tmp) / "data"
        data_dir.mkdir()
        path = data_dir / "base-memory.db"
        with console.status(f"storing {args.memories:,} memories ..."):
            centres = await load(path, args.memories, figures)
        with console.status("searching in the store ..."):
            await in_store(path, centres, args.queries, figures)
        if not args.skip_wire:
            with console.status("searching over XMPP ..."):
                await over_xmpp(data_dir, args.queries, figures)
    table = Table("figure", "value", title=f"{args.memories:,} memories of one owner")
    for name, value in figures.items():
        table.add_row(name, f"{value:,.3f}" if value < 10 else f"{value:,.0f}")
    with_graph = figures["in-store list question, BM25, with the graph p50"]
    without = figures["in-store list question, BM25, without the graph p50"]
    table.add_row("list question p50 with vs without the graph", f"{with_graph / without:.2f}x")
    if "xmpp search p50" in figures:
        ratio = figures["xmpp search p50"] / figures["xmpp control p50"]
        table.add_row("xmpp search p50 vs control", f"{ratio:.2f}x")
    console.print(table)


if __name__ == "__main__":
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    parser = argparse.ArgumentParser(prog="python -m benchmarks.million", description=__doc__)
    parser.add_argument("--memories", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--skip-wire", action="store_true")
    parser.add_argument("--dir", default=None, help="where the store file goes (default: tmp)")
    asyncio.run(main(parser.parse_args()))
