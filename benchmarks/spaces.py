"""Shared spaces: what reading several spaces costs, and how soon a subscriber hears.

    python -m benchmarks.spaces [--memories 10000] [--queries 300] [--notices 300] [--dense]

1. In the store (the long-term store as the base memory agent opens it): one
   agent's own space holds ``--memories``, alone in one store and, in a second
   store, beside three spaces it belongs to that hold as many. The same queries
   search its space in the first store, its space in the second, and its space
   and the three at once, alternating query by query so machine noise hits all.
   Printed: p50 and p99 of each, and the p50 ratio to the first (target for all
   four spaces: at most 1.5x).
   BM25 alone unless ``--dense`` (then the embedding model ranks too).
2. Over the wire: ``spade-memory run`` in its own process; a writer stores into a
   space, one store after another, and a subscriber (a second agent) receives
   each change notice. Printed: the delay from the store's acknowledgement to the
   notice, p50 and p99 (negative: the notice came first), against the store's
   own round trip measured in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import uuid
from pathlib import Path

from rich.console import Console
from rich.table import Table

from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.protocol.memories import SearchMemories, StoreMemory
from spade_memory.protocol.ops import Place, Request
from spade_memory.server.runtime import use_uvloop
from spade_memory.testing import MemoryServiceProcess
from spade_memory.xmpp.lifecycle import start_agent, stop_agent

from .corpus import Corpus
from .stats import summary_ms
from .wire import Requester

OWNER = "bench@localhost"
SPACES = 3
CHUNK = 500
WARM_UP = 20
"""Queries run first and not counted (the page cache and SQLite's statements warm up)."""


async def _seed(store: LongTermStore, place: Place, texts: list[str]) -> None:
    for start in range(0, len(texts), CHUNK):
        requests = [
            Request(StoreMemory(category="fact", content=text), None, (place,))
            for text in texts[start : start + CHUNK]
        ]
        await store.batch(OWNER, requests)


async def bench_search(memories: int, queries: int, dense: bool) -> dict[str, list[float]]:
    """Search latencies (seconds): the owner's space in a store of its own, the same
    space in a store that also holds three spaces, and all four spaces at once."""
    embedder = None
    if dense:
        from spade_memory.base_memory.retrieval.embeddings import load_embedder

        embedder = load_embedder()
    corpus = Corpus(seed=3)
    own = Place(OWNER)
    spaces = [Place(str(uuid.uuid4()), f"team-{n}", "writer") for n in range(SPACES)]
    own_texts = corpus.memories(memories)
    with tempfile.TemporaryDirectory() as tmp:
        alone = await LongTermStore.open(Path(tmp) / "alone.db", embedder=embedder)
        shared = await LongTermStore.open(Path(tmp) / "shared.db", embedder=embedder)
        try:
            await _seed(alone, own, own_texts)
            await _seed(shared, own, own_texts)
            for place in spaces:
                await _seed(shared, place, corpus.memories(memories))
            await alone.embedded()
            await shared.embedded()
            runs = {
                "own space, alone in its store": (alone, (own,)),
                "own space, beside 3 spaces": (shared, (own,)),
                "own + 3 spaces": (shared, (own, *spaces)),
            }
            times: dict[str, list[float]] = {name: [] for name in runs}
            for n, query in enumerate(corpus.queries(queries + WARM_UP, 2)):
                for name, (store, places) in runs.items():
                    request = Request(SearchMemories(query=query, limit=10), None, places)
                    started = time.perf_counter()
                    await store.batch(OWNER, [request])
                    if n >= WARM_UP:
                        times[name].append(time.perf_counter() - started)
            return times
        finally:
            await alone.close()
            await shared.close()


async def bench_notices(count: int) -> dict[str, list[float]]:
    """Store round trips and the delay from each store's acknowledgement to its notice."""
    with tempfile.TemporaryDirectory() as tmp:
        service = MemoryServiceProcess(Path(tmp) / "data", "--services", "base-memory")
        service.start()
        writer = Requester("writer@localhost", "bench", port=service.port)
        listener = Requester("listener@localhost", "bench", port=service.port)
        try:
            await start_agent(writer)
            await start_agent(listener)
            space = f"bench-{uuid.uuid4().hex[:8]}"
            await writer.memory.create_space(space)
            await writer.memory.grant(space, "listener@localhost", "reader")
            heard: dict[str, float] = {}
            everything = asyncio.Event()

            def arrived(change: object) -> None:
                heard[change.memory_id] = time.perf_counter()  # type: ignore[attr-defined]
                if len(heard) >= count:
                    everything.set()

            follower = await listener.memory.on_change(space, arrived)  # subscribed
            acknowledged: dict[str, float] = {}
            round_trips: list[float] = []
            team = writer.memory.space(space)
            for n in range(count):
                started = time.perf_counter()
                memory_id = str(await team.store_memory("fact", f"notice number {n}"))
                acknowledged[memory_id] = time.perf_counter()
                round_trips.append(acknowledged[memory_id] - started)
            await asyncio.wait_for(everything.wait(), 30)
            follower.cancel()
            delays = [heard[memory_id] - at for memory_id, at in acknowledged.items()]
            return {"store round trip": round_trips, "notice after acknowledgement": delays}
        finally:
            await stop_agent(listener)
            await stop_agent(writer)
            service.stop()


async def main(args: argparse.Namespace) -> None:
    console = Console()
    ranking = "BM25 and embeddings" if args.dense else "BM25"
    with console.status(f"loading {SPACES + 1} x {args.memories:,} memories ..."):
        searches = await bench_search(args.memories, args.queries, args.dense)
    table = Table(
        "search (10 results)", "p50 ms", "p99 ms", "p50 vs alone",
        title=f"In the store, {args.memories:,} memories per space, {ranking}",
    )  # fmt: skip
    own_p50 = summary_ms(next(iter(searches.values())))[0]
    for name, samples in searches.items():
        p50, p99 = summary_ms(samples)
        table.add_row(name, f"{p50:.2f}", f"{p99:.2f}", f"{p50 / own_p50:.2f}x")
    console.print(table)
    with console.status(f"{args.notices} stores into a space with a subscriber ..."):
        notices = await bench_notices(args.notices)
    table = Table(
        "over the wire", "p50 ms", "p99 ms", title=f"Change notices, {args.notices} stores"
    )
    for name, samples in notices.items():
        p50, p99 = summary_ms(samples)
        table.add_row(name, f"{p50:.2f}", f"{p99:.2f}")
    console.print(table)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--notices", type=int, default=300)
    parser.add_argument("--dense", action="store_true", help="rank with embeddings too")
    use_uvloop()
    asyncio.run(main(parser.parse_args()))
