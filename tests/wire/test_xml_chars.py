"""Text XML cannot carry (issue 47, item 5): refused at the door with the field and the
position, and, where an older version stored it, served without dropping a stream and
skipped by the beads mirror, on the embedded server and on Prosody."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from spade_memory import BadRequest, StoreMemory
from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.protocol.memories import Stored
from spade_memory.protocol.xml_chars import carriable, uncarriable_in
from spade_memory.server.runtime import PASSWORD_ENV
from spade_memory.storage.manifest import Manifest
from spade_memory.testing import MemoryServiceProcess
from spade_memory.xmpp.lifecycle import stop_agent
from spade_memory.xmpp.reconnect import reconnector_of
from tests.support.harness import start_client, unique_jid
from tests.support.servers import AGENTS_PASSWORD, Server

NONCHARACTER = "zebra \uffff quokka"


@pytest.mark.parametrize(
    ("body", "where"),
    [
        (
            {"op": "store_memory", "content": "ok", "context": "a\ufffeb"},
            "context: U+FFFE at position 1",
        ),
        (
            {"op": "store_memory", "content": "ok", "tags": ["fine", "be\x07ll"]},
            "tags.1: U+0007 at position 2",
        ),
        (
            {"op": "store_memory", "content": "ok", "metadata": {"k": {"n": "\x00"}}},
            "metadata.k.n: U+0000",
        ),
        ({"op": "store_memory", "content": "ok", "metadata": {"\uffff": 1}}, "(the key): U+FFFF"),
    ],
)
def test_the_door_names_the_field_and_the_position(body: dict[str, object], where: str) -> None:
    why = uncarriable_in(json.dumps(body))
    assert why is not None and where in why


def test_what_xml_carries_passes_the_door_untouched() -> None:
    body = json.dumps({"op": "store_memory", "content": 'tab\there, é漢字🙂 \\u and "quotes"'})
    assert uncarriable_in(body) is None
    assert carriable("plain é") == "plain é"


async def test_a_request_with_such_text_is_refused_and_nothing_is_stored(
    memory_service: MemoryServiceProcess,
) -> None:
    client = await start_client(unique_jid("door"), memory_service.port)
    try:
        with pytest.raises(BadRequest, match=r"content: U\+FFFF at position 6"):
            await client.memory.store_memory("fact", NONCHARACTER)
        with pytest.raises(BadRequest, match=r"information: U\+0001"):
            await client.memory.add_information("c", "ring\x01")
        outcomes = await client.memory.batch(
            client.memory.base_memory_jid,
            [
                StoreMemory(category="fact", content="fine"),
                StoreMemory(category="fact", content="\ufffe"),
            ],
        )
        assert isinstance(outcomes[0], Stored) and isinstance(outcomes[1], BadRequest)
        assert "content: U+FFFE at position 0" in str(outcomes[1])
        assert [m.content for m in await client.memory.get_recent_memories()] == ["fine"]
        assert await client.memory.get_information("c") == []
    finally:
        await stop_agent(client)


async def _an_older_version_stored(data_dir: Path, owner: str) -> str:
    """A memory holding U+FFFF written straight into the store, as an older version did."""
    data_dir.mkdir(parents=True, exist_ok=True)
    store = await LongTermStore.open(data_dir / "base-memory.db", manifest=Manifest(data_dir))
    try:
        stored = await store.apply(owner, StoreMemory(category="fact", content=NONCHARACTER))
    finally:
        await store.close()
    return stored.id


async def test_stored_text_xml_cannot_carry_is_served_and_the_mirror_skips_it(
    xmpp_server: Server, tmp_path: Path
) -> None:
    owner = unique_jid("older")
    data_dir = tmp_path / "memory"
    old_id = await _an_older_version_stored(data_dir, owner)
    service = MemoryServiceProcess(
        data_dir, "--external-server", "--services", "base-memory,beads-sync",
        "--beads-debounce", "0.2", port=xmpp_server.port, env={PASSWORD_ENV: AGENTS_PASSWORD},
    )  # fmt: skip
    await asyncio.to_thread(service.start, 90)
    client = await start_client(owner, xmpp_server.port)
    try:
        for _ in range(3):  # a reply, then a search, then a list: each carries the text
            assert (await client.memory.get_memory(old_id)).content == NONCHARACTER
            assert [m.content for m in await client.memory.search_memories("zebra quokka")] == [
                NONCHARACTER
            ]
        later = await client.memory.store_memory("fact", "stored after the old one")
        issues = data_dir / "beads" / ".beads" / "issues.jsonl"
        deadline = time.monotonic() + 60
        while str(later) not in (issues.read_text() if issues.exists() else ""):
            assert time.monotonic() < deadline, "".join(service.output[-20:])
            await asyncio.sleep(0.2)
        assert old_id not in issues.read_text()
        said = "".join(service.output)
        assert said.count(f"memory {old_id} is not mirrored into beads: content: U+FFFF") == 1
        assert "lost its XMPP connection" not in said
        reconnector = reconnector_of(client)
        assert reconnector is not None and reconnector.reconnections == 0
    finally:
        await stop_agent(client)
        await asyncio.to_thread(service.stop)
