"""The base memory agent on PostgreSQL, over the wire: ``spade-memory run --database``.

Two services in processes of their own, each with its own base memory agent and data
directory, keep their long-term memories in one PostgreSQL database: what a client
stores through one agent, it finds through the other, and both keep it after a restart.
A client given both agents as a pool spreads its requests over them, and goes on with
the other when one is killed.
"""

from __future__ import annotations

import asyncio
import collections
import time
from pathlib import Path

import pytest
from rich.console import Console
from spade.behaviour import CyclicBehaviour

from benchmarks.scale_out import print_failover, run_failover
from spade_memory.base_memory.store import pg_tables as pg_schema
from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.protocol.errors import ServiceUnavailable
from spade_memory.protocol.memories import (
    Change,
    DeleteMemory,
    GetMemory,
    Memory,
    MemoryList,
    RecentMemories,
    Stored,
    StoreMemory,
)
from spade_memory.protocol.ops import Request
from spade_memory.protocol.working_memory import EntityRef
from spade_memory.server.runtime import PASSWORD_ENV, MemoryRuntime, RunConfig
from spade_memory.testing import (
    MemoryServiceProcess,
    PostgresServer,
    running_postgres,
)
from spade_memory.xmpp import wire
from spade_memory.xmpp.lifecycle import stop_agent
from spade_memory.xmpp.notices import EVENTS_ONTOLOGY
from tests.support.command_line import run_once
from tests.support.harness import start_client, unique_jid
from tests.support.stores import query

ALICE = "alice@localhost"
FIRST = "base-memory@localhost"
SECOND = "base-memory-2@localhost"
NOTES_FIRST = "interaction-memory@localhost"
NOTES_SECOND = "interaction-memory-2@localhost"
SECRET = {PASSWORD_ENV: "memory-agents-secret"}
STARTED_WITHIN = 120.0
"""Seconds a service process may take to start on a loaded machine (three start at once)."""


class CountNotices(CyclicBehaviour):  # type: ignore[misc]
    """Counts the change notices a client receives, by sender and change number."""

    def __init__(self) -> None:
        super().__init__()
        self.heard: collections.Counter[tuple[str, int]] = collections.Counter()

    async def run(self) -> None:
        notice = await self.receive(timeout=0.5)
        if notice is not None:
            seq = int(Change.model_validate_json(notice.body).seq)
            self.heard[(wire.bare(notice.sender), seq)] += 1


def agent_args(url: str, jid: str) -> list[str]:
    """``run``'s arguments for a base memory agent ``jid`` on ``url``, on a server run
    elsewhere."""
    return ["--services", "base-memory", "--database", url, "--external-server",
            "--base-jid", jid]  # fmt: skip


def pool_of_two(tmp_path: Path, url: str) -> list[MemoryServiceProcess]:
    """An XMPP server (with an interaction memory agent) and two base memory agents on
    ``url``, each in a process of its own, so either agent can be killed alone."""
    server = MemoryServiceProcess(
        tmp_path / "server", "--services", "interaction-memory", env=SECRET
    )
    agents = [
        MemoryServiceProcess(
            tmp_path / jid.split("@")[0], *agent_args(url, jid), port=server.port, env=SECRET
        )
        for jid in (FIRST, SECOND)
    ]
    return [server, *agents]


