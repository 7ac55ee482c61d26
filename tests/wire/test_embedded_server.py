"""What the embedded server (pyjabber) carries arrives whole: texts full of entities,
alone and in a batch, between processes (the service runs in its own)."""

from __future__ import annotations

from spade_memory import StoreMemory
from spade_memory.protocol.memories import Stored
from spade_memory.testing import MemoryServiceProcess
from spade_memory.xmpp.lifecycle import stop_agent
from tests.support.harness import start_client, unique_jid

# every character XML escapes, beside text that needs none; in the JSON body each quote
# becomes an entity too, so a stanza carries thousands that expat hands over in pieces
TRICKY = "\"quoted\" & <tagged> 'single' ]]> é漢字🙂 plain words "


async def test_a_text_of_thousands_of_entities_arrives_whole(
    memory_service: MemoryServiceProcess,
) -> None:
    client = await start_client(unique_jid("entities"), memory_service.port)
    try:
        content = (TRICKY * 300)[:16_000]
        memory_id = await client.memory.store_memory("fact", content, context=TRICKY)
        stored = await client.memory.get_memory(str(memory_id))
        assert (stored.content, stored.context) == (content, TRICKY)

        contents = [f"{n} {TRICKY * 3}" for n in range(100)]
        outcomes = await client.memory.batch(
            client.memory.base_memory_jid,
            [StoreMemory(category="fact", content=text) for text in contents],
        )
        for outcome, text in zip(outcomes, contents, strict=True):
            assert isinstance(outcome, Stored)
            assert (await client.memory.get_memory(outcome.id)).content == text
    finally:
        await stop_agent(client)
