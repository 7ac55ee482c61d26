"""No reply passes what the XMPP server takes from a client: Prosody closes the stream
of a client that sends a stanza over 256 KiB (``c2s_stanza_size_limit``), so a memory
agent whose answer passed it was cut off for everyone. Past ``--max-reply-bytes``
(240 KiB) the answer is refused instead, and the agent keeps serving. On SPADE's
embedded server and on Prosody.

A session's state stops growing at what one answer carries (128 KiB), but its reply
escapes each quote of the JSON as ``&quot;``: a state of quotes passes 240 KiB first."""

from __future__ import annotations

import pytest

from spade_memory import ResourceConstraint
from spade_memory.protocol.working_memory import Finding
from spade_memory.testing import MemoryServiceProcess
from spade_memory.xmpp.lifecycle import stop_agent
from tests.support.harness import start_client, unique_jid


async def test_a_session_grown_past_one_reply_is_refused_and_the_agent_keeps_serving(
    any_memory_service: MemoryServiceProcess,
) -> None:
    agent = await start_client(unique_jid("grower"), any_memory_service.port)
    try:
        memory = agent.memory
        await memory.add_information("kept", "a note from before")
        session = memory.session("grown")
        added = 0
        with pytest.raises(ResourceConstraint, match="--max-reply-bytes") as refused:
            for added in range(1, 17):  # a session's every change answers its whole state
                finding = Finding(type="note", title=f"{added}", description='"' * 4_000)
                await session.add_finding(finding)
        assert 5 < added < 16 and "the change it answers was made" in str(refused.value)
        with pytest.raises(ResourceConstraint, match="ask for fewer"):
            await session.get()
        # the agent's stream is still up: it answers at once, with what it had
        assert await memory.get_information("kept") == ["a note from before"]
    finally:
        await stop_agent(agent)
