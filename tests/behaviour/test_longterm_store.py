"""Conformance of the long-term store, on a real SQLite file and on a real PostgreSQL
server (``location``): the same tests, the same answers."""

from __future__ import annotations

import asyncio
import gc
import json
import sqlite3
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from pydantic import ValidationError
from spade.message import Message

from spade_memory.base_memory.service import BaseMemoryService
from spade_memory.base_memory.store.access_counts import AccessLog
from spade_memory.base_memory.store.imports import ImportMemory
from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.protocol.errors import BadRequest, ItemNotFound, MemoryServiceError
from spade_memory.protocol.limits import Limits
from spade_memory.protocol.memories import (
    SQL_INTEGER,
    STATS_DAYS,
    DeleteMemory,
    ForgetAllMemories,
    GetMemory,
    ListMemories,
    Memory,
    MemoryList,
    MemoryStats,
    MemoryStatsOp,
    RecentMemories,
    SearchMemories,
    Stored,
    StoreMemory,
    UpdateMemory,
)
from spade_memory.protocol.ops import MOST_ASKED, Place, Request
from spade_memory.serving.agent import ServeRequests
from tests.support.stores import Location

ALICE = "alice@localhost"
BOB = "bob@localhost"


@pytest.fixture
async def store(location: Location) -> AsyncIterator[LongTermStore]:
    opened = await LongTermStore.open(location("memory.db"))
    yield opened
    await opened.close()


async def put(store: LongTermStore, owner: str, content: str, **fields: object) -> str:
    result = await store.apply(
        owner, StoreMemory(content=content, **{"category": "fact", **fields})
    )
    assert isinstance(result, Stored)
    return result.id


async def search(store: LongTermStore, owner: str, query: str, **fields: object) -> list[Memory]:
    result = await store.apply(owner, SearchMemories(query=query, **fields))
    assert isinstance(result, MemoryList)
    return result.memories


async def contents(store: LongTermStore, owner: str) -> list[str]:
    result = await store.apply(owner, RecentMemories(limit=1000))
    assert isinstance(result, MemoryList)
    return sorted(m.content for m in result.memories)


async def test_store_then_get_returns_every_field(store: LongTermStore) -> None:
    memory_id = await put(store, ALICE, "Paris is the capital", context="geo", confidence=0.75)
    memory = await store.apply(ALICE, GetMemory(id=memory_id))
    assert isinstance(memory, Memory)
    assert (memory.owner, memory.category, memory.content) == (
        ALICE,
        "fact",
        "Paris is the capital",
    )
    assert (memory.context, memory.confidence, memory.access_count) == ("geo", 0.75, 1)
    assert memory.created_at <= memory.last_accessed


async def test_search_ranks_by_shared_rare_words(store: LongTermStore) -> None:
    await put(store, ALICE, "the weather is nice today")
    best = await put(store, ALICE, "API endpoint requires authentication header")
    await put(store, ALICE, "the API is versioned")
    found = await search(store, ALICE, "API authentication")
    assert found[0].id == best
    assert len(found) == 2


async def test_search_filters_category_and_limit(store: LongTermStore) -> None:
    for n in range(5):
        await put(store, ALICE, f"coffee note {n}")
    await put(store, ALICE, "coffee with oat milk", category="preference")
    prefs = await search(store, ALICE, "coffee", category="preference")
    assert [m.content for m in prefs] == ["coffee with oat milk"]
    assert len(await search(store, ALICE, "coffee", limit=3)) == 3


@pytest.mark.parametrize(
    "query",
    ['"unbalanced', "AND OR NOT", "*", "'; DROP TABLE memories; --", "NEAR(a b", "", "\x00"],
)
async def test_fts_syntax_in_queries_is_plain_text(store: LongTermStore, query: str) -> None:
    await put(store, ALICE, "unbalanced budget and not much else")
    found = await search(store, ALICE, query)
    assert isinstance(found, list)
    assert await contents(store, ALICE) == ["unbalanced budget and not much else"]


