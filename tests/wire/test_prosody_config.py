"""The shipped Prosody configuration: in-band registration is closed (accounts come
from prosodyctl) and a client's traffic is rate-limited, the memory agents' is not."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from spade_memory.testing import MemoryServiceProcess
from spade_memory.xmpp.lifecycle import WrongPassword, start_agent, stop_agent
from tests.support import prosody
from tests.support.harness import ClientAgent, send_raw, start_client, unique_jid


async def test_an_account_nobody_created_cannot_log_in(
    prosody_server: prosody.ProsodyProcess,
) -> None:
    jid = unique_jid("stranger")
    stranger = ClientAgent(jid, "stranger-secret", port=prosody_server.port)
    with pytest.raises(WrongPassword):  # SPADE tries in-band registration first
        await start_agent(stranger)
    await stop_agent(stranger)
    prosody_server.register(jid, "stranger-secret")
    admitted = ClientAgent(jid, "stranger-secret", port=prosody_server.port)
    await start_agent(admitted)
    await stop_agent(admitted)


async def test_a_client_sending_faster_than_its_rate_is_slowed_down(tmp_path: Path) -> None:
    """32 kB/s by default: 128 kB of requests cannot all be read in under three seconds
    (without the limit they take a few hundredths of a second here). On a Prosody of its
    own: the run's shared one reads faster (``prosody.SUITE_RATE``)."""
    if not prosody.installed():
        pytest.skip(prosody.MISSING)
    with prosody.serving(tmp_path) as (_, service):
        await _send_fast(service)


async def _send_fast(service: MemoryServiceProcess) -> None:
    client = await start_client(unique_jid("hasty"), service.port)
    try:
        body = json.dumps({"op": "recent_memories", "limit": 1, "pad": "x" * 16_000})
        started = time.monotonic()
        for _ in range(8):
            reply = await send_raw(client.memory, client.memory.base_memory_jid, body)
            assert json.loads(reply.body)["condition"] == "bad-request"  # unknown field
        assert time.monotonic() - started >= 3.0
    finally:
        await stop_agent(client)
