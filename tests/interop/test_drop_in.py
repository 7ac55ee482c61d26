"""spade_llm 0.3's memory classes and spade_memory's drop-ins, held to one suite written
from spade_llm's documented API: each test runs against spade_llm's own classes (files on
disk) and against ours (the memory agents, over the wire). Where the two differ on
purpose, ``DIFFERENCES`` says how, and the test checks each side's own behaviour."""

from __future__ import annotations

import asyncio
import inspect
import subprocess
import sys
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

import spade_memory
from spade_memory.llm import drop_in
from spade_memory.testing import MemoryServiceProcess
from spade_memory.xmpp.lifecycle import stop_agent
from tests.support.harness import start_client, unique_jid

DIFFERENCES = {
    "empty content": "spade_llm stores it; spade_memory refuses it (ValueError)",
    "coroutines": "spade_llm's interaction memory is synchronous; spade_memory's is awaited",
    "several words": "spade_llm matches the query as one substring; spade_memory by words",
    "the same text twice": "spade_llm keeps two rows; spade_memory one (the first id)",
    "service limits": "spade_llm has none; spade_memory's raise LimitExceeded (a ValueError)",
}


async def done(value: Any) -> Any:
    """A result, awaited when the implementation returns a coroutine."""
    return await value if inspect.isawaitable(value) else value


class Memories:
    """One implementation's two classes for one agent."""

    def __init__(self, name: str, jid: str, base: Any, notes: Any) -> None:
        self.name, self.jid, self.base, self.notes = name, jid, base, notes


@pytest.fixture(params=["spade_llm", "spade_memory"])
async def memories(
    request: pytest.FixtureRequest, tmp_path: Path, memory_service: MemoryServiceProcess
) -> AsyncIterator[Memories]:
    jid = unique_jid("porting")
    if request.param == "spade_llm":
        from spade_llm.memory.agent_base_memory import AgentBaseMemory
        from spade_llm.memory.interaction_memory import AgentInteractionMemory

        yield Memories(
            "spade_llm", jid,
            AgentBaseMemory(jid, memory_path=str(tmp_path)),
            AgentInteractionMemory(jid, memory_path=str(tmp_path)),
        )  # fmt: skip
        return
    agent = await start_client(jid, memory_service.port)
    try:
        yield Memories(
            "spade_memory", jid,
            drop_in.AgentBaseMemory(jid, agent=agent),
            drop_in.AgentInteractionMemory(jid, agent=agent),
        )  # fmt: skip
    finally:
        await stop_agent(agent)


async def test_store_then_find_by_search_category_recent_and_relevance(
    memories: Memories,
) -> None:
    base = memories.base
    api = await base.store_memory("fact", "API endpoint requires authentication header")
    tea = await base.store_memory("preference", "prefers green tea", context="chat", confidence=0.8)
    await base.store_memory("capability", "can read PDF files")
    assert isinstance(api, str) and isinstance(tea, str)

    (found,) = await base.search_memories("authentication")
    assert (found.id, found.agent_id, found.category) == (api, memories.jid, "fact")
    assert found.content == "API endpoint requires authentication header"
    (preference,) = await base.get_memories_by_category("preference")
    assert (preference.context, preference.confidence) == ("chat", 0.8)
    assert isinstance(preference.created_at, type(preference.last_accessed))
    assert preference.created_at.tzinfo is None  # naive local time, as spade_llm's

    assert len(await base.get_recent_memories(limit=2)) == 2
    for empty in (
        base.search_memories("tea", limit=0),
        base.get_recent_memories(limit=0),
        base.get_memories_by_category("fact", limit=0),
        base.get_memories_by_category("no-such-category"),
    ):
        assert await empty == []
    relevant = await base.get_relevant_memories("PDF")
    assert [m.content for m in relevant] == ["can read PDF files"]
    assert len(await base.get_relevant_memories(None, limit=10)) == 3  # the recent ones
    await base.cleanup()


