"""What the entity graph costs: a store with its entities against one without, and a
search with the second round against one without, in the same run on the same data.

``python -m benchmarks.graph`` (``--stores N``, ``--memories N``, ``--queries N``):

- a store, one at a time through the store (its whole write path, no XMPP): with the
  graph's links written and with them left out, in alternating rounds on fresh files;
  the ratio is an upper bound for a store over the wire, whose round trip adds the same
  time to both;
- a search among ``--memories`` memories of one owner (BM25; texts from the benchmark
  corpus, each naming one of 40 people): questions the second round answers ("What ...
  has NAME ...?") and questions it leaves alone, each with the second round and with it
  switched off, interleaved;
- the disk the graph takes: the file's bytes per memory with and without it;
- the relink at open of a store whose links older rules made (``extract.FINDER``): the
  linked file of the disk measure opened with its rules' version set back, against the
  same file opened again (nothing to relink), in alternating rounds on copies;
- a store over XMPP (``--wire-stores``; ``--skip-wire`` leaves it out): an embedded
  server and two base memory agents in processes of their own, BM25 alone both, one run
  with ``--no-entity-graph``; single stores in alternating blocks, then batches of a
  hundred, four in flight, in alternating rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import sqlite3
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from rich.console import Console
from rich.table import Table

from spade_memory import MemoryClient
from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.protocol.limits import Limits
from spade_memory.protocol.memories import SearchMemories, Stored, StoreMemory
from spade_memory.protocol.ops import Request
from spade_memory.testing import ChildProcess, MemoryServiceProcess, free_ports
from spade_memory.xmpp.lifecycle import start_agent, stop_agent

from .corpus import Corpus
from .stats import summary_ms
from .wire import Requester, peer_process

OWNER = "graph@localhost"
PEOPLE = (
    "Ada Alan Bea Cem Dora Emil Fay Gus Hana Ivo Jana Kofi Lena Milo Nia Omar Pia Quin Rui"
    " Sara Timo Uma Vik Wes Xia Yuri Zoe Abel Bruna Chen Dev Elif Finn Gaia Hugo Iris Jon"
    " Kira Luca Maya"
).split()
ROOMY = Limits(max_memories_per_owner=100_000_000, max_bytes_per_owner=1 << 40)


def texts(count: int, seed: int) -> list[str]:
    """Memories of the corpus, each starting with one of ``PEOPLE`` (a subject)."""
    corpus, rng = Corpus(seed=seed), random.Random(seed)
    return [f"{rng.choice(PEOPLE)} {corpus.sentence(rng.randint(6, 20))}" for _ in range(count)]


async def store_cost(folder: Path, stores: int, rounds: int = 4) -> tuple[list[float], ...]:
    """Seconds per store with and without the graph, over alternating rounds."""
    taken: tuple[list[float], list[float]] = ([], [])
    for round_ in range(2 * rounds):
        linked = round_ % 2 == 0
        store = await LongTermStore.open(
            folder / f"stores-{round_}.db", limits=ROOMY, entity_graph=linked
        )
        try:
            for text in texts(stores, seed=round_ // 2):
                begun = time.perf_counter()
                await store.apply(OWNER, StoreMemory(category="fact", content=text))
                taken[0 if linked else 1].append(time.perf_counter() - begun)
        finally:
            await store.close()
    return taken


async def disk_per_memory(folder: Path, memories: int, linked: bool) -> float:
    path = folder / f"disk-{linked}.db"
    store = await LongTermStore.open(path, limits=ROOMY, entity_graph=linked)
    try:
        all_texts = texts(memories, seed=11)
        for start in range(0, memories, 1000):
            requests = [
                Request(StoreMemory(category="fact", content=text), None)
                for text in all_texts[start : start + 1000]
            ]
            await store.batch(OWNER, requests)
    finally:
        await store.close()
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path.stat().st_size / memories


async def relink_cost(folder: Path, rounds: int = 3) -> tuple[float, float]:
    """Seconds to open the linked file ``disk_per_memory`` made when older rules made
    its links (every memory linked again), and to open it with its links current (the
    median of ``rounds`` each, alternating). Raises ``AssertionError`` if the relink
    made other links than the stores did."""
    taken: tuple[list[float], list[float]] = ([], [])
    links = "SELECT COUNT(*), SUM(seq), SUM(LENGTH(key)) FROM memory_entities"
    with sqlite3.connect(folder / "disk-True.db") as db:
        stored = db.execute(links).fetchone()
    for round_ in range(2 * rounds):
        again = round_ % 2 == 0
        path = folder / f"relink-{round_}.db"
        shutil.copy(folder / "disk-True.db", path)
        if again:
            with sqlite3.connect(path) as db:
                db.execute("UPDATE graph_finder SET version = 0")
        begun = time.perf_counter()
        store = await LongTermStore.open(path, limits=ROOMY)
        taken[0 if again else 1].append(time.perf_counter() - begun)
        await store.close()
        with sqlite3.connect(path) as db:
            assert db.execute(links).fetchone() == stored, "the relink made other links"
        path.unlink()
    return statistics.median(taken[0]), statistics.median(taken[1])


async def search_cost(folder: Path, queries: int) -> dict[str, tuple[float, ...]]:
    """Search p50 / p99 (ms) of each kind of question, with and without the graph: the
    linked file ``disk_per_memory`` made and a copy of it opened without the graph,
    asked in turn."""
    path = folder / "disk-True.db"
    shutil.copy(path, folder / "search-without.db")
    with_graph = await LongTermStore.open(path, limits=ROOMY)
    without = await LongTermStore.open(
        folder / "search-without.db", limits=ROOMY, entity_graph=False
    )
    words = Corpus(seed=23).queries(queries, 2)
    rng = random.Random(3)
    kinds = {
        "asks for several": [
            f"What {a} has {rng.choice(PEOPLE)} {b}?" for a, b in (p.split() for p in words)
        ],
        "asks for one": [f"When did {rng.choice(PEOPLE)} {pair}?" for pair in words],
    }
    figures: dict[str, tuple[float, ...]] = {}
    try:
        for kind, asked in kinds.items():
            samples: tuple[list[float], list[float]] = ([], [])
            for n, query in enumerate(asked * 2):
                on = n % 2 == 0
                begun = time.perf_counter()
                await (with_graph if on else without).apply(
                    OWNER, SearchMemories(query=query, limit=10)
                )
                samples[0 if on else 1].append(time.perf_counter() - begun)
            figures[kind] = (*summary_ms(samples[0]), *summary_ms(samples[1]))
    finally:
        await with_graph.close()
        await without.close()
    return figures


GRAPH_JID, PLAIN_JID = "base-graph@localhost", "base-plain@localhost"
"""The memory agents of the wire comparison: with the graph, and without it."""
BATCH, IN_FLIGHT = 100, 4


async def wire_store_cost(stores: int, batches: int, blocks: int = 10) -> dict[str, list[float]]:
    """Seconds per single store, and per store of a batch, of each memory agent over
    XMPP (``GRAPH_JID``, ``PLAIN_JID``)."""
    with tempfile.TemporaryDirectory() as tmp:
        port, s2s = free_ports(2)
        server = peer_process("server", str(Path(tmp) / "xmpp"), str(port), str(s2s))
        agents = [
            MemoryServiceProcess(
                Path(tmp) / jid.split("@")[0], "--external-server", "--services", "base-memory",
                "--base-jid", jid, "--no-dense-search", *flags,
                env={"SPADE_MEMORY_PASSWORD": "bench"},
            )
            for jid, flags in ((GRAPH_JID, ()), (PLAIN_JID, ("--no-entity-graph",)))
        ]  # fmt: skip
        for service in agents:
            service.command[service.command.index("--port") + 1] = str(port)
        started: list[ChildProcess] = []
        try:
            for child in (server, *agents):
                child.start()
                started.append(child)
            requester = Requester(
                f"bench-{uuid.uuid4().hex[:6]}@localhost", "bench", port=port, memory_timeout=60.0
            )
            await start_agent(requester)
            try:
                return await _stores_over_xmpp(requester.memory, stores, batches, blocks)
            finally:
                await stop_agent(requester)
        finally:
            for child in reversed(started):
                child.stop()


async def _stores_over_xmpp(
    memory: MemoryClient, stores: int, batches: int, blocks: int
) -> dict[str, list[float]]:
    pending = iter(texts(200 + stores + batches * BATCH, seed=29))
    jids = (GRAPH_JID, PLAIN_JID)

    async def store(jid: str) -> None:
        result = await memory.request(jid, StoreMemory(category="fact", content=next(pending)))
        assert isinstance(result, Stored), result

    async def batch(jid: str) -> None:
        ops = [StoreMemory(category="fact", content=next(pending)) for _ in range(BATCH)]
        outcomes = await memory.batch(jid, ops)
        assert all(isinstance(o, Stored) for o in outcomes), outcomes[:3]

    for _ in range(100):  # warm-up
        for jid in jids:
            await store(jid)
    taken: dict[str, list[float]] = {
        f"{kind} {jid}": [] for kind in "one batch".split() for jid in jids
    }
    for _ in range(blocks):
        for jid in jids:
            for _ in range(stores // (2 * blocks)):
                begun = time.perf_counter()
                await store(jid)
                taken[f"one {jid}"].append(time.perf_counter() - begun)

    async def batches_of(jid: str, count: int) -> float:
        """Seconds per store of ``count`` batches sent ``IN_FLIGHT`` at a time."""
        sends = iter(range(count))

        async def sender() -> None:
            for _ in sends:
                await batch(jid)

        begun = time.perf_counter()
        await asyncio.gather(*(sender() for _ in range(IN_FLIGHT)))
        return (time.perf_counter() - begun) / (count * BATCH)

    for _ in range(4):  # alternating rounds
        for jid in jids:
            taken[f"batch {jid}"].append(await batches_of(jid, max(1, batches // 8)))
    return taken


async def main(args: argparse.Namespace) -> None:
    console = Console()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        linked, bare = await store_cost(folder, args.stores)
        with_links, without = summary_ms(linked), summary_ms(bare)
        table = Table("a store (in the store)", "p50 ms", "p99 ms", "p50 vs without")
        table.add_row("with its entities", f"{with_links[0]:.3f}", f"{with_links[1]:.3f}",
                      f"{with_links[0] / without[0]:.2f}x")  # fmt: skip
        table.add_row("without", f"{without[0]:.3f}", f"{without[1]:.3f}", "1.00x")
        console.print(table)
        disk = {flag: await disk_per_memory(folder, args.memories, flag) for flag in (True, False)}
        console.print(
            f"disk: {disk[True]:.0f} bytes per memory with the graph, {disk[False]:.0f}"
            f" without ({disk[True] / disk[False]:.2f}x), at {args.memories:,} memories"
        )
        relinked, plain = await relink_cost(folder)
        console.print(
            f"relink at open: {args.memories:,} memories linked again in {relinked:.2f} s"
            f" ({(relinked - plain) * 1e3 / args.memories:.3f} ms a memory, an open"
            f" without it taking {plain:.2f} s)"
        )
        searched = await search_cost(folder, args.queries)
        table = Table(
            f"a search among {args.memories:,}", "p50 ms", "p99 ms", "without: p50", "p99",
            "p50 vs without",
        )  # fmt: skip
        for kind, (p50, p99, off50, off99) in searched.items():
            table.add_row(kind, f"{p50:.2f}", f"{p99:.2f}", f"{off50:.2f}", f"{off99:.2f}",
                          f"{p50 / off50:.2f}x")  # fmt: skip
        console.print(table)
    if args.skip_wire:
        return
    wire = await wire_store_cost(args.wire_stores, args.wire_batches)
    table = Table("a store over XMPP (BM25)", "with the graph", "without", "with vs without")
    one, other = summary_ms(wire[f"one {GRAPH_JID}"]), summary_ms(wire[f"one {PLAIN_JID}"])
    table.add_row("one at a time: p50 ms", f"{one[0]:.2f}", f"{other[0]:.2f}",
                  f"{one[0] / other[0]:.2f}x")  # fmt: skip
    table.add_row("one at a time: p99 ms", f"{one[1]:.2f}", f"{other[1]:.2f}",
                  f"{one[1] / other[1]:.2f}x")  # fmt: skip
    per = {jid: 1e3 * statistics.mean(wire[f"batch {jid}"]) for jid in (GRAPH_JID, PLAIN_JID)}
    table.add_row(f"in batches of {BATCH}, {IN_FLIGHT} in flight: ms per store",
                  f"{per[GRAPH_JID]:.3f}", f"{per[PLAIN_JID]:.3f}",
                  f"{per[GRAPH_JID] / per[PLAIN_JID]:.2f}x")  # fmt: skip
    console.print(table)


def run() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.graph", description=__doc__)
    parser.add_argument("--stores", type=int, default=500, help="stores per round (500)")
    parser.add_argument("--memories", type=int, default=10_000, help="memories searched")
    parser.add_argument("--queries", type=int, default=200, help="questions of each kind")
    parser.add_argument("--wire-stores", type=int, default=2000, help="single stores over XMPP")
    parser.add_argument("--wire-batches", type=int, default=80, help="batches of 100 over XMPP")
    parser.add_argument("--skip-wire", action="store_true", help="leave the XMPP part out")
    asyncio.run(main(parser.parse_args()))


if __name__ == "__main__":
    run()