async def test_a_pool_of_two_agents_shares_spaces_and_survives_one_killed(
    tmp_path: Path, postgres_server: PostgresServer
) -> None:
    """Requests spread over two agents; a subscriber hears each change once, from the
    agent that committed it; after SIGKILL of one agent, every call still succeeds
    (through the other), and each acknowledged memory is stored once."""
    url = postgres_server.database("e2e_pool")
    server, first, _ = processes = pool_of_two(tmp_path, url)
    pool = [FIRST, SECOND]
    try:
        for process in processes:
            process.start(timeout=STARTED_WITHIN)
        # generous: a loaded machine slows a reply, it does not lose it (the killed
        # agent's calls wait this long once before going to the other)
        alice = await start_client(unique_jid("alice"), server.port, memory_jid=pool,
                                   memory_timeout=10.0)  # fmt: skip
        bob = await start_client(unique_jid("bob"), server.port, memory_jid=pool,
                                 memory_timeout=10.0)  # fmt: skip
        counter = CountNotices()
        bob.add_behaviour(counter, wire.notice_template(EVENTS_ONTOLOGY))
        try:
            await alice.memory.create_space("pooled")  # through one agent
            await alice.memory.grant("pooled", str(bob.jid.bare), "reader")  # the other
            stream = bob.memory.changes("pooled")
            await stream.start()
            team = alice.memory.space("pooled")
            shared = [await team.store_memory("fact", f"shared finding {n}") for n in range(6)]
            heard = [await asyncio.wait_for(anext(stream), 60) for _ in shared]
            assert [change.memory_id for change in heard] == shared
            await stream.aclose()
            await asyncio.sleep(1.0)  # any duplicate notice would have come by now
            senders = {sender for sender, _ in counter.heard}
            assert senders == {FIRST, SECOND}  # both agents served, and told
            assert sorted(seq for _, seq in counter.heard) == [c.seq for c in heard]
            assert set(counter.heard.values()) == {1}  # each change told once

            before = [await alice.memory.store_memory("fact", f"before {n}") for n in range(4)]
            first.kill()  # SIGKILL: no goodbye, no flush
            after = [await alice.memory.store_memory("fact", f"after {n}") for n in range(6)]
            assert all(isinstance(memory_id, str) for memory_id in before + after)
            found = await bob.memory.search_memories("shared finding", space="pooled")
            assert len(found) == 6
        finally:
            await stop_agent(alice)
            await stop_agent(bob)
    finally:
        for process in reversed(processes):
            process.stop()
    rows = await query(url, "SELECT content, count(*) FROM memories GROUP BY content")
    contents = dict(rows)
    assert set(contents.values()) == {1}
    assert {f"after {n}" for n in range(6)} | {f"before {n}" for n in range(4)} <= set(contents)
    # a store applied twice would reinforce the first (same content): the feed shows it
    feed = await query(url, "SELECT kind, count(*) FROM changes GROUP BY kind")
    assert feed == [("stored", len(rows))]


async def test_two_interaction_agents_share_notes_and_working_memories(
    tmp_path: Path, postgres_server: PostgresServer
) -> None:
    """Notes and working memories through a pool of two interaction memory agents, each
    in a process of its own on one database: what goes through the pool, either agent
    reads; after SIGKILL of one, every call still succeeds and each is applied once."""
    url = postgres_server.database("e2e_notes_pool")
    server = MemoryServiceProcess(tmp_path / "server", "--services", "base-memory", env=SECRET)
    agents = [
        MemoryServiceProcess(tmp_path / jid.split("@")[0], *args, port=server.port, env=SECRET)
        for jid in (NOTES_FIRST, NOTES_SECOND)
        for args in [["--services", "interaction-memory", "--database", url,
                      "--external-server", "--interaction-jid", jid]]
    ]  # fmt: skip
    alice = unique_jid("alice")
    try:
        for process in (server, *agents):
            process.start(timeout=STARTED_WITHIN)
        pooled = await start_client(
            alice, server.port, interaction_memory_jid=[NOTES_FIRST, NOTES_SECOND],
            memory_timeout=10.0,  # generous, as above
        )  # fmt: skip
        readers = [
            await start_client(alice, server.port, interaction_memory_jid=jid)
            for jid in (NOTES_FIRST, NOTES_SECOND)
        ]
        session = pooled.memory.session("s1")

        def entity(n: int) -> EntityRef:
            return EntityRef(type="file", id=f"file{n}.py", name=f"file{n}.py")

        try:
            for n in range(6):
                assert await pooled.memory.add_information("c1", f"note {n}") is not None
                assert await session.add_entity(entity(n)) is not None
            for reader in readers:  # each agent reads all of it
                assert await reader.memory.get_information("c1") == [f"note {n}" for n in range(6)]
                state = await reader.memory.session("s1").get()
                assert state is not None and len(state.working_memory.entities) == 6
            await stop_agent(readers[0])
            agents[0].kill()  # SIGKILL: no goodbye, no flush
            for n in range(6, 10):
                assert await pooled.memory.add_information("c1", f"note {n}") is not None
                assert await session.add_entity(entity(n)) is not None
            notes = await readers[1].memory.get_information("c1")
            assert notes == [f"note {n}" for n in range(10)]  # in order, each once
            state = await readers[1].memory.session("s1").get()
            assert state is not None
            assert sorted(e.id for e in state.working_memory.entities) == sorted(
                entity(n).id for n in range(10)
            )
        finally:
            await stop_agent(pooled)
            await stop_agent(readers[1])
    finally:
        for process in reversed([server, *agents]):
            process.stop()
    assert await query(url, "SELECT count(*) FROM notes") == [(10,)]
    assert not list((tmp_path / "interaction-memory").glob("interaction-memory.db*"))


