"""Memory held by ``spade-memory run``: idle, and once it holds memories.

``python -m benchmarks.footprint`` starts ``spade-memory run`` on its embedded
defaults (XMPP server, SQLite, a beads file) with a new data directory and
reads its resident set size (RSS) once it is ready and idle. A client then
stores ``--memories`` memories in batches of a hundred, waits until every
one has its vector (``memory_stats``' ``waiting_vectors``), searches once
(so the owner's vectors are loaded) and reads the RSS again. Beside it, the
RSS of a bare SPADE agent in a process of its own, for scale. What grows with
the number of memories is measured at a million by ``benchmarks.million``; here
the fixed cost of meaning search once used dominates what is added.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
import uuid
from pathlib import Path

from rich.console import Console
from rich.table import Table
from spade.agent import Agent

from spade_memory import MemoryMixin, StoreMemory
from spade_memory.testing import MemoryServiceProcess
from spade_memory.xmpp.lifecycle import start_agent, stop_agent

from .corpus import Corpus
from .wire import ECHO_JID, peer_process


class Client(MemoryMixin, Agent):  # type: ignore[misc]
    pass


def rss_mib(pid: int) -> float:
    """Resident set size of a process, in MiB (Linux)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


async def bench_footprint(memories: int, idle_seconds: float = 5.0) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        service = MemoryServiceProcess(Path(tmp) / "data")
        service.start()
        echo = peer_process("echo", ECHO_JID, str(service.port))
        echo.start()
        try:
            await asyncio.sleep(idle_seconds)
            assert service.process is not None and echo.process is not None
            figures = {
                "idle": rss_mib(service.process.pid),
                "bare agent": rss_mib(echo.process.pid),
            }
            client = Client(  # a batch may wait while the model loads: give it a minute
                f"footprint-{uuid.uuid4().hex[:6]}@localhost",
                "x",
                port=service.port,
                memory_timeout=60.0,
            )
            await start_agent(client)
            try:
                started = time.perf_counter()
                await _store(client, memories)
                figures["store seconds"] = time.perf_counter() - started
                await _embedded(client)
                figures["embedded seconds"] = time.perf_counter() - started
                await client.memory.search_memories("anything at all", limit=10)
                figures["loaded"] = rss_mib(service.process.pid)
            finally:
                await stop_agent(client)
            return figures
        finally:
            echo.stop()
            service.stop()


async def _store(client: Client, memories: int) -> None:
    texts = iter(Corpus(seed=11).memories(memories))
    batches = iter(range(0, memories, 100))

    async def sender() -> None:
        for start in batches:
            ops = [
                StoreMemory(category="fact", content=next(texts))
                for _ in range(min(100, memories - start))
            ]
            await client.memory.batch(client.memory.base_memory_jid, ops)

    await asyncio.gather(*(sender() for _ in range(4)))


async def _embedded(client: Client) -> None:
    while True:
        stats = await client.memory.get_memory_stats()
        if stats is not None and stats.waiting_vectors == 0:
            return
        await asyncio.sleep(2.0)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.footprint", description=__doc__)
    parser.add_argument("--memories", type=int, default=100_000)
    args = parser.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    figures = asyncio.run(bench_footprint(args.memories))
    table = Table("spade-memory run (embedded defaults)", "RSS MiB")
    table.add_row("idle, ready, nothing stored", f"{figures['idle']:.0f}")
    table.add_row(
        f"after {args.memories:,} memories, embedded and searched", f"{figures['loaded']:.0f}"
    )
    table.add_row(
        "added (meaning search's model, runtime and index, and the memories)",
        f"{figures['loaded'] - figures['idle']:.0f}",
    )
    table.add_row("a bare SPADE agent in its own process", f"{figures['bare agent']:.0f}")
    Console().print(table)
    Console().print(
        f"stored in {figures['store seconds']:.1f} s; every vector computed"
        f" {figures['embedded seconds']:.1f} s after the first store"
    )


if __name__ == "__main__":
    main()