async def test_owners_never_see_each_other(store: LongTermStore) -> None:
    bob_id = await put(store, BOB, "bob secret plan")
    assert await search(store, ALICE, "secret plan") == []
    for op in (
        GetMemory(id=bob_id),
        UpdateMemory(id=bob_id, content="hijacked"),
        DeleteMemory(id=bob_id),
    ):
        with pytest.raises(ItemNotFound):
            await store.apply(ALICE, op)
    assert await contents(store, BOB) == ["bob secret plan"]


async def test_list_by_category_and_recent_order(store: LongTermStore) -> None:
    first = await put(store, ALICE, "first", category="pattern")
    second = await put(store, ALICE, "second", category="pattern")
    await put(store, ALICE, "third", category="capability")
    listed = await store.apply(ALICE, ListMemories(category="pattern"))
    assert isinstance(listed, MemoryList)
    assert {m.id for m in listed.memories} == {first, second}
    await store.apply(ALICE, GetMemory(id=first))  # touching makes it the most recent
    recent = await store.apply(ALICE, RecentMemories(limit=2))
    assert isinstance(recent, MemoryList)
    assert recent.memories[0].id == first
    assert len(recent.memories) == 2


async def test_pages_of_a_list_cover_every_memory_once(store: LongTermStore) -> None:
    stored = {await put(store, ALICE, f"note {i}", category="pattern") for i in range(7)}
    await put(store, BOB, "not alice's", category="pattern")
    for op in (RecentMemories, ListMemories):
        seen: list[str] = []
        offset: int | None = 0
        while offset is not None:
            fields = {"category": "pattern"} if op is ListMemories else {}
            page = await store.apply(ALICE, op(limit=3, offset=offset, **fields))
            assert isinstance(page, MemoryList)
            assert len(page.memories) <= 3
            seen += [m.id for m in page.memories]
            offset = page.next_offset
        assert sorted(seen) == sorted(stored)  # every one, none twice, nobody else's
    last = await store.apply(ALICE, RecentMemories(limit=7))
    assert isinstance(last, MemoryList) and last.next_offset is None
    assert len(last.memories) == 7


@pytest.mark.parametrize(
    ("body", "condition"),
    [
        ({"op": "recent_memories", "offset": 2**70}, "bad-request"),
        ({"op": "list_memories", "category": "fact", "offset": 2**70}, "bad-request"),
        ({"op": "recent_memories", "offset": 1_001}, "resource-constraint"),
        ({"op": "changes_since", "after": 2**70}, "bad-request"),
    ],
)
async def test_a_huge_offset_or_cursor_is_a_typed_failure(
    store: LongTermStore, body: dict[str, object], condition: str
) -> None:
    """As a peer's request arrives: parsed, checked against the limits, served by a real
    store; never an internal-server-error."""
    await put(store, ALICE, "one memory to page through")
    serving = ServeRequests(BaseMemoryService(store, Limits(max_offset=1_000)), "localhost")
    request = Message(
        to="base-memory@localhost", sender=f"{ALICE}/laptop", thread="t", body=json.dumps(body)
    )
    reply = await serving.outcome(request)
    assert isinstance(reply, MemoryServiceError) and reply.condition.value == condition
    within = {**body, "offset": 1_000} if "offset" in body else None
    if within is not None:  # the bound itself is served
        reply = await serving.outcome(Message(sender=f"{ALICE}/x", body=json.dumps(within)))
        assert isinstance(reply, MemoryList) and reply.memories == []


async def test_the_largest_offset_an_op_takes_is_served_by_the_engine(
    store: LongTermStore,
) -> None:
    await put(store, ALICE, "one memory")
    page = await store.apply(ALICE, RecentMemories(offset=SQL_INTEGER))
    assert page.memories == [] and page.next_offset is None
    with pytest.raises(ValidationError):
        RecentMemories(offset=SQL_INTEGER + 1)


async def test_the_largest_limit_an_op_takes_is_served_by_the_engine(
    store: LongTermStore,
) -> None:
    # a search of limit 2**63, made in the process (no agent's limits between), raised
    # OverflowError from the engine
    await put(store, ALICE, "one memory about pottery")
    for op in (SearchMemories, RecentMemories):
        fields = {"query": "pottery"} if op is SearchMemories else {}
        found = await store.apply(ALICE, op(limit=MOST_ASKED, **fields))
        assert isinstance(found, MemoryList) and len(found.memories) == 1
        with pytest.raises(ValidationError):
            op(limit=2**63, **fields)