async def test_two_agents_in_two_processes_serve_one_postgresql_store(
    tmp_path: Path, postgres_server: PostgresServer
) -> None:
    url = postgres_server.database("e2e_two_agents")
    first = MemoryServiceProcess(
        tmp_path / "first", "--services", "base-memory", "--database", url, env=SECRET
    )
    first.start()
    second = MemoryServiceProcess(
        tmp_path / "second", "--services", "base-memory", "--database", url,
        "--external-server", "--base-jid", SECOND, port=first.port, env=SECRET,
    )  # fmt: skip
    alice = unique_jid("alice")
    try:
        second.start()
        through_first = await start_client(alice, first.port)
        through_second = await start_client(alice, first.port, memory_jid=SECOND)
        try:
            stored = await through_first.memory.store_memory(
                "fact", "the staging database moved to the eu-west region"
            )
            found = await through_second.memory.search_memories("staging database region")
            assert [memory.id for memory in found] == [stored]
            assert found[0].owner == alice  # the sender's JID, whichever agent it reached
            again = await through_second.memory.store_memory(
                "fact", "the staging database moved to the eu-west region"
            )
            assert again == stored  # the same memory, reinforced, not a second one
            listed = await through_first.memory.get_recent_memories()
            assert [memory.id for memory in listed] == [stored]
        finally:
            await stop_agent(through_first)
            await stop_agent(through_second)
    finally:
        second.stop()
        first.stop()
    rows = await query(url, "SELECT owner, content FROM memories")
    assert rows == [(alice, "the staging database moved to the eu-west region")]
    assert not list((tmp_path / "first").glob("base-memory.db*"))  # no SQLite file beside

    first.start()  # what PostgreSQL holds outlives the agents
    client = await start_client(alice, first.port)
    try:
        assert [m.content for m in await client.memory.search_memories("eu-west")] == [
            "the staging database moved to the eu-west region"
        ]
    finally:
        await stop_agent(client)
        first.stop()


def test_a_database_that_is_not_a_url_or_cannot_be_reached_stops_run_with_one_line(
    tmp_path: Path,
) -> None:
    for database, said in [
        ("memories.db", "takes a postgresql:// URL"),
        ("postgresql://nobody@127.0.0.1:1/none", "cannot be reached"),
    ]:
        done = run_once(tmp_path / "d", "--services", "base-memory", "--database", database)
        assert done.returncode != 0
        assert said in done.stderr and "Traceback" not in done.stderr, done.stderr


