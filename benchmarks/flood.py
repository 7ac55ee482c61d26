"""A bystander's searches while others flood the base memory agent.

    python -m benchmarks.flood [--requests 3000] [--accounts 60] [--flood-seconds 20]
                               [--searches 200] [--servers embedded,prosody]
                               [--floods honest,forged,accounts,consolidation,large-reads]
                               [--no-dense-search]

Every part is its own OS process: the XMPP server (SPADE's embedded one, or
Prosody with the repository's configuration), the base memory agent
(``spade-memory run --external-server``), and three floods: one honest client
and one forging a new ``from`` on every stanza, each sending ``--requests``
stores at once without waiting, then ``--accounts`` accounts (one process) each
keeping 32 stores in flight for ``--flood-seconds``, a refused one sent again
after its ``retry_after``. Then two floods of cost rather than count, one account each
keeping 16 batches of 20 costly ops in flight for ``--flood-seconds``: dry runs of
``consolidate_memories`` over its 1,000 memories, and ``recent_memories`` reads of all
its 200 memories of 16,000 characters. The bystander (this process) searches its own
1,000 memories one search after another, never sending one again: first on a quiet
service, then during each flood. Printed: the bystander's p50 and p99, the flooded p99
as a ratio of the quiet p50 and of the quiet p99 measured in the same run, how many of
its searches were refused, the share of a core each process used during each flood (the
machine has two), and the memory agent's resident memory: at its highest during the
flood, and two seconds after it, against where it was on the quiet service.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.table import Table

from spade_memory import StoreMemory
from spade_memory.protocol.memories import SearchMemories
from spade_memory.protocol.services import default_jids
from spade_memory.server.runtime import PASSWORD_ENV, use_uvloop
from spade_memory.testing import (
    ChildProcess,
    MemoryServiceProcess,
    ProsodyProcess,
    free_ports,
)
from spade_memory.xmpp import wire
from spade_memory.xmpp.lifecycle import start_agent, stop_agent

from .corpus import Corpus
from .peers import FLOOD_DONE
from .stats import CpuMeter, rss_mib, summary_ms
from .wire import Requester, peer_process

PROSODY_DIR = Path(__file__).parent.parent / "prosody"
PASSWORD = "flood-bench"
FLOODS = ("honest", "forged", "accounts", "consolidation", "large-reads")
COSTLY = ("consolidation", "large-reads")
"""The floods of one account's costly requests (``peers.flood_costs``)."""


@dataclass
class Searches:
    """The bystander's search latencies in one phase (seconds each)."""

    phase: str
    samples: list[float] = field(default_factory=list)
    refused: int = 0
    """The bystander's searches answered with a failure (not sent again)."""
    flood: dict[str, float] = field(default_factory=dict)
    """The flooder's replies by condition, and its seconds."""
    busy: dict[str, float] = field(default_factory=dict)
    """The share of one core each process used during the phase."""
    rss: tuple[float, float] | None = None
    """The memory agent's resident MiB: at its highest in the phase, and after it."""


@dataclass
class Setup:
    port: int
    register: ProsodyProcess | None
    """Where accounts must be created first (Prosody: registration is closed)."""
    server: ChildProcess

    def account(self, jid: str, password: str) -> None:
        if self.register is not None:
            self.register.register(jid, password)


@contextmanager
def xmpp_server(kind: str, root: Path) -> Iterator[Setup]:
    """SPADE's embedded server as a process, or Prosody as shipped."""
    if kind == "embedded":
        port, s2s = free_ports(2)
        server: ChildProcess = peer_process("server", str(root / "xmpp"), str(port), str(s2s))
        server.start()
        try:
            yield Setup(port, None, server)
        finally:
            server.stop()
        return
    prosody = ProsodyProcess(PROSODY_DIR, root / "prosody")
    prosody.start()
    try:
        yield Setup(prosody.port, prosody, prosody)
    finally:
        prosody.stop()


@dataclass
class Floods:
    """How hard each flood pushes."""

    requests: int = 3000
    accounts: int = 60
    seconds: float = 20.0


async def run_server(
    kind: str, floods: Floods, searches: int, which: list[str], *memory_args: str
) -> list[Searches]:
    with tempfile.TemporaryDirectory() as tmp, xmpp_server(kind, Path(tmp)) as setup:
        for jid in default_jids("localhost").values():
            setup.account(jid, PASSWORD)
        memory = MemoryServiceProcess(
            Path(tmp) / "memory", "--external-server", "--services", "base-memory", *memory_args,
            port=setup.port, env={PASSWORD_ENV: PASSWORD},
        )  # fmt: skip
        flooders = {how: _flooder(setup, how, floods) for how in which}
        started: list[ChildProcess] = []
        try:
            for child in (memory, *flooders.values()):
                child.start(timeout=180)  # a costly flooder stores its memories first
                started.append(child)
            return await _measure(setup, memory, flooders, searches)
        finally:
            for child in reversed(started):
                child.stop()


def _flooder(setup: Setup, how: str, floods: Floods) -> ChildProcess:
    if how == "accounts":
        stem = f"flood-account-{uuid.uuid4().hex[:6]}"
        for n in range(floods.accounts):
            setup.account(f"{stem}-{n}@localhost", "flood-secret")
        args = (stem, str(setup.port), str(floods.accounts), str(floods.seconds))
        return peer_process("flood-accounts", *args)
    jid = f"flood-{how}-{uuid.uuid4().hex[:6]}@localhost"
    setup.account(jid, "flood-secret")
    if how in COSTLY:
        return peer_process("flood-costs", jid, str(setup.port), how, str(floods.seconds))
    return peer_process("flood", jid, str(setup.port), str(floods.requests), how)