async def test_update_changes_fields_and_index(store: LongTermStore) -> None:
    memory_id = await put(store, ALICE, "likes tea")
    updated = await store.apply(
        ALICE,
        UpdateMemory(
            id=memory_id,
            content="likes espresso",
            category="preference",
            context="kitchen",
            confidence=0.4,
        ),
    )
    assert isinstance(updated, Memory)
    assert (updated.content, updated.category, updated.context, updated.confidence) == (
        "likes espresso",
        "preference",
        "kitchen",
        0.4,
    )
    assert await search(store, ALICE, "tea") == []
    assert [m.id for m in await search(store, ALICE, "espresso")] == [memory_id]
    assert [m.id for m in await search(store, ALICE, "kitchen")] == [memory_id]


async def test_a_copy_of_another_members_memory_leaves_it_as_it_was(
    store: LongTermStore,
) -> None:
    """Storing what another member of a space already stored there changes nothing of
    theirs: the copy is the sender's own memory (a second copy is deduplicated on it)."""
    by_alice, by_bob = Place("team", "team", "owner"), Place("team", "team", "writer")
    copy = StoreMemory(category="fact", content="The API  needs a token", confidence=1.0)

    async def stored(owner: str, op: StoreMemory, place: Place) -> Stored:
        (outcome,) = await store.batch(owner, [Request(op, None, (place,))])
        assert isinstance(outcome, Stored)
        return outcome

    async def memory(memory_id: str) -> Memory:
        (found,) = await store.batch(ALICE, [Request(GetMemory(id=memory_id), None, (by_alice,))])
        assert isinstance(found, Memory)
        return found

    original = await stored(ALICE, copy.model_copy(update={"confidence": 0.4}), by_alice)
    before = await memory(original.id)
    feed = (await store.changes_since(0)).last_seq

    bobs = await stored(BOB, copy, by_bob)
    again = await stored(BOB, copy.model_copy(update={"content": "the api needs a TOKEN"}), by_bob)

    assert not bobs.deduplicated and bobs.id != original.id
    assert again.deduplicated and again.id == bobs.id
    after = await memory(original.id)
    assert (after.confidence, after.version) == (0.4, 1)
    assert after.access_count == before.access_count + 1  # the read of it, nothing else
    assert (await memory(bobs.id)).author == BOB
    changes = (await store.changes_since(feed)).changes
    assert original.id not in {change.memory_id for change in changes}


async def test_delete_removes_from_search(store: LongTermStore) -> None:
    memory_id = await put(store, ALICE, "temporary thought")
    await store.apply(ALICE, DeleteMemory(id=memory_id))
    assert await search(store, ALICE, "temporary") == []
    with pytest.raises(ItemNotFound):
        await store.apply(ALICE, GetMemory(id=memory_id))


async def test_stats(store: LongTermStore) -> None:
    empty = await store.apply(ALICE, MemoryStatsOp())
    assert empty.model_dump()["total_memories"] == 0
    await put(store, ALICE, "a", confidence=0.5)
    await put(store, ALICE, "b", category="pattern", confidence=1.0)
    await put(store, BOB, "not counted")
    stats = (await store.apply(ALICE, MemoryStatsOp())).model_dump()
    assert stats["total_memories"] == 2
    assert stats["category_counts"] == {"fact": 1, "pattern": 1}
    assert stats["avg_confidence"] == pytest.approx(0.75)
    assert stats["oldest_memory"] <= stats["newest_memory"]
    assert (stats["stored_per_day"], stats["stored_by_author"]) == ({}, {})  # not asked