async def test_a_server_out_of_reach_is_a_typed_failure_and_the_store_goes_on() -> None:
    """The PostgreSQL server stops under a running store: each request is answered
    ``service-unavailable`` (nothing applied), and once the server is back the same
    store serves again, with everything acknowledged before."""
    with running_postgres() as server:
        store = await LongTermStore.open(server.database("outage"))
        try:
            kept = await store.apply(
                ALICE, StoreMemory(category="fact", content="before the outage")
            )
            assert isinstance(kept, Stored)
            server.stop("immediate")  # as a crash of the server would
            for op in (StoreMemory(category="fact", content="during"), GetMemory(id=kept.id)):
                with pytest.raises(ServiceUnavailable, match="cannot be reached"):
                    await store.apply(ALICE, op)
            server.start()
            after = await store.apply(ALICE, StoreMemory(category="fact", content="after it"))
            assert isinstance(after, Stored)
            got = await store.apply(ALICE, GetMemory(id=kept.id))
            assert isinstance(got, Memory) and got.content == "before the outage"
            listed = await store.apply(ALICE, RecentMemories())
            assert isinstance(listed, MemoryList)
            contents = sorted(m.content for m in listed.memories)
            assert contents == ["after it", "before the outage"]
        finally:
            await store.close()


async def test_two_stores_on_one_database_delete_and_purge_each_memory_once(
    postgres_server: PostgresServer,
) -> None:
    """Two stores (as two agents) on one database: a memory deleted through both at once
    is deleted once (the other is told it is not there), and expired memories purged by
    both at once are each purged once; the feed and the usage count each deletion once."""
    url = postgres_server.database("two_stores")
    first, second = await LongTermStore.open(url), await LongTermStore.open(url)
    try:
        ids = []
        for n in range(40):
            stored = await first.apply(ALICE, StoreMemory(category="fact", content=f"memo {n}"))
            assert isinstance(stored, Stored)
            ids.append(stored.id)
        outcomes = await asyncio.gather(
            *(store.batch(ALICE, [Request(DeleteMemory(id=memory_id))])
              for memory_id in ids[:20] for store in (first, second)),
        )  # fmt: skip
        kinds = [type(outcome[0]).__name__ for outcome in outcomes]
        assert kinds.count("Deleted") == 20 and kinds.count("ItemNotFound") == 20
        await query(url, "UPDATE memories SET expires_at = ?", time.time() - 1)
        purged = await asyncio.gather(first.purge_expired(), second.purge_expired())
        assert sum(purged) == 20
        feed = await first.changes_since(0)
        deleted = [change.memory_id for change in feed.changes if change.kind == "deleted"]
        assert sorted(deleted) == sorted(ids)  # each once
        assert await query(url, "SELECT memories FROM usage") == [(0,)]
    finally:
        await first.close()
        await second.close()


async def test_agents_that_start_together_on_a_new_database_migrate_it_once(
    postgres_server: PostgresServer,
) -> None:
    """Four stores opening a new database at the same moment: every one opens (without
    the advisory lock, each would create the same tables), and the schema is there once."""
    url = postgres_server.database("migrated_once")
    stores = await asyncio.gather(*(LongTermStore.open(url) for _ in range(4)))
    try:
        stored = await stores[0].apply(ALICE, StoreMemory(category="fact", content="one"))
        assert isinstance(stored, Stored)
        got = await stores[3].apply(ALICE, GetMemory(id=stored.id))
        assert isinstance(got, Memory) and got.content == "one"
        assert await query(url, "SELECT store, version FROM spade_memory_schema") == [
            ("base_memory", len(pg_schema.MIGRATIONS))
        ]
    finally:
        for store in stores:
            await store.close()


async def test_a_run_given_a_database_that_is_not_a_url_refuses_to_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As the deployment's agents are configured (from the environment, not the
    command line): nothing starts, and no SQLite file is made of the value."""
    monkeypatch.chdir(tmp_path)
    runtime = MemoryRuntime(RunConfig(data_dir=tmp_path / "data", database="memories.db"))
    with pytest.raises(RuntimeError, match="must be a postgresql:// URL"):
        await runtime.start()
    assert sorted(path.name for path in tmp_path.iterdir()) == []


@pytest.mark.slow
async def test_the_failover_run_loses_nothing() -> None:
    """``python -m benchmarks.scale_out failover``, shorter: every acknowledged memory is
    there once, and no call failed without a type, with an agent SIGKILLed twice."""
    result = await run_failover(clients=4, seconds=15.0, kills=2)
    print_failover(Console(width=160), result)
    assert len(result.kills) == 2 and result.acked > 0
    assert result.ok, result
