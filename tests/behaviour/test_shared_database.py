"""Two agents' stores on one PostgreSQL database, as two memory agents of one service.

Each store has its own pool of connections, so their transactions really run at once:
changes to one working memory, and one request id reaching both agents (a client that
failed over while the first agent was still at work), must come out as they would from
one agent; and a vector one agent commits must reach the other's cached index.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import pytest

from spade_memory.base_memory.graph import links as graph_links
from spade_memory.base_memory.retrieval import backfill
from spade_memory.base_memory.retrieval.embeddings import Embedder
from spade_memory.base_memory.store import pg_tables as pg_schema
from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.interaction import pg_tables as interaction_schema
from spade_memory.interaction.store import InteractionStore
from spade_memory.protocol.memories import (
    Memory,
    MemoryList,
    SearchMemories,
    Stored,
    StoreMemory,
    UpdateMemory,
)
from spade_memory.protocol.notes import AddInformation, GetInformation, Notes
from spade_memory.protocol.working import (
    AddEntity,
    AddFinding,
    GetWorkingMemory,
    WorkingMemoryState,
)
from spade_memory.protocol.working_memory import EntityRef, Finding
from spade_memory.testing import PostgresServer
from tests.support.stores import HeldInBackground, query

ALICE = "alice@localhost"
PUPPY = "Our puppy is called Biscuit"  # no word in common with the questions asked


@pytest.fixture
async def url(postgres_server: PostgresServer, request: pytest.FixtureRequest) -> str:
    return postgres_server.database(f"shared_{request.node.name[5:40]}")


@pytest.fixture
async def two(url: str) -> AsyncIterator[tuple[InteractionStore, InteractionStore]]:
    """Two interaction stores on one database: two agents' worth of connections."""
    first, second = await asyncio.gather(InteractionStore.open(url), InteractionStore.open(url))
    yield first, second
    await first.close()
    await second.close()


async def test_changes_to_one_session_through_two_agents_are_all_kept(
    two: tuple[InteractionStore, InteractionStore],
) -> None:
    """Forty entities added at once to a session that does not exist yet, half through
    each store: the first changes race to create it, and none is written over."""
    names = [f"file{n}.py" for n in range(40)]
    await asyncio.gather(
        *(
            two[n % 2].apply(ALICE, AddEntity(session_id="s1", entity=EntityRef(
                type="file", id=name, name=name)))
            for n, name in enumerate(names)
        )
    )  # fmt: skip
    state = await two[0].apply(ALICE, GetWorkingMemory(session_id="s1"))
    assert isinstance(state, WorkingMemoryState)
    assert sorted(entity.id for entity in state.working_memory.entities) == sorted(names)


async def test_one_request_id_through_two_agents_at_once_is_applied_once(
    two: tuple[InteractionStore, InteractionStore], url: str
) -> None:
    note = AddInformation(conversation_id="c1", information="said once")
    for attempt in range(10):  # ten races of each, on fresh ids
        bug = Finding(id=f"f{attempt}", type="bug", title=f"leak {attempt}")
        finding = AddFinding(session_id="s1", finding=bug)
        found = await asyncio.gather(
            *(store.apply(ALICE, finding, f"find-{attempt}") for store in two)
        )
        assert found[0] == found[1]  # the second agent answers with the first's answer
        said = await asyncio.gather(*(store.apply(ALICE, note, f"note-{attempt}") for store in two))
        assert said[0] == said[1]
    state = await two[1].apply(ALICE, GetWorkingMemory(session_id="s1"))
    assert isinstance(state, WorkingMemoryState)
    assert [f.id for f in state.working_memory.findings] == [f"f{n}" for n in range(10)]
    notes = await two[0].apply(ALICE, GetInformation(conversation_id="c1"))
    assert isinstance(notes, Notes) and notes.notes == ["said once"] * 10
    assert await query(url, "SELECT count(*) FROM interaction_requests") == [(20,)]


async def test_one_update_through_two_long_term_agents_at_once_is_applied_once(
    url: str,
) -> None:
    first, second = await LongTermStore.open(url), await LongTermStore.open(url)
    try:
        stored = await first.apply(ALICE, StoreMemory(category="fact", content="v1"))
        assert isinstance(stored, Stored)
        for attempt in range(10):
            update = UpdateMemory(id=stored.id, content=f"v{attempt + 2}")
            answers = await asyncio.gather(
                *(store.apply(ALICE, update, f"update-{attempt}") for store in (first, second))
            )
            assert isinstance(answers[0], Memory) and answers[0] == answers[1]
        assert await query(url, "SELECT content, version FROM memories") == [("v11", 11)]
        feed = await query(url, "SELECT kind, count(*) FROM changes GROUP BY kind ORDER BY 1")
        assert feed == [("stored", 1), ("updated", 10)]
    finally:
        await first.close()
        await second.close()


async def test_the_stores_share_a_database_and_keep_their_request_ids_apart(url: str) -> None:
    """Both stores in one database, one request id used with each: each applies it (the
    long-term store's answer would not even parse as a note's)."""
    notes, memories = await InteractionStore.open(url), await LongTermStore.open(url)
    try:
        said = await notes.apply(ALICE, AddInformation(conversation_id="c1", information="x"), "r")
        stored = await memories.apply(ALICE, StoreMemory(category="fact", content="x"), "r")
        assert isinstance(stored, Stored) and "Remembered" in str(said)
        schema = await query(url, "SELECT store, version FROM spade_memory_schema ORDER BY 1")
        assert schema == [
            ("base_memory", len(pg_schema.MIGRATIONS)),
            ("interaction", len(interaction_schema.MIGRATIONS)),
        ]
    finally:
        await notes.close()
        await memories.close()