async def test_stats_count_what_was_stored_day_by_day_and_by_whom(store: LongTermStore) -> None:
    """What the web view's charts draw, counted by the store: live memories only, of
    the space asked, each on its UTC day, the most prolific authors by name."""
    now, day = time.time(), 86_400
    ages = (0, 0, 1, 3, 20)  # in days
    for n, age in enumerate(ages):
        imported = ImportMemory(
            id=str(uuid.uuid4()), category="fact", content=f"imported {n}", confidence=1.0,
            created_at=now - age * day, last_accessed=now, access_count=0,
        )  # fmt: skip
        assert isinstance(await store.apply(ALICE, imported), Stored)
    gone = await put(store, ALICE, "deleted today")
    await store.apply(ALICE, DeleteMemory(id=gone))
    await put(store, BOB, "bob's own, not alice's")
    when = Counter(datetime.fromtimestamp(now - a * day, timezone.utc).date() for a in ages)

    while True:  # asked again if midnight (UTC) passed meanwhile
        today = datetime.now(timezone.utc).date()
        stats = await store.apply(ALICE, MemoryStatsOp(days=3))
        if datetime.now(timezone.utc).date() == today:
            break
    assert isinstance(stats, MemoryStats)
    window = [today - timedelta(days=n) for n in (2, 1, 0)]
    assert stats.stored_per_day == {d.isoformat(): when[d] for d in window}
    assert list(stats.stored_per_day) == [d.isoformat() for d in window]  # oldest first
    assert sum(stats.stored_per_day.values()) == 3
    assert (stats.stored_by_author, stats.stored_by_others) == ({ALICE: 3}, 0)
    assert stats.total_memories == len(ages)  # the counts of every day are unchanged

    team = [f"writer-{n}@localhost" for n in range(8)]
    by_count = {ALICE: 3, BOB: 2, **dict.fromkeys(team, 1)}
    for author, count in by_count.items():
        role = "owner" if author == ALICE else "writer"
        for n in range(count):
            op = StoreMemory(category="fact", content=f"{author} told the team {n}")
            (done,) = await store.batch(author, [Request(op, None, (Place("t", "team", role),))])
            assert isinstance(done, Stored)
    asked = Request(
        MemoryStatsOp(space="team", days=STATS_DAYS), None, (Place("t", "team", "reader"),)
    )
    (shared,) = await store.batch(BOB, [asked])
    assert isinstance(shared, MemoryStats)
    assert sum(shared.stored_per_day.values()) == sum(by_count.values())
    named = {ALICE: 3, BOB: 2, **dict.fromkeys(sorted(team)[:6], 1)}  # ties by address
    assert (shared.stored_by_author, shared.stored_by_others) == (named, 2)
    assert list(shared.stored_by_author)[:2] == [ALICE, BOB]  # the most first
    assert len(shared.stored_per_day) == STATS_DAYS
    with pytest.raises(ValidationError):
        MemoryStatsOp(days=STATS_DAYS + 1)


async def test_repeated_request_id_applies_once_even_after_reopen(location: Location) -> None:
    path = location("memory.db")
    store = await LongTermStore.open(path)
    op = StoreMemory(category="fact", content="only once")
    first = await store.apply(ALICE, op, request_id="req-1")
    again = await store.apply(ALICE, op, request_id="req-1")
    await store.close()
    reopened = await LongTermStore.open(path)
    later = await reopened.apply(ALICE, op, request_id="req-1")
    assert first == again == later
    assert await contents(reopened, ALICE) == ["only once"]
    # the same request id from another owner is another request
    await reopened.apply(BOB, op, request_id="req-1")
    assert await contents(reopened, BOB) == ["only once"]
    await reopened.close()


async def test_memories_persist_across_reopen(location: Location) -> None:
    path = location("memory.db")
    store = await LongTermStore.open(path)
    ids = [await put(store, ALICE, f"durable {n}") for n in range(20)]
    await store.close()
    reopened = await LongTermStore.open(path)
    found = await search(reopened, ALICE, "durable", limit=50)
    assert sorted(m.id for m in found) == sorted(ids)
    await reopened.close()


