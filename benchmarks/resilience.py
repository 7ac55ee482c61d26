"""Resilience runs: load, XMPP server restarts under load, SIGKILL of the memory agents.

    python -m benchmarks.resilience [load|restart|crash|all]

Every part runs in its own OS process: SPADE's embedded XMPP server (a
standalone peer, so it can be restarted alone), the memory agents
(``spade-memory run --external-server``), an echo agent for the bare round
trip, and the client agents (this process). Each run prints its figures and
the process exits 1 when a check fails.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sqlite3
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.table import Table

from spade_memory import StoreMemory
from spade_memory.protocol.errors import MemoryServiceError
from spade_memory.protocol.memories import GetMemory, Memory, MemoryStatsOp
from spade_memory.server.runtime import PASSWORD_ENV
from spade_memory.testing import ChildProcess, MemoryServiceProcess, free_ports
from spade_memory.xmpp import wire
from spade_memory.xmpp.lifecycle import start_agent, stop_agent
from spade_memory.xmpp.reconnect import reconnector_of

from .stats import CpuMeter
from .wire import Requester as Client
from .wire import peer_process

ECHO_JID = "resilience-echo@localhost"
AGENTS = ("base-memory@localhost", "interaction-memory@localhost", "beads-sync@localhost")


class Cluster:
    """The XMPP server, the memory agents and (optionally) the echo agent, each a process."""

    def __init__(self, root: Path, *memory_args: str, echo: bool = False) -> None:
        self.port, s2s = free_ports(2)
        self.server = peer_process("server", str(root / "xmpp"), str(self.port), str(s2s))
        self.echo = peer_process("echo", ECHO_JID, str(self.port)) if echo else None
        self.memory = MemoryServiceProcess(
            root / "memory", "--external-server", *memory_args,
            port=self.port, env={PASSWORD_ENV: "resilience"},
        )  # fmt: skip

    @property
    def data_dir(self) -> Path:
        return self.memory.data_dir

    def start(self) -> None:
        self.server.start()
        if self.echo is not None:
            self.echo.start()
        self.memory.start(timeout=60)

    def stop(self) -> None:
        for child in (self.memory, self.echo, self.server):
            if child is not None:
                child.stop()


@contextmanager
def cluster(*memory_args: str, echo: bool = False) -> Iterator[Cluster]:
    with tempfile.TemporaryDirectory() as tmp:
        running = Cluster(Path(tmp), *memory_args, echo=echo)
        try:
            running.start()
            yield running
        finally:
            running.stop()


async def start_clients(count: int, port: int, name: str, **options: object) -> list[Client]:
    clients = [
        Client(f"{name}-{n}-{uuid.uuid4().hex[:6]}@localhost", "client", port=port, **options)
        for n in range(count)
    ]
    for client in clients:
        await start_agent(client)
    return clients


def memory_rows(data_dir: Path) -> list[tuple[str, str]]:
    """(id, content) of every memory in the base memory agent's SQLite file."""
    with sqlite3.connect(data_dir / "base-memory.db") as db:
        return [(str(i), str(c)) for i, c in db.execute("SELECT id, content FROM memories")]


# -- load -------------------------------------------------------------------------------


@dataclass
class LoadResult:
    clients: int
    stores_each: int
    stored: int
    errors: int
    locked: int
    seconds: float
    bare_per_s: float | None
    """Round trips per second to the echo agent, the baseline (None: not measured)."""
    cpu_us: dict[str, tuple[float, float]] = field(default_factory=dict)
    """CPU time per request of each process, (bare round trips, stores), in µs: where
    the machine's two cores go (empty where ``/proc`` cannot tell)."""
    embedding_seconds: float | None = None
    """With meaning search on: seconds from the last store until every memory of the
    run had its vector (the background embeds once the stores pause)."""
    embedding_cpu_us: float | None = None
    """CPU time of the memory agent per memory meanwhile, in µs."""

    @property
    def stores_per_s(self) -> float:
        return self.clients * self.stores_each / self.seconds

    @property
    def ok(self) -> bool:
        expected = self.clients * self.stores_each
        return self.stored == expected and self.errors == 0 and self.locked == 0


