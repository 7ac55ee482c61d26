"""A memory agent whose connection goes silent without dropping finds out by pinging
itself, says so, and reconnects within 30 s (issue 47: one stanza muted the base memory
agent until restart, with TCP up and nothing in the log). The stall is real: a proxy
between the memory agents and their XMPP server stops carrying what it reads, both ways,
on the embedded server and on Prosody."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from spade_memory.server.runtime import PASSWORD_ENV
from spade_memory.testing import MemoryServiceProcess
from spade_memory.xmpp.lifecycle import stop_agent
from spade_memory.xmpp.liveness import INTERVAL, TIMEOUT
from tests.support.harness import start_client, unique_jid
from tests.support.servers import AGENTS_PASSWORD, Server
from tests.support.stall_proxy import StallProxy

pytestmark = pytest.mark.slow


@pytest.fixture
async def proxy(xmpp_server: Server) -> AsyncIterator[StallProxy]:
    carried = StallProxy(xmpp_server.port)
    await carried.start()
    yield carried
    await carried.stop()


def _seen(service: MemoryServiceProcess, text: str) -> float | None:
    """When ``text`` first appeared in the service's output (``time.monotonic()``)."""
    for line, at in zip(list(service.output), list(service.output_at), strict=False):
        if text in line:
            return at
    return None


async def test_a_stalled_connection_is_found_and_left_within_30_s(
    xmpp_server: Server, proxy: StallProxy, tmp_path: Path
) -> None:
    service = MemoryServiceProcess(
        tmp_path / "memory", "--external-server", "--services", "base-memory",
        port=proxy.port, env={PASSWORD_ENV: AGENTS_PASSWORD},
    )  # fmt: skip
    await asyncio.to_thread(service.start, 90)  # the proxy runs on this event loop
    client = await start_client(unique_jid("patient"), xmpp_server.port, memory_timeout=5.0)
    try:
        before = await client.memory.store_memory("fact", "stored before the stall")
        opened = proxy.connections  # the agent's login (after its probe of the server)
        proxy.stall()
        stalled_at = time.monotonic()
        deadline = stalled_at + INTERVAL + TIMEOUT + 30  # the bound, and room for a busy machine
        while _seen(service, "reconnected after") is None and time.monotonic() < deadline:
            await asyncio.sleep(0.5)
        noticed = _seen(service, "did not hear its own ping back")
        reconnected = _seen(service, "reconnected after")
        assert noticed is not None and reconnected is not None, "".join(service.output[-20:])
        assert reconnected - stalled_at <= 30
        assert proxy.connections == opened + 1  # one new connection: the agent's
        after = await client.memory.store_memory("fact", "stored after the stall")
        found = await client.memory.get_recent_memories(limit=10)
        assert {str(before), str(after)} <= {memory.id for memory in found}
    finally:
        await stop_agent(client)
        await asyncio.to_thread(service.stop)
