"""Child processes of the wire benchmark: a bare XMPP server, and an echo agent.

python -m benchmarks.peers server DATA_DIR PORT S2S_PORT
python -m benchmarks.peers echo JID PORT
"""

from __future__ import annotations

import asyncio
import signal
import sys
import uuid
from datetime import datetime, timezone
from pathlib import Path

from spade.agent import Agent
from spade.behaviour import CyclicBehaviour
from spade.message import Message

from spade_memory import wire
from spade_memory.base_memory.ops import Memory, MemoryList
from spade_memory.lifecycle import start_agent, stop_agent
from spade_memory.server.runtime import use_uvloop
from spade_memory.server.xmpp_server import EmbeddedXMPPServer

from .corpus import Corpus

READY = "peer ready"


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


class Echo(CyclicBehaviour):  # type: ignore[misc]
    """Replies to each request with no memory work: ``{}``, or ten memories when asked."""

    TEN_MEMORIES = ten_memories()

    async def run(self) -> None:
        request = await self.receive(timeout=1.0)
        if request is not None:
            large = request.get_metadata("reply") == "ten-memories"
            reply = Message(
                to=str(request.sender),
                body=self.TEN_MEMORIES if large else "{}",
                thread=request.thread,
                metadata={"performative": "inform", "ontology": wire.ONTOLOGY,
                          "language": wire.LANGUAGE},
            )  # fmt: skip
            await self.send(reply)


class EchoAgent(Agent):  # type: ignore[misc]
    async def setup(self) -> None:
        self.presence.set_available()
        self.add_behaviour(Echo(), wire.request_template())


async def _until_signalled() -> None:
    stop = asyncio.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(signum, stop.set)
    print(READY, flush=True)
    await stop.wait()


async def server(data_dir: str, port: str, s2s_port: str) -> None:
    xmpp = EmbeddedXMPPServer(Path(data_dir), port=int(port), s2s_port=int(s2s_port))
    await xmpp.start()
    await _until_signalled()
    await xmpp.stop()


async def echo(jid: str, port: str) -> None:
    agent = EchoAgent(jid, "echo-secret", port=int(port))
    await start_agent(agent)
    await _until_signalled()
    await stop_agent(agent)


if __name__ == "__main__":
    role, *args = sys.argv[1:]
    use_uvloop()  # as `spade-memory run` does: every process of the benchmark on one loop kind
    asyncio.run({"server": server, "echo": echo}[role](*args))