async def found_ids(store: LongTermStore, words: str) -> list[str]:
    found = await store.apply(ALICE, SearchMemories(query=words))
    assert isinstance(found, MemoryList)
    return [memory.id for memory in found.memories]


async def until_found(store: LongTermStore, words: str, memory_id: str) -> None:
    """Search through ``store`` until it finds ``memory_id`` (another agent's notice is
    on its way); fail after 20 s."""
    for _ in range(200):
        if memory_id in await found_ids(store, words):
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{words!r} never found {memory_id}")


async def test_vectors_one_agent_commits_reach_the_others_cached_index(
    url: str, embedder: Embedder
) -> None:
    """The second agent's index of the space is cached before the first stores; each
    query shares no word with the memory, so only its vector can find it. A text
    changed through the first agent is found by its new meaning and no more by its old
    one. With the second agent's listening connection killed, its cached indexes are
    dropped (what was stored meanwhile is found), and it listens again."""
    first, second = await asyncio.gather(
        LongTermStore.open(url, embedder=embedder), LongTermStore.open(url, embedder=embedder)
    )
    try:
        await second.apply(
            ALICE, StoreMemory(category="fact", content="Deploys happen on Tuesdays")
        )
        await second.embedded()
        await found_ids(second, "when do we release")
        assert second.ranking.kind_of(ALICE) == "exact"  # cached

        puppy = await first.apply(
            ALICE, StoreMemory(category="fact", content="Our puppy is called Biscuit")
        )
        assert isinstance(puppy, Stored)
        await first.embedded()
        await until_found(second, "name of the dog", puppy.id)

        await first.apply(
            ALICE, UpdateMemory(id=puppy.id, content="The invoices are paid every Friday")
        )
        await first.embedded()
        await until_found(second, "when do suppliers get their money", puppy.id)
        assert puppy.id not in await found_ids(second, "name of the dog")  # its old vector went

        (killed,) = await query(
            url, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE application_name = 'spade-memory vector notices'",
        )  # fmt: skip
        assert killed == (2,)  # each agent's listening connection
        coffee = await first.apply(
            ALICE, StoreMemory(category="fact", content="The coffee machine is on the third floor")
        )
        assert isinstance(coffee, Stored)
        await first.embedded()
        await until_found(second, "where can I get an espresso", coffee.id)
        assert second.ranking.shared is not None
        for _ in range(200):  # listening again (within a second here)
            if second.ranking.shared.listening:
                break
            await asyncio.sleep(0.1)
        assert second.ranking.shared.listening
        await found_ids(second, "when do we release")  # cached again
        assert second.ranking.kind_of(ALICE) == "exact"
        plant = await first.apply(
            ALICE, StoreMemory(category="fact", content="A ficus stands by the window")
        )
        assert isinstance(plant, Stored)
        await first.embedded()
        await until_found(second, "which tree is in the office", plant.id)
    finally:
        await first.close()
        await second.close()


async def test_a_text_another_agent_changes_while_it_is_embedded_gets_the_new_vector(
    url: str, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another agent's change of a memory is under way (its row locked, its vector
    deleted, not committed) when this agent's background is about to write the old
    text's vector: the write waits for the change, sees the new text, and the memory
    is embedded again; its old meaning finds nothing."""
    import asyncpg

    monkeypatch.setattr(backfill, "ON_DEMAND", 0)  # only the background embeds
    held = HeldInBackground(embedder)
    store = await LongTermStore.open(url, embedder=held)
    other = await asyncpg.connect(url)
    try:
        taxes = await store.apply(
            ALICE, StoreMemory(category="fact", content="Quarterly taxes are due on the fifteenth")
        )
        assert isinstance(taxes, Stored)
        await asyncio.to_thread(held.entered.wait, 30)  # the old text is being embedded
        change = other.transaction()
        await change.start()
        seq = await other.fetchval("SELECT seq FROM memories WHERE id = $1 FOR UPDATE", taxes.id)
        await other.execute("UPDATE memories SET content = $1 WHERE seq = $2", PUPPY, seq)
        await other.execute("DELETE FROM embeddings WHERE seq = $1", seq)
        held.release()
        for _ in range(300):  # until the write waits for the change (or wrote without it)
            (waiting,) = await query(
                url, "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                " AND datname = current_database()",
            )  # fmt: skip
            if waiting != (0,) or await query(url, "SELECT seq FROM embeddings"):
                break
            await asyncio.sleep(0.1)
        await change.commit()
        await store.embedded()
        assert await found_ids(store, "what is the name of our dog") == [taxes.id]
        assert await found_ids(store, "when do we pay the tax office") == []
    finally:
        await other.close()
        await store.close()


async def test_agents_opening_a_store_of_older_graph_rules_together_link_it_once(
    url: str, caplog: pytest.LogCaptureFixture
) -> None:
    store = await LongTermStore.open(url)
    met = await store.apply(ALICE, StoreMemory(category="fact", content="I met Ana, Bea at noon."))
    assert isinstance(met, Stored)
    await store.close()
    await query(url, "UPDATE memory_entities SET key = 'ana bea' WHERE key = 'ana'")
    await query(url, "UPDATE graph_finder SET version = 1")
    caplog.set_level(logging.INFO, logger=graph_links.__name__)
    opened_all = await asyncio.gather(*(LongTermStore.open(url) for _ in range(3)))
    try:
        assert caplog.text.count("1 memories linked again") == 1
        keys = await query(url, "SELECT key FROM memory_entities WHERE kind = 'name' ORDER BY key")
        assert keys == [("ana",), ("bea",)]
    finally:
        for opened in opened_all:
            await opened.close()
