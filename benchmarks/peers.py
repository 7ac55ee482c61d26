"""Child processes of the benchmarks: a bare XMPP server, an echo agent, and flooders.

python -m benchmarks.peers server DATA_DIR PORT S2S_PORT
python -m benchmarks.peers echo JID PORT
python -m benchmarks.peers flood JID PORT COUNT honest|forged
python -m benchmarks.peers flood-accounts STEM PORT ACCOUNTS SECONDS
python -m benchmarks.peers flood-costs JID PORT consolidation|large-reads SECONDS
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time
import uuid
from collections.abc import Callable, Coroutine
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, ClassVar

from spade.agent import Agent
from spade.behaviour import CyclicBehaviour
from spade.message import Message

from spade_memory import MemoryMixin, StoreMemory
from spade_memory.protocol.batch import BatchItem, BatchResults
from spade_memory.protocol.consolidation import ConsolidateMemories
from spade_memory.protocol.memories import Memory, MemoryList, RecentMemories, Stored
from spade_memory.server.embedded import EmbeddedXMPPServer
from spade_memory.server.runtime import use_uvloop
from spade_memory.xmpp import wire, xml_escape
from spade_memory.xmpp.lifecycle import start_agent, stop_agent

from .corpus import Corpus

READY = "peer ready"
FLOOD_DONE = "flood done "


def ten_memories() -> str:
    """A reply shaped and sized like ``search_memories`` with ten results."""
    now = datetime.now(timezone.utc)
    memories = [
        Memory(
            id=str(uuid.uuid4()),
            owner="bench-0a1b2c@localhost",
            category="fact",
            content=text,
            confidence=1.0,
            created_at=now,
            last_accessed=now,
            access_count=1,
        )
        for text in Corpus(seed=9).memories(10)
    ]
    return MemoryList(memories=memories).model_dump_json()


def hundred_stored() -> str:
    """A reply shaped and sized like a batch of a hundred ``store_memory`` ops."""
    stored = Stored(id=str(uuid.uuid4()), category="fact").model_dump(mode="json")
    return BatchResults(results=[BatchItem(ok=True, result=stored)] * 100).model_dump_json()


class Echo(CyclicBehaviour):  # type: ignore[misc]
    """Replies to each request with no memory work: ``{}``, or when asked ten memories
    or a hundred stores' results."""

    REPLIES: ClassVar[dict[str, str]] = {
        "ten-memories": ten_memories(),
        "hundred-stored": hundred_stored(),
    }

    async def run(self) -> None:
        request = await self.receive(timeout=1.0)
        if request is not None:
            reply = Message(
                to=str(request.sender),
                body=self.REPLIES.get(request.get_metadata("reply"), "{}"),
                thread=request.thread,
                metadata={"performative": "inform", "ontology": wire.ONTOLOGY,
                          "language": wire.LANGUAGE},
            )  # fmt: skip
            await self.send(reply)


class EchoAgent(Agent):  # type: ignore[misc]
    """Serialises its replies as a memory agent does (``xml_escape``): slixmpp's own
    escape would make the control pay ~5 ms per 13 kB reply that no memory agent pays."""

    async def setup(self) -> None:
        xml_escape.install()
        self.presence.set_available()
        self.add_behaviour(Echo(), wire.request_template())


async def _until_signalled(announce: bool = True) -> None:
    stop = asyncio.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(signum, stop.set)
    if announce:
        print(READY, flush=True)
    await stop.wait()


async def _ready_until_go() -> None:
    """Say ``READY``, then wait for SIGUSR1: a flooder starts when the benchmark says."""
    go = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, go.set)
    print(READY, flush=True)
    await go.wait()


async def server(data_dir: str, port: str, s2s_port: str) -> None:
    """The embedded server; new accounts are not rate-limited here (the benchmarks make
    dozens at once, as an attacker with time to spare would)."""
    xmpp = EmbeddedXMPPServer(
        Path(data_dir), port=int(port), s2s_port=int(s2s_port), registrations_per_minute=0
    )
    await xmpp.start()
    await _until_signalled()
    await xmpp.stop()


async def echo(jid: str, port: str) -> None:
    agent = EchoAgent(jid, "echo-secret", port=int(port))
    await start_agent(agent)
    await _until_signalled()
    await stop_agent(agent)


class Flooder(MemoryMixin, Agent):  # type: ignore[misc]
    pass


async def flood(jid: str, port: str, count: str, how: str) -> None:
    """On SIGUSR1, send ``count`` stores to the base memory agent without waiting for
    any reply (``forged``: each claiming another sender in ``from``), then print
    ``FLOOD_DONE`` and the replies by condition as JSON once all came or 120 s passed."""
    agent = Flooder(jid, "flood-secret", port=int(port), memory_timeout=120, memory_attempts=1)
    await start_agent(agent)
    await _ready_until_go()
    memory = agent.memory
    requests = []
    for n in range(int(count)):
        op = StoreMemory(category="fact", content=f"flood {uuid.uuid4().hex} number {n}")
        request = wire.request_message(memory.base_memory_jid, op, uuid.uuid4().hex)
        if how == "forged":
            request.sender = f"forged-{uuid.uuid4().hex[:8]}@{agent.jid.domain}"
        requests.append(request)
    started = time.perf_counter()
    replies = await asyncio.gather(*(memory.transport.round_trip(request) for request in requests))
    outcome: dict[str, float] = {"seconds": time.perf_counter() - started}
    for reply in replies:
        kind = "none" if reply is None else _condition(reply)
        outcome[kind] = outcome.get(kind, 0) + 1
    print(FLOOD_DONE + json.dumps(outcome), flush=True)
    await _until_signalled(announce=False)
    await stop_agent(agent)