async def _measure(
    setup: Setup, memory: ChildProcess, flooders: dict[str, ChildProcess], searches: int
) -> list[Searches]:
    jid = f"bystander-{uuid.uuid4().hex[:6]}@localhost"
    setup.account(jid, "bystander")
    agent = Requester(jid, "bystander", port=setup.port, memory_timeout=120, memory_attempts=1)
    await start_agent(agent)
    corpus = Corpus(seed=11)
    try:
        texts = corpus.memories(1000)
        for start in range(0, len(texts), 100):
            ops = [StoreMemory(category="fact", content=t) for t in texts[start : start + 100]]
            await agent.memory.batch(agent.memory.base_memory_jid, ops)
        queries = iter(corpus.queries(100_000, 2))

        async def search(phase: Searches) -> None:
            """One search, sent once: its time, or a refusal counted."""
            op = SearchMemories(query=next(queries), limit=10)
            request = wire.request_message(agent.memory.base_memory_jid, op, uuid.uuid4().hex)
            began = time.perf_counter()
            reply = await agent.memory.transport.round_trip(request)
            if reply is None or reply.get_metadata("performative") != "inform":
                phase.refused += 1
            else:
                phase.samples.append(time.perf_counter() - began)

        warm_up = Searches("warm-up")
        for _ in range(20):
            await search(warm_up)
        quiet = Searches("quiet")
        for _ in range(searches):
            await search(quiet)
        assert memory.process is not None
        agent_pid = memory.process.pid
        quiet.rss = (rss_mib(agent_pid) or 0.0,) * 2
        phases = [quiet]
        for how, flooder in flooders.items():
            phase = Searches(f"{how} flood")
            mark = len(flooder.output)
            assert flooder.process is not None
            meter = CpuMeter(_pids(setup.server, memory, flooder))
            meter.start()
            began = time.perf_counter()
            highest = 0.0
            flooder.process.send_signal(signal.SIGUSR1)
            while not (done := _flood_done(flooder, mark)):
                await search(phase)
                highest = max(highest, rss_mib(agent_pid) or 0.0)
            phase.busy = meter.busy(time.perf_counter() - began)
            phase.flood = done
            await asyncio.sleep(2.0)
            phase.rss = (highest, rss_mib(agent_pid) or 0.0)
            phases.append(phase)
        return phases
    finally:
        await stop_agent(agent)


def _pids(server: ChildProcess, memory: ChildProcess, flooder: ChildProcess) -> dict[str, int]:
    pids = {"bystander": os.getpid()}
    for name, child in (("server", server), ("memory agent", memory), ("flooder", flooder)):
        if child.process is not None:
            pids[name] = child.process.pid
    return pids


def _flood_done(flooder: ChildProcess, mark: int) -> dict[str, float]:
    for line in flooder.output[mark:]:
        if line.startswith(FLOOD_DONE):
            outcome: dict[str, float] = json.loads(line[len(FLOOD_DONE) :])
            return outcome
    return {}


def print_server(console: Console, kind: str, phases: list[Searches]) -> None:
    quiet_p50, quiet_p99 = summary_ms(phases[0].samples)
    table = Table(
        "phase", "searches", "refused", "p50 ms", "p99 ms", "p99 / quiet p50",
        "p99 / quiet p99", "flood replies", "flood s", "cores busy",
        "agent MiB (highest, after)",
        title=f"A bystander's search during a flood ({kind} server)", title_justify="left",
    )  # fmt: skip
    for phase in phases:
        p50, p99 = summary_ms(phase.samples) if phase.samples else (float("nan"),) * 2
        flood = dict(phase.flood)
        seconds = flood.pop("seconds", None)
        table.add_row(
            phase.phase, str(len(phase.samples)), str(phase.refused), f"{p50:.1f}", f"{p99:.1f}",
            f"{p99 / quiet_p50:.1f}x", f"{p99 / quiet_p99:.1f}x",
            ", ".join(f"{int(n)} {kind}" for kind, n in sorted(flood.items())) or "-",
            "-" if seconds is None else f"{seconds:.1f}",
            ", ".join(f"{name} {share:.2f}" for name, share in phase.busy.items()) or "-",
            "-" if phase.rss is None else f"{phase.rss[0]:.0f}, {phase.rss[1]:.0f}",
        )  # fmt: skip
    console.print(table)


async def main(args: argparse.Namespace) -> None:
    console = Console()
    for kind in args.servers:
        if kind == "prosody" and shutil.which("prosody") is None:
            console.print("Prosody is not installed (apt-get install prosody): skipped")
            continue
        extra = ["--no-dense-search"] if args.no_dense_search else []
        floods = Floods(args.requests, args.accounts, args.flood_seconds)
        phases = await run_server(kind, floods, args.searches, args.floods, *extra)
        print_server(console, kind, phases)


if __name__ == "__main__":
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    parser = argparse.ArgumentParser(prog="python -m benchmarks.flood", description=__doc__)
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--accounts", type=int, default=60)
    parser.add_argument("--flood-seconds", type=float, default=20.0)
    parser.add_argument("--searches", type=int, default=200)
    parser.add_argument("--servers", type=lambda s: s.split(","), default=["embedded", "prosody"])
    parser.add_argument("--floods", type=lambda s: s.split(","), default=list(FLOODS))
    parser.add_argument(
        "--no-dense-search", action="store_true", help="the memory agent with BM25 alone"
    )
    use_uvloop()  # as `spade-memory run` does
    asyncio.run(main(parser.parse_args()))