async def test_what_store_refuses(memories: Memories) -> None:
    base = memories.base
    with pytest.raises(ValueError, match="Invalid category"):
        await base.store_memory("opinion", "the sky is green")
    with pytest.raises(ValueError, match=r"Confidence must be between 0\.0 and 1\.0"):
        await base.store_memory("fact", "too sure", confidence=1.5)
    if memories.name == "spade_llm":  # DIFFERENCES["empty content"]
        assert isinstance(await base.store_memory("fact", ""), str)
    else:
        with pytest.raises(ValueError, match="empty content"):
            await base.store_memory("fact", "")
    await base.cleanup()


async def test_format_for_context_delete_and_stats(memories: Memories) -> None:
    base = memories.base
    await base.store_memory("preference", "likes short answers")
    fact = await base.store_memory("fact", "deploys happen on Tuesdays")
    entries = await base.get_recent_memories()
    assert await base.format_for_context(entries) == (
        "Facts I remember:\n- deploys happen on Tuesdays\n"
        "Preferences I remember:\n- likes short answers"
    )
    assert await base.format_for_context([]) == ""

    stats = await base.get_memory_stats()
    assert stats["total_memories"] == 2
    assert stats["category_counts"] == {"fact": 1, "preference": 1}
    assert stats["oldest_memory"] <= stats["newest_memory"]

    assert await base.delete_memory(fact) is True
    assert await base.delete_memory(fact) is False
    assert (await base.get_memory_stats())["total_memories"] == 1
    await base.cleanup()


async def test_interaction_notes(memories: Memories) -> None:
    notes = memories.notes
    said = await done(notes.add_information("c1", "user likes tea"))
    assert said == "Remembered information about this interaction: user likes tea"
    await done(notes.add_information("c1", "user is in Madrid"))
    await done(notes.add_information("c2", "something else"))
    assert await done(notes.get_information("c1")) == ["user likes tea", "user is in Madrid"]
    assert await done(notes.get_information("nobody")) == []
    assert await done(notes.get_context_summary("c1")) == (
        "Previous interaction notes:\n- user likes tea\n- user is in Madrid"
    )
    assert await done(notes.get_context_summary("nobody")) is None
    if memories.name != "spade_llm":  # DIFFERENCES["empty content"]: a sentence, no dump
        with pytest.raises(ValueError, match=r"^empty information is not noted"):
            await notes.add_information("c1", "  ")
    every = await done(notes.get_all_interactions())
    assert set(every) == {"c1", "c2"}
    assert [entry["content"] for entry in every["c1"]] == ["user likes tea", "user is in Madrid"]
    assert all(set(entry) == {"content", "timestamp"} for entry in every["c1"])
    assert await done(notes.clear_conversation("c1")) is True
    assert await done(notes.clear_conversation("c1")) is False
    assert await done(notes.get_information("c1")) == []
    is_coroutine = inspect.iscoroutinefunction(notes.add_information)
    assert is_coroutine == (memories.name == "spade_memory")  # DIFFERENCES["coroutines"]


async def test_a_query_of_several_words(memories: Memories) -> None:
    await memories.base.store_memory("fact", "the staging API lives at /api/v2")
    found = await memories.base.search_memories("staging v2")
    # DIFFERENCES["several words"]: no memory holds "staging v2" as one substring
    assert len(found) == (0 if memories.name == "spade_llm" else 1)
    await memories.base.cleanup()


async def test_the_drop_in_logs_in_by_itself_with_a_password(
    memory_service: MemoryServiceProcess,
) -> None:
    jid = unique_jid("own-login")
    base = drop_in.AgentBaseMemory(jid, password="drop-in-secret", port=memory_service.port)
    notes = drop_in.AgentInteractionMemory(jid, password="drop-in-secret", port=memory_service.port)
    try:
        memory_id = await base.store_memory("fact", "logged in by itself")
        await notes.add_information("c1", "noted by itself")
        (found,) = await base.search_memories("itself")
        assert (found.id, found.agent_id) == (memory_id, jid)
        assert await notes.get_information("c1") == ["noted by itself"]
    finally:
        await base.cleanup()
        await notes.cleanup()
    with pytest.raises(ValueError, match="password"):
        await drop_in.AgentBaseMemory(jid).get_recent_memories()
    assert spade_memory.AgentBaseMemory is drop_in.AgentBaseMemory  # the one import to change