async def _bare_round_trips(clients: list[Client], each: int) -> float:
    """Round trips per second to the echo agent (no memory work), all clients at once."""

    async def one_client(client: Client) -> None:
        for _ in range(each):
            request = wire.request_message(ECHO_JID, MemoryStatsOp(), uuid.uuid4().hex)
            assert await client.memory.transport.round_trip(request) is not None, (
                "echo did not answer"
            )

    started = time.perf_counter()
    await asyncio.gather(*(one_client(c) for c in clients))
    return len(clients) * each / (time.perf_counter() - started)


async def run_load(
    clients: int = 16, stores: int = 1000, bare: int = 250, dense: bool = True
) -> LoadResult:
    """``clients`` agents each storing ``stores`` memories, one after another, at once
    (into an agent with meaning search on, unless not ``dense``), beside ``bare`` round
    trips per client to an echo agent before and after, the baseline (0: no baseline and
    no echo agent, for a check that asserts what was stored, not how fast)."""
    options = () if dense else ("--no-dense-search",)
    with cluster("--services", "base-memory", *options, echo=bare > 0) as running:
        agents = await start_clients(clients, running.port, "load", memory_timeout=10.0)
        errors = Counter[str]()

        async def store_all(n: int, agent: Client) -> None:
            for i in range(stores):
                try:
                    await agent.memory.store_memory("fact", f"client {n} fact {i}: load run")
                except MemoryServiceError as error:
                    errors[error.condition.value] += 1

        pids = {"XMPP server": _pid(running.server), "memory agent": _pid(running.memory)}
        if running.echo is not None:
            pids["echo agent"] = _pid(running.echo)
        meter = CpuMeter({**pids, "the clients": os.getpid()})
        bare_rates: list[float] = []
        try:
            meter.start()
            if bare:
                bare_rates.append(await _bare_round_trips(agents, bare))
            bare_cpu = meter.per_request_us(clients * bare) if bare else {}
            meter.start()
            started = time.perf_counter()
            await asyncio.gather(*(store_all(n, a) for n, a in enumerate(agents)))
            seconds = time.perf_counter() - started
            store_cpu = meter.per_request_us(clients * stores)
            embedding: tuple[float | None, float | None] = (None, None)
            if dense:  # the bare round trips after the run must not share the CPU with it
                meter.start()
                started = time.perf_counter()
                await _vectors_written(agents)
                cpu = meter.per_request_us(clients * stores).get("memory agent")
                embedding = (time.perf_counter() - started, cpu)
            if bare:
                bare_rates.append(await _bare_round_trips(agents, bare))
        finally:
            for agent in agents:
                await stop_agent(agent)
        locked = sum("database is locked" in line for line in running.memory.output)
        return LoadResult(
            clients, stores, len(memory_rows(running.data_dir)), sum(errors.values()), locked,
            seconds, sum(bare_rates) / len(bare_rates) if bare_rates else None,
            {name: (bare_cpu.get(name, 0.0), store_cpu.get(name, 0.0)) for name in meter.pids},
            *embedding,
        )  # fmt: skip