async def flood_accounts(stem: str, port: str, accounts: str, seconds: str) -> None:
    """``accounts`` agents ``STEM-N@localhost``. On SIGUSR1, each keeps ``IN_FLIGHT``
    stores in flight for ``seconds``, the next sent as each is answered (after its
    ``retry_after`` when refused); then ``FLOOD_DONE`` and the replies by condition."""
    agents = [
        Flooder(f"{stem}-{n}@localhost", "flood-secret", port=int(port),
                memory_timeout=120, memory_attempts=1)
        for n in range(int(accounts))
    ]  # fmt: skip
    for agent in agents:
        await start_agent(agent)
    await _ready_until_go()
    started = time.perf_counter()
    deadline = started + float(seconds)
    outcome: dict[str, float] = {}

    async def keep_one_in_flight(memory: Any) -> None:
        while time.perf_counter() < deadline:
            op = StoreMemory(category="fact", content=f"flood {uuid.uuid4().hex}")
            reply = await memory.transport.round_trip(
                wire.request_message(memory.base_memory_jid, op, uuid.uuid4().hex)
            )
            kind = "none" if reply is None else _condition(reply)
            outcome[kind] = outcome.get(kind, 0) + 1
            if reply is not None and kind != "stored":
                await asyncio.sleep(_retry_after(reply))

    await asyncio.gather(
        *(keep_one_in_flight(agent.memory) for agent in agents for _ in range(IN_FLIGHT))
    )
    outcome["seconds"] = time.perf_counter() - started
    print(FLOOD_DONE + json.dumps(outcome), flush=True)
    await _until_signalled(announce=False)
    for agent in agents:
        await stop_agent(agent)


IN_FLIGHT = 32
"""Stores each account of ``flood_accounts`` keeps in flight (a client's own limit)."""


async def flood_costs(jid: str, port: str, kind: str, seconds: str) -> None:
    """One account's costly requests. First its own memories: ``consolidation``, 1,000
    ordinary ones; ``large-reads``, 200 of 16,000 characters. On SIGUSR1, ``COST_LOOPS``
    batches in flight for ``seconds``, each of ``COST_BATCH`` dry runs of
    ``consolidate_memories``, or of ``recent_memories`` asking for all 200 (a refused
    batch sent again after its ``retry_after``); then ``FLOOD_DONE`` and the batches'
    items by condition."""
    agent = Flooder(jid, "flood-secret", port=int(port), memory_timeout=120, memory_attempts=1)
    await start_agent(agent)
    memory = agent.memory
    corpus = Corpus(seed=5)
    if kind == "consolidation":
        texts = corpus.memories(1000)
        op: Any = ConsolidateMemories()
    else:
        texts = [(corpus.sentence(2_000) + " ")[:16_000] for _ in range(200)]
        op = RecentMemories(limit=200)
    for start in range(0, len(texts), 10):  # 10 of 16,000 characters fit a request body
        stores = [StoreMemory(category="fact", content=text) for text in texts[start : start + 10]]
        await memory.batch(memory.base_memory_jid, stores)
    await _ready_until_go()
    started = time.perf_counter()
    deadline = started + float(seconds)
    outcome: dict[str, float] = {}

    async def keep_one_in_flight() -> None:
        item = op.model_dump(mode="json", exclude_none=True)
        while time.perf_counter() < deadline:
            request = wire.request_message(memory.base_memory_jid, op, uuid.uuid4().hex)
            request.body = json.dumps({"op": "batch", "ops": [item] * COST_BATCH})
            reply = await memory.transport.round_trip(request)
            if reply is None or reply.get_metadata("performative") != "inform":
                condition = "none" if reply is None else _condition(reply)
                outcome[condition] = outcome.get(condition, 0) + 1
                await asyncio.sleep(0.25 if reply is None else _retry_after(reply))
                continue
            for answered in json.loads(reply.body)["results"]:
                condition = "ok" if answered["ok"] else answered["condition"]
                outcome[condition] = outcome.get(condition, 0) + 1

    await asyncio.gather(*(keep_one_in_flight() for _ in range(COST_LOOPS)))
    outcome["seconds"] = time.perf_counter() - started
    print(FLOOD_DONE + json.dumps(outcome), flush=True)
    await _until_signalled(announce=False)
    await stop_agent(agent)


COST_LOOPS = 16
"""Batches ``flood_costs`` keeps in flight (half a sender's ``--max-in-flight``)."""
COST_BATCH = 20
"""Costly ops in each of its batches."""


def _retry_after(reply: Message) -> float:
    """The seconds a refusal asks to wait before sending again (a quarter without one)."""
    return float(json.loads(reply.body).get("retry_after") or 0.25)


def _condition(reply: Message) -> str:
    if reply.get_metadata("performative") == "inform":
        return "stored"
    return str(json.loads(reply.body).get("condition"))


if __name__ == "__main__":
    role, *args = sys.argv[1:]
    use_uvloop()  # as `spade-memory run` does: every process of the benchmark on one loop kind
    roles: dict[str, Callable[..., Coroutine[Any, Any, None]]] = {
        "server": server, "echo": echo, "flood": flood, "flood-accounts": flood_accounts,
        "flood-costs": flood_costs,
    }  # fmt: skip
    asyncio.run(roles[role](*args))