async def test_a_query_no_memory_holds_finds_nothing(memories: Memories) -> None:
    await memories.base.store_memory("fact", "z")
    await memories.base.store_memory("fact", "the deploy window is on Tuesday")
    # meaning search alone would answer the closest memory; spade_llm's LIKE finds none
    assert await memories.base.search_memories("nothing-matches-xyz") == []
    (found,) = await memories.base.search_memories("deploy")
    assert found.content == "the deploy window is on Tuesday"
    await memories.base.cleanup()


async def test_a_limit_given_as_text_is_a_number(memories: Memories) -> None:
    for number in range(3):
        await memories.base.store_memory("fact", f"tea note {number}")
    assert len(await memories.base.search_memories("tea", limit="2")) == 2
    assert len(await memories.base.get_recent_memories(limit="2")) == 2
    assert len(await memories.base.get_memories_by_category("fact", limit="1")) == 1
    await memories.base.cleanup()


async def test_the_same_text_twice(memories: Memories) -> None:
    first = await memories.base.store_memory("fact", "the build takes ten minutes")
    second = await memories.base.store_memory("fact", "the build takes ten minutes")
    total = (await memories.base.get_memory_stats())["total_memories"]
    if memories.name == "spade_llm":  # DIFFERENCES["the same text twice"]
        assert (first != second, total) == (True, 2)
    else:
        assert (first == second, total) == (True, 1)
    await memories.base.cleanup()


async def test_a_service_limit_is_a_value_error(memories: Memories) -> None:
    long = "word " * 5_000  # over the service's 16,384 characters
    if memories.name == "spade_llm":  # DIFFERENCES["service limits"]
        assert isinstance(await memories.base.store_memory("fact", long), str)
    else:
        with pytest.raises(ValueError, match="over") as refused:
            await memories.base.store_memory("fact", long)
        assert isinstance(refused.value, spade_memory.ResourceConstraint)
        assert isinstance(refused.value, drop_in.LimitExceeded)
    await memories.base.cleanup()


async def test_note_times_are_naive_local_iso_texts(memories: Memories) -> None:
    before = datetime.now()  # naive local, as spade_llm's
    await done(memories.notes.add_information("c1", "user likes tea"))
    (entry,) = (await done(memories.notes.get_all_interactions()))["c1"]
    stamp = datetime.fromisoformat(entry["timestamp"])
    assert stamp.tzinfo is None
    assert abs((stamp - before).total_seconds()) < 3600  # local, not shifted by an offset


CONCURRENT_FIRST_CALLS = """
import asyncio, sys
from spade_memory.llm.drop_in import AgentBaseMemory

async def main() -> None:
    base = AgentBaseMemory(sys.argv[1], password="drop-in-secret", port=int(sys.argv[2]))
    await asyncio.gather(*(base.store_memory("fact", f"call {n}") for n in range(5)))
    await base.cleanup()
    print("done", flush=True)

asyncio.run(main())
"""


async def test_concurrent_first_calls_share_one_login_and_the_program_exits(
    memory_service: MemoryServiceProcess, tmp_path: Path
) -> None:
    script = tmp_path / "concurrent_first_calls.py"
    script.write_text(CONCURRENT_FIRST_CALLS)
    jid = unique_jid("gather")
    # a connection left open keeps the program running: it never exits
    ran = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, str(script), jid, str(memory_service.port)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert (ran.returncode, ran.stdout.strip()) == (0, "done"), ran.stderr
    base = drop_in.AgentBaseMemory(jid, password="drop-in-secret", port=memory_service.port)
    try:
        assert (await base.get_memory_stats())["total_memories"] == 5
    finally:
        await base.cleanup()
