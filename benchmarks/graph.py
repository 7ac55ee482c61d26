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
- the disk the graph takes: the file's bytes per memory with and without it.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sqlite3
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from rich.console import Console
from rich.table import Table

from spade_memory.base_memory.graph import expansion
from spade_memory.base_memory.graph import links as graph_links
from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.protocol.limits import Limits
from spade_memory.protocol.memories import SearchMemories, StoreMemory
from spade_memory.protocol.ops import Request

from .corpus import Corpus
from .stats import summary_ms

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


def switched(linked: bool) -> Callable[..., Awaitable[None]]:
    """The graph's link writer, or one that writes nothing."""

    async def nothing(_db: object, _memories: object) -> None:
        return None

    return ORIGINAL_LINK if linked else nothing


ORIGINAL_LINK = graph_links.link
ORIGINAL_RULE = expansion.calls_for


async def store_cost(folder: Path, stores: int, rounds: int = 4) -> tuple[list[float], ...]:
    """Seconds per store with and without links, over alternating rounds."""
    taken: tuple[list[float], list[float]] = ([], [])
    for round_ in range(2 * rounds):
        linked = round_ % 2 == 0
        graph_links.link = switched(linked)  # type: ignore[assignment]
        store = await LongTermStore.open(folder / f"stores-{round_}.db", limits=ROOMY)
        try:
            for text in texts(stores, seed=round_ // 2):
                begun = time.perf_counter()
                await store.apply(OWNER, StoreMemory(category="fact", content=text))
                taken[0 if linked else 1].append(time.perf_counter() - begun)
        finally:
            await store.close()
            graph_links.link = ORIGINAL_LINK  # type: ignore[assignment]
    return taken


async def disk_per_memory(folder: Path, memories: int, linked: bool) -> float:
    graph_links.link = switched(linked)  # type: ignore[assignment]
    path = folder / f"disk-{linked}.db"
    store = await LongTermStore.open(path, limits=ROOMY)
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
        graph_links.link = ORIGINAL_LINK  # type: ignore[assignment]
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path.stat().st_size / memories


async def search_cost(folder: Path, memories: int, queries: int) -> dict[str, tuple[float, ...]]:
    """Search p50 / p99 (ms) of each kind of question, with and without the second round."""
    path = folder / "disk-True.db"  # the linked file ``disk_per_memory`` made
    store = await LongTermStore.open(path, limits=ROOMY)
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
                second_round = n % 2 == 0
                expansion.calls_for = ORIGINAL_RULE if second_round else (lambda _q: None)  # type: ignore[assignment]
                begun = time.perf_counter()
                await store.apply(OWNER, SearchMemories(query=query, limit=10))
                samples[0 if second_round else 1].append(time.perf_counter() - begun)
            expansion.calls_for = ORIGINAL_RULE  # type: ignore[assignment]
            figures[kind] = (*summary_ms(samples[0]), *summary_ms(samples[1]))
    finally:
        expansion.calls_for = ORIGINAL_RULE  # type: ignore[assignment]
        await store.close()
    return figures


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
        searched = await search_cost(folder, args.memories, args.queries)
        table = Table(
            f"a search among {args.memories:,}", "p50 ms", "p99 ms", "without: p50", "p99",
            "p50 vs without",
        )  # fmt: skip
        for kind, (p50, p99, off50, off99) in searched.items():
            table.add_row(kind, f"{p50:.2f}", f"{p99:.2f}", f"{off50:.2f}", f"{off99:.2f}",
                          f"{p50 / off50:.2f}x")  # fmt: skip
        console.print(table)


def run() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.graph", description=__doc__)
    parser.add_argument("--stores", type=int, default=500, help="stores per round (500)")
    parser.add_argument("--memories", type=int, default=10_000, help="memories searched")
    parser.add_argument("--queries", type=int, default=200, help="questions of each kind")
    asyncio.run(main(parser.parse_args()))


if __name__ == "__main__":
    run()