async def _vectors_written(clients: list[Client], timeout: float = 600.0) -> None:
    """Return once no memory of the clients waits for its vector; raises ``TimeoutError``
    after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        stats = await asyncio.gather(*(c.memory.get_memory_stats() for c in clients))
        if all(s is not None and s.waiting_vectors == 0 for s in stats):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"memories still wait for their vectors after {timeout:.0f}s")
        await asyncio.sleep(0.5)


def _pid(child: ChildProcess) -> int:
    assert child.process is not None
    return child.process.pid


# -- restart ----------------------------------------------------------------------------


@dataclass
class RestartResult:
    clients: int
    seconds: float
    restarts: int
    sent: int = 0
    answered: int = 0
    failed_typed: int = 0
    untyped: int = 0
    stored_twice: int = 0
    acked_missing: int = 0
    deduplicated: int = 0
    reconnect_s: list[float] = field(default_factory=list)
    """Per restart: seconds from the server being back to the last agent reconnected."""

    @property
    def ok(self) -> bool:
        return (
            self.sent == self.answered + self.failed_typed
            and self.untyped == 0
            and self.stored_twice == 0
            and self.acked_missing == 0
            and len(self.reconnect_s) == self.restarts
            and max(self.reconnect_s, default=0) <= 10
        )


async def run_restart(clients: int = 4, seconds: float = 30, restarts: int = 2) -> RestartResult:
    """``clients`` agents storing for ``seconds`` while the XMPP server restarts ``restarts``
    times; every memory agent and client must be connected again within 10 s."""
    result = RestartResult(clients, seconds, restarts)
    acked: dict[str, str] = {}
    with cluster() as running:
        agents = await start_clients(
            clients, running.port, "restart", memory_timeout=3.0, memory_attempts=4
        )
        back_at: dict[str, float] = {}
        for agent in agents:
            reconnector = reconnector_of(agent)
            assert reconnector is not None
            reconnector.callbacks.append(
                lambda jid=str(agent.jid): back_at.__setitem__(jid, time.monotonic())
            )
        deadline = time.monotonic() + seconds

        async def keep_storing(n: int, agent: Client) -> None:
            i = 0
            while time.monotonic() < deadline:
                content = f"client {n} memory {i}: restart run"
                i += 1
                result.sent += 1
                try:
                    stored = await agent.memory.request(
                        agent.memory.base_memory_jid, StoreMemory(category="fact", content=content)
                    )
                except MemoryServiceError:
                    result.failed_typed += 1
                    continue
                except Exception:
                    result.untyped += 1
                    continue
                assert stored is not None
                result.answered += 1
                result.deduplicated += stored.deduplicated
                acked[stored.id] = content

        async def restart_server() -> None:
            for _ in range(restarts):
                await asyncio.sleep(seconds / (restarts + 1))
                mark = len(running.memory.output)
                back_at.clear()
                running.server.stop()
                await asyncio.sleep(0.5)
                await asyncio.to_thread(running.server.start)
                up = time.monotonic()
                result.reconnect_s.append(
                    await _all_reconnected(running, agents, back_at, mark, up)
                )

        writers = [keep_storing(n, a) for n, a in enumerate(agents)]
        try:
            await asyncio.gather(restart_server(), *writers)
        finally:
            for agent in agents:
                await stop_agent(agent)
        rows = memory_rows(running.data_dir)
    contents = Counter(content for _id, content in rows)
    result.stored_twice = sum(1 for count in contents.values() if count > 1)
    present = dict(rows)
    result.acked_missing = sum(1 for i, c in acked.items() if present.get(i) != c)
    return result


async def _all_reconnected(
    running: Cluster, agents: list[Client], back_at: dict[str, float], mark: int, up: float
) -> float:
    """Seconds from ``up`` until every memory agent and client is connected again."""
    wanted = set(AGENTS) | {str(a.jid) for a in agents}
    limit = up + 15
    while time.monotonic() < limit:
        seen: dict[str, float] = dict(back_at)
        output, at = running.memory.output[mark:], running.memory.output_at[mark:]
        for line, when in zip(output, at, strict=False):
            for jid in AGENTS:
                if f"{jid} reconnected" in line:
                    seen.setdefault(jid, when)
        if wanted <= set(seen):
            return max(seen[jid] for jid in wanted) - up
        await asyncio.sleep(0.1)
    return float("inf")


# -- crash ------------------------------------------------------------------------------


@dataclass
class CrashResult:
    kills: int = 0
    acked_at_kill: list[int] = field(default_factory=list)
    """Writes acknowledged when each kill came (each kill lands among running writes)."""
    seconds: float = 0.0
    acked: Counter[str] = field(default_factory=Counter)
    missing: Counter[str] = field(default_factory=Counter)
    duplicated_notes: int = 0
    failed_typed: int = 0

    @property
    def total_acked(self) -> int:
        return sum(self.acked.values())

    @property
    def ok(self) -> bool:
        return sum(self.missing.values()) == 0 and self.duplicated_notes == 0


async def run_crash(
    kills: int = 5, writes: int = 10_000, writers: int = 8, timeout: float = 900.0
) -> CrashResult:
    """A writer storing as fast as it can (``writers`` calls at a time: memories, notes,
    working memory) while the memory agents are SIGKILLed ``kills`` times, each after
    another share of the ``writes`` was acknowledged and a random moment more; after the
    last restart every acknowledged write must be there, and every memory in beads.

    The kills follow the writes' progress, not the clock, so a slow machine gets the
    same run, only longer (``TimeoutError`` after ``timeout`` seconds without it)."""
    result = CrashResult()
    memories: dict[str, str] = {}
    notes: dict[str, list[str]] = {}
    context: dict[str, dict[str, int]] = {}
    started = time.monotonic()
    with cluster("--beads-debounce", "0.5") as running:
        (writer,) = await start_clients(
            1, running.port, "crash", memory_timeout=2.0, memory_attempts=30
        )
        memory = writer.memory
        enough = asyncio.Event()

        async def write(w: int) -> None:
            conversation, session = f"conv-{w}", f"session-{w}"
            notes[conversation], context[session] = [], {}
            await memory.session(session).create()
            i = 0
            while not enough.is_set():
                i += 1
                try:
                    if i % 10 < 7:
                        content = f"writer {w} memory {i}: crash run"
                        memory_id = await memory.store_memory("fact", content)
                        memories[str(memory_id)] = content
                        result.acked["memories"] += 1
                    elif i % 10 < 9:
                        note = f"writer {w} note {i}"
                        await memory.add_information(conversation, note)
                        notes[conversation].append(note)
                        result.acked["notes"] += 1
                    else:
                        await memory.session(session).update_context({f"k{i}": i})
                        context[session][f"k{i}"] = i
                        result.acked["working memory"] += 1
                except MemoryServiceError:
                    result.failed_typed += 1

        async def acknowledged(count: int) -> None:
            while result.total_acked < count:
                if time.monotonic() - started > timeout:
                    raise TimeoutError(f"{result.total_acked} of {count} writes acknowledged")
                await asyncio.sleep(0.05)

        async def kill_at_random() -> None:
            share = max(1, writes // (kills + 1))
            for _ in range(kills):
                await acknowledged(result.total_acked + share)
                await asyncio.sleep(random.uniform(0.0, 1.0))  # somewhere among the writes
                result.acked_at_kill.append(result.total_acked)
                running.memory.kill()
                result.kills += 1
                await asyncio.to_thread(running.memory.start, 60)
            await acknowledged(writes)
            enough.set()

        try:
            await asyncio.gather(kill_at_random(), *(write(w) for w in range(writers)))
            await _check_crash(result, writer, memories, notes, context)
            await _check_beads(result, running.data_dir, memories)
        finally:
            await stop_agent(writer)
    result.seconds = time.monotonic() - started
    return result


async def _check_crash(
    result: CrashResult, writer: Client, memories: dict[str, str],
    notes: dict[str, list[str]], context: dict[str, dict[str, int]],
) -> None:  # fmt: skip
    """Read every acknowledged write back through the agents (batches of 100)."""
    memory = writer.memory
    ids = list(memories)
    for start in range(0, len(ids), 100):
        chunk = ids[start : start + 100]
        found = await memory.batch(memory.base_memory_jid, [GetMemory(id=i) for i in chunk])
        for memory_id, got in zip(chunk, found, strict=True):
            if not (isinstance(got, Memory) and got.content == memories[memory_id]):
                result.missing["memories"] += 1
    for conversation, acked in notes.items():
        kept = await memory.get_information(conversation)
        result.missing["notes"] += len(set(acked) - set(kept))
        result.duplicated_notes += len(kept) - len(set(kept))
    for session, values in context.items():
        state = await memory.session(session).get()
        result.missing["working memory"] += sum(
            1 for key, value in values.items() if state.working_memory.context.get(key) != value
        )


async def _check_beads(result: CrashResult, data_dir: Path, memories: dict[str, str]) -> None:
    """Every acknowledged memory reaches the beads file (the outbox survived the kills)."""
    jsonl = data_dir / "beads" / ".beads" / "issues.jsonl"
    wanted = {f"spade-memory:{memory_id}" for memory_id in memories}
    deadline = time.monotonic() + 120
    while True:
        refs = set()
        if jsonl.exists():
            for line in jsonl.read_text().splitlines():
                refs.add(json.loads(line).get("external_ref"))
        if wanted <= refs or time.monotonic() > deadline:
            break
        await asyncio.sleep(1.0)
    result.acked["memories in beads"] = len(memories)
    result.missing["memories in beads"] = len(wanted - refs)


# -- printing ---------------------------------------------------------------------------


def _figures(console: Console, title: str, rows: list[tuple[str, str]]) -> None:
    table = Table("figure", "value", title=title, title_justify="left")
    for name, value in rows:
        table.add_row(name, value)
    console.print(table)


def _embedding_rows(r: LoadResult) -> list[tuple[str, str]]:
    if r.embedding_seconds is None or r.embedding_cpu_us is None:
        return []
    return [
        ("vectors of all written, seconds after the last store", f"{r.embedding_seconds:.1f}"),
        ("CPU per memory, memory agent embedding them then", f"{r.embedding_cpu_us:,.0f} µs"),
    ]


def _baseline_rows(r: LoadResult) -> list[tuple[str, str]]:
    if r.bare_per_s is None:
        return []
    return [
        ("bare round trips per second (same clients, echo agent)", f"{r.bare_per_s:,.0f}"),
        ("stores vs bare round trips", f"{r.stores_per_s / r.bare_per_s:.2f}x"),
    ]


def print_load(console: Console, r: LoadResult) -> None:
    _figures(console, "Load: client agents storing into one base memory agent", [
        ("clients x stores each", f"{r.clients} x {r.stores_each:,}"),
        ("memories stored", f"{r.stored:,}"),
        ("errors", str(r.errors)),
        ('"database is locked"', str(r.locked)),
        ("stores per second", f"{r.stores_per_s:,.0f}"),
        *_baseline_rows(r),
        ("seconds storing", f"{r.seconds:.1f}"),
        *_embedding_rows(r),
        *(
            (f"CPU per request, {name}: bare | store", f"{bare:,.0f} | {store:,.0f} µs")
            for name, (bare, store) in r.cpu_us.items()
        ),
    ])  # fmt: skip


def print_restart(console: Console, r: RestartResult) -> None:
    _figures(console, "XMPP server restarted under load", [
        ("clients, seconds, restarts", f"{r.clients}, {r.seconds:.0f}, {r.restarts}"),
        ("stores sent", f"{r.sent:,}"),
        ("answered", f"{r.answered:,}"),
        ("failed typed after retries", str(r.failed_typed)),
        ("untyped errors", str(r.untyped)),
        ("memories stored twice", str(r.stored_twice)),
        ("acknowledged but missing", str(r.acked_missing)),
        ("replies marked deduplicated", str(r.deduplicated)),
        ("all agents connected again after", ", ".join(f"{s:.1f} s" for s in r.reconnect_s)),
    ])  # fmt: skip


def print_crash(console: Console, r: CrashResult) -> None:
    rows = [
        ("SIGKILLs of the memory agents", str(r.kills)),
        ("writes acknowledged at each kill", ", ".join(f"{n:,}" for n in r.acked_at_kill)),
        ("seconds", f"{r.seconds:.0f}"),
        ("calls failed typed (unacknowledged)", str(r.failed_typed)),
        ("notes stored twice", str(r.duplicated_notes)),
    ]
    for kind, count in r.acked.items():
        rows.append((f"acknowledged {kind}: count, missing", f"{count:,}, {r.missing[kind]}"))
    _figures(console, "Crash: SIGKILL while writing", rows)


async def main(args: argparse.Namespace) -> bool:
    console, ok = Console(), True
    if args.run in ("load", "all"):
        load = await run_load(args.clients, args.stores, dense=not args.no_dense_search)
        print_load(console, load)
        ok &= load.ok
    if args.run in ("restart", "all"):
        restart = await run_restart(4, args.seconds, 2)
        print_restart(console, restart)
        ok &= restart.ok
    if args.run in ("crash", "all"):
        crash = await run_crash(args.kills, args.writes)
        print_crash(console, crash)
        ok &= crash.ok
    console.print("[bold green]all checks passed[/]" if ok else "[bold red]a check failed[/]")
    return ok


if __name__ == "__main__":
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    parser = argparse.ArgumentParser(prog="python -m benchmarks.resilience", description=__doc__)
    parser.add_argument(
        "run", nargs="?", default="all", choices=["load", "restart", "crash", "all"]
    )
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--stores", type=int, default=1000)
    parser.add_argument(
        "--no-dense-search", action="store_true", help="load: the memory agent with BM25 alone"
    )
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--writes", type=int, default=10_000)
    sys.exit(0 if asyncio.run(main(parser.parse_args())) else 1)