async def test_opens_a_spade_llm_database_and_keeps_every_row(tmp_path: Path) -> None:
    from spade_llm.memory.agent_base_memory import AgentBaseMemory

    legacy = AgentBaseMemory("legacy@localhost", memory_path=str(tmp_path))
    ids = [
        await legacy.store_memory("fact", "API endpoint requires authentication header"),
        await legacy.store_memory(
            "preference", "prefers short answers", context="chat", confidence=0.8
        ),
        await legacy.store_memory("capability", "can read PDF files"),
    ]
    await legacy.search_memories("PDF")  # bumps an access count
    await legacy.cleanup()
    path = tmp_path / "legacy_localhost_base_memory.db"
    before = sqlite3.connect(path).execute("SELECT * FROM agent_memories ORDER BY id").fetchall()

    store = await LongTermStore.open(path)
    recent = await store.apply("legacy@localhost", RecentMemories(limit=10))
    assert isinstance(recent, MemoryList)
    by_id = {m.id: m for m in recent.memories}
    assert sorted(by_id) == sorted(ids)
    assert by_id[ids[1]].context == "chat" and by_id[ids[1]].confidence == 0.8
    assert by_id[ids[2]].access_count == 2  # one from spade_llm, one from this read
    found = await search(store, "legacy@localhost", "authentication")
    assert [m.id for m in found] == [ids[0]]
    await store.close()

    after = sqlite3.connect(path).execute("SELECT * FROM agent_memories ORDER BY id").fetchall()
    assert after == before


async def test_access_counts_add_up_across_batched_writes_and_reopen(
    location: Location,
) -> None:
    path = location("memory.db")
    store = await LongTermStore.open(path)
    memory_id = await put(store, ALICE, "counted memory")
    counts = [(await search(store, ALICE, "counted"))[0].access_count for _ in range(3)]
    assert counts == [1, 2, 3]
    got = await store.apply(ALICE, GetMemory(id=memory_id))
    assert isinstance(got, Memory) and got.access_count == 4
    await search(store, ALICE, "counted")  # noted, written at close
    await store.close()
    reopened = await LongTermStore.open(path)
    again = await reopened.apply(ALICE, GetMemory(id=memory_id))
    assert isinstance(again, Memory) and again.access_count == 6
    await reopened.close()


async def test_close_after_many_searches_leaves_no_flush_behind(tmp_path: Path) -> None:
    loop = asyncio.get_running_loop()
    errors: list[dict[str, object]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: errors.append(context))
    try:
        store = await LongTermStore.open(tmp_path / "memory.db")
        for n in range(1100):
            await put(store, ALICE, f"note number {n}")
        await search(store, ALICE, "note", limit=10)  # arms the one-second flush timer
        await search(store, ALICE, "note", limit=1000)  # 1000 pending: a flush starts early
        await store.close()
        await asyncio.sleep(AccessLog.FLUSH_AFTER_SECONDS + 0.2)  # a stray timer would fire now
        del store
        gc.collect()  # "Task exception was never retrieved" is reported on collection
    finally:
        loop.set_exception_handler(previous)
    # only this store's flush counts (the session's loop also carries other tests' agents)
    assert [error for error in errors if "flush_accesses" in repr(error)] == []


async def test_repeated_update_and_delete_request_ids_apply_once(store: LongTermStore) -> None:
    memory_id = await put(store, ALICE, "count: 1")
    first = await store.apply(ALICE, UpdateMemory(id=memory_id, content="count: 2"), "u-1")
    await store.apply(ALICE, UpdateMemory(id=memory_id, content="count: 3"))
    again = await store.apply(ALICE, UpdateMemory(id=memory_id, content="count: 2"), "u-1")
    assert again == first  # the first answer, and the later change is not undone
    assert await contents(store, ALICE) == ["count: 3"]

    deleted = await store.apply(ALICE, DeleteMemory(id=memory_id), "d-1")
    assert await store.apply(ALICE, DeleteMemory(id=memory_id), "d-1") == deleted
    with pytest.raises(ItemNotFound):
        await store.apply(ALICE, DeleteMemory(id=memory_id), "d-2")


