"""Round trips over XMPP: a bare SPADE request/reply vs the memory agent's ops.

Four processes share one embedded XMPP server: the server itself, an echo
agent, the base memory agent (``spade-memory run --external-server``) and
the requester (this process). The echo agent and the memory agent are set
up alike (own process, same server), so the ratio is the memory agent's own
cost. The three kinds of request are timed in alternating blocks, so that
machine noise falls on all of them.
"""

from __future__ import annotations

import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from spade.agent import Agent

from spade_memory import MemoryMixin, wire
from spade_memory.base_memory.ops import MemoryStatsOp
from spade_memory.lifecycle import start_agent, stop_agent
from spade_memory.testing import ChildProcess, MemoryServiceProcess, free_port

from .corpus import Corpus
from .peers import READY
from .stats import summary_ms

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


async def bench_wire(round_trips: int = 2000, blocks: int = 10) -> list[WireResult]:
    with tempfile.TemporaryDirectory() as tmp:
        port, s2s = free_port(), free_port()
        server = peer_process("server", str(Path(tmp) / "xmpp"), str(port), str(s2s))
        echo = peer_process("echo", ECHO_JID, str(port))
        memory = MemoryServiceProcess(
            Path(tmp) / "memory",
            "--external-server",
            "--services",
            "base-memory,interaction-memory",
            env={"SPADE_MEMORY_PASSWORD": "bench"},
        )
        memory.command[memory.command.index("--port") + 1] = str(port)
        started: list[ChildProcess] = []
        try:
            for child in (server, echo, memory):
                child.start()
                started.append(child)
            return await _measure(port, round_trips, blocks)
        finally:
            for child in reversed(started):
                child.stop()


async def _measure(port: int, round_trips: int, blocks: int) -> list[WireResult]:
    agent = Requester(f"bench-{uuid.uuid4().hex[:6]}@localhost", "bench", port=port)
    await start_agent(agent)
    memory = agent.memory
    corpus = Corpus(seed=5)
    texts = iter(corpus.memories(round_trips + 2000))
    queries = iter(corpus.queries(round_trips + 200, 2))

    async def bare(reply: str | None = None) -> None:
        request = wire.request_message(ECHO_JID, MemoryStatsOp(), uuid.uuid4().hex)
        if reply is not None:
            request.set_metadata("reply", reply)
        assert await memory.round_trip(request) is not None, "echo agent did not answer"

    async def bare_large() -> None:
        await bare("ten-memories")

    async def store() -> None:
        await memory.store_memory("fact", next(texts))

    async def search() -> None:
        await memory.search_memories(next(queries), limit=10)

    kinds: dict[str, Callable[[], Awaitable[None]]] = {
        "bare SPADE request/reply": bare,
        "store_memory": store,
        "search_memories (10 results)": search,
        "control: bare, reply of 10 memories": bare_large,
    }
    for _ in range(1000):  # a store to search in, and warm-up
        await store()
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
    await stop_agent(agent)
    return [WireResult(name, *summary_ms(s), len(s)) for name, s in samples.items()]