async def test_forget_all_memories_takes_the_own_space_and_the_stored_answers(
    store: LongTermStore,
) -> None:
    """Every memory of the sender's own space goes, and so do the answers its ledger
    keeps for it (a retried update is served again, not answered with the old text);
    what it stored in a shared space, and other owners' memories and answers, stay."""
    mine = await put(store, ALICE, "alice's first")
    await put(store, ALICE, "alice's second")
    bobs = await put(store, BOB, "bob's own")
    team = (Place("space-1", "team"),)
    (shared,) = await store.batch(
        ALICE, [Request(StoreMemory(category="fact", content="the team's fact"), places=team)]
    )
    await store.apply(ALICE, UpdateMemory(id=mine, content="alice's revised"), "u-1")
    bob_first = await store.apply(BOB, UpdateMemory(id=bobs, content="bob's revised"), "u-1")

    counted = await store.apply(ALICE, ForgetAllMemories(dry_run=True))
    assert (counted.memories, counted.replies, counted.dry_run) == (2, 1, True)
    assert await contents(store, ALICE) == ["alice's revised", "alice's second"]
    forgotten = await store.apply(ALICE, ForgetAllMemories())
    assert (forgotten.memories, forgotten.replies, forgotten.dry_run) == (2, 1, False)

    assert await contents(store, ALICE) == []
    assert await contents(store, BOB) == ["bob's revised"]
    assert isinstance(shared, Stored)
    (kept,) = await store.batch(ALICE, [Request(GetMemory(id=shared.id), places=team)])
    assert isinstance(kept, Memory) and kept.content == "the team's fact"
    with pytest.raises(ItemNotFound):  # applied again: the answer with its text is gone
        await store.apply(ALICE, UpdateMemory(id=mine, content="alice's revised"), "u-1")
    again = await store.apply(BOB, UpdateMemory(id=bobs, content="bob's revised"), "u-1")
    assert again == bob_first
    assert (await store.apply(ALICE, ForgetAllMemories())).memories == 0


async def test_a_failed_write_loses_no_access_counts(store: LongTermStore) -> None:
    memory_id = await put(store, ALICE, "looked at once")
    await search(store, ALICE, "looked")  # one access, noted for a later write
    with pytest.raises(ItemNotFound):
        await store.apply(ALICE, UpdateMemory(id="missing", content="x"))
    got = await store.apply(ALICE, GetMemory(id=memory_id))
    assert isinstance(got, Memory) and got.access_count == 2


async def test_a_nul_character_is_refused_on_postgresql_and_changes_nothing(
    store: LongTermStore,
) -> None:
    """JSON can carry ``\\u0000``, which PostgreSQL cannot store: there it is a typed
    ``bad-request`` (alone or in a batch), and the store goes on; SQLite keeps it."""
    text = "a NUL \x00 inside"
    kept = await put(store, ALICE, "kept as it was")
    if store.engine.name == "postgresql":
        with pytest.raises(BadRequest):
            await put(store, ALICE, text)
        outcomes = await store.batch(
            ALICE,
            [
                Request(StoreMemory(category="fact", content=text)),
                Request(StoreMemory(category="fact", content="stored beside it")),
            ],
        )
        assert isinstance(outcomes[0], BadRequest) and isinstance(outcomes[1], Stored)
        assert await contents(store, ALICE) == ["kept as it was", "stored beside it"]
    else:
        stored = await put(store, ALICE, text)
        got = await store.apply(ALICE, GetMemory(id=stored))
        assert isinstance(got, Memory) and got.content == text
    got = await store.apply(ALICE, GetMemory(id=kept))
    assert isinstance(got, Memory) and got.content == "kept as it was"


async def test_the_same_text_as_an_expired_memory_is_a_new_memory(store: LongTermStore) -> None:
    # it reinforced the expired one, answered deduplicated, and the purge took the store
    gone = await store.apply(ALICE, StoreMemory(category="fact", content="Door code 1234",
                                                ttl_seconds=0.2))  # fmt: skip
    await asyncio.sleep(0.5)
    alone = await store.apply(ALICE, StoreMemory(category="fact", content="Door code 1234"))
    (in_a_run,) = await store.batch(ALICE, [
        Request(StoreMemory(category="fact", content="Wifi is hunter2", ttl_seconds=0.2), None)
    ])  # fmt: skip
    await asyncio.sleep(0.5)
    run = await store.batch(ALICE, [
        Request(StoreMemory(category="fact", content=text), None)
        for text in ("Wifi is hunter2", "Something else")
    ])  # fmt: skip
    for before, after in ((gone, alone), (in_a_run, run[0])):
        assert isinstance(before, Stored) and isinstance(after, Stored)
        assert not after.deduplicated and after.id != before.id
    await store.purge_expired()
    listed = await store.apply(ALICE, ListMemories(category="fact"))
    assert isinstance(listed, MemoryList)
    assert {m.content for m in listed.memories} == {"Door code 1234", "Wifi is hunter2",
                                                     "Something else"}  # fmt: skip
