"""What a long-term memory carries beyond its text, on real SQLite files: a category chosen
when none is given, tags and metadata with the filters over them, scores and the search's
reasoning, versions and the audit of a deletion, expiry, forgetting by filter, and links
to work items found in its source.

The same features over XMPP, with the beads mirror, are in ``test_memory_details_e2e``.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from pydantic import ValidationError

from spade_memory.base_memory.store.imports import ImportMemory
from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.base_memory.work_items import WorkItems, WorkLink, beads_pattern
from spade_memory.protocol.errors import BadRequest, ItemNotFound
from spade_memory.protocol.limits import Limits
from spade_memory.protocol.memories import (
    DeleteMemory,
    ForgetMemories,
    GetMemory,
    ListMemories,
    MemoriesForgotten,
    MemoryHistory,
    MemoryHistoryOp,
    MemoryList,
    MemoryRefs,
    MemoryStatsOp,
    RecentMemories,
    SearchMemories,
    Stored,
    StoreMemory,
    UpdateMemory,
    base_memory_ops,
)
from spade_memory.protocol.ops import Place, Request, parse_op
from tests.support.stores import Location, everything, query

ALICE = "alice@localhost"
BOB = "bob@localhost"
PAST = datetime(2020, 1, 1, tzinfo=timezone.utc)


@pytest.fixture
async def store(location: Location) -> AsyncIterator[LongTermStore]:
    opened = await LongTermStore.open(location("memory.db"), limits=Limits(max_versions=3))
    yield opened
    await opened.close()


async def put(store: LongTermStore, content: str, owner: str = ALICE, **fields: Any) -> Stored:
    result = await store.apply(owner, StoreMemory(content=content, **fields))
    assert isinstance(result, Stored)
    return result


async def ids(store: LongTermStore, op: Any, owner: str = ALICE) -> set[str]:
    result = await store.apply(owner, op)
    assert isinstance(result, MemoryList)
    return {memory.id for memory in result.memories}


# -- classification ------------------------------------------------------------------


async def test_a_store_without_category_is_classified_and_a_given_one_wins(
    store: LongTermStore,
) -> None:
    liked = await put(store, "The user really prefers dark mode in every editor")
    assert liked.classified and liked.category == "preference"
    assert liked.category_confidence is not None and 0.25 < liked.category_confidence <= 1
    limit = await put(store, "I cannot send emails or access the internet")
    assert limit.classified and limit.category == "capability"
    given = await put(store, "The user really prefers dark mode in every editor", category="fact")
    assert given.category == "fact" and not given.classified
    assert given.category_confidence is None and given.id != liked.id  # another category
    memory = await store.apply(ALICE, GetMemory(id=liked.id))
    assert memory.category == "preference"
    again = await put(store, "the user REALLY prefers dark mode in every editor")
    assert again.deduplicated and again.id == liked.id  # classified alike, so the same memory


# -- tags, metadata, filters, scores ---------------------------------------------------


async def test_tag_and_metadata_filters_return_exactly_the_matching_memories(
    store: LongTermStore,
) -> None:
    a = await put(store, "deploy with blue green", category="fact", tags=["ops", "deploy"],
                  metadata={"team": "core", "level": 2, "urgent": True})  # fmt: skip
    web = {"team": "web", "level": 2.0, "urgent": False, "owner": None}
    b = await put(store, "deploy on fridays never", category="pattern", tags=["deploy"],
                  metadata=web)  # fmt: skip
    c = await put(store, "deploy notes kept in the wiki", category="fact", tags=["docs"],
                  metadata={"team": "core", "level": "2"})  # fmt: skip
    await put(store, "deploy alone", category="fact", owner=BOB, tags=["deploy"])
    assert await ids(store, RecentMemories(tags_any=["deploy", "docs"])) == {a.id, b.id, c.id}
    assert await ids(store, RecentMemories(tags_any=["ops"])) == {a.id}
    assert await ids(store, RecentMemories(tags_all=["deploy", "ops"])) == {a.id}
    assert await ids(store, RecentMemories(tags_all=["deploy", "docs"])) == set()
    assert await ids(store, RecentMemories(metadata_equals={"team": "core"})) == {a.id, c.id}
    assert await ids(store, RecentMemories(metadata_equals={"level": 2})) == {a.id, b.id}
    assert await ids(store, RecentMemories(metadata_equals={"level": "2"})) == {c.id}
    assert await ids(store, RecentMemories(metadata_equals={"urgent": True})) == {a.id}
    assert await ids(store, RecentMemories(metadata_equals={"urgent": False})) == {b.id}
    assert await ids(store, RecentMemories(metadata_equals={"owner": None})) == {b.id}
    both = RecentMemories(metadata_equals={"team": "core"}, tags_any=["deploy"])
    assert await ids(store, both) == {a.id}
    assert await ids(store, ListMemories(category="fact", tags_any=["deploy"])) == {a.id}
    assert await ids(store, SearchMemories(query="deploy", tags_any=["deploy"])) == {a.id, b.id}
    found = await store.apply(
        ALICE, SearchMemories(query="deploy", metadata_equals={"team": "web"})
    )
    assert [m.id for m in found.memories] == [b.id]
    memory = found.memories[0]
    assert memory.tags == ["deploy"] and memory.metadata["team"] == "web"


async def test_date_filters_use_created_and_accessed_times(store: LongTermStore) -> None:
    day = 86_400.0
    now = time.time()
    stored = {}
    for name, created, accessed in (("old", 30, 20), ("middle", 10, 1), ("new", 1, 1)):
        op = ImportMemory(
            id=name, category="fact", content=f"{name} memory", confidence=1.0,
            created_at=now - created * day, last_accessed=now - accessed * day, access_count=0,
        )  # fmt: skip
        stored[name] = (await store.apply(ALICE, op)).id
    ago = lambda days: datetime.now(timezone.utc) - timedelta(days=days)  # noqa: E731
    # first by access: every read below counts as one (and moves last_accessed to now)
    assert await ids(store, RecentMemories(accessed_before=ago(5))) == {"old"}
    assert await ids(store, SearchMemories(query="memory", accessed_after=ago(5))) == {
        "middle", "new",
    }  # fmt: skip
    assert await ids(store, RecentMemories(accessed_before=ago(5))) == set()  # "old" was read
    assert await ids(store, RecentMemories(created_before=ago(5))) == {"old", "middle"}
    assert await ids(store, RecentMemories(created_after=ago(5))) == {"new"}
    window = RecentMemories(created_after=ago(20), created_before=ago(5))
    assert await ids(store, window) == {"middle"}


async def test_the_authors_filter_selects_who_stored_a_memory_in_a_space(
    store: LongTermStore,
) -> None:
    """A shared space's memories by their author, in every read that filters (and in a
    forget): the author is the authenticated sender that stored it."""
    team = Place("team-key", "team", "writer")

    async def in_team(owner: str, op: Any) -> Any:
        (outcome,) = await store.batch(owner, [Request(op, None, (team,))])
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    for owner, content in ((ALICE, "alice's deploy note"), (BOB, "bob's deploy note"),
                           (BOB, "bob's second deploy note")):  # fmt: skip
        await in_team(owner, StoreMemory(category="fact", content=content, space="team"))

    async def authors(op: Any) -> list[str]:
        return sorted(m.author for m in (await in_team(ALICE, op)).memories)

    assert await authors(RecentMemories(space="team", authors=[BOB])) == [BOB, BOB]
    assert await authors(SearchMemories(query="deploy", space="team", authors=[ALICE])) == [ALICE]
    listed = ListMemories(category="fact", space="team", authors=[ALICE, BOB])
    assert await authors(listed) == [ALICE, BOB, BOB]
    assert await authors(RecentMemories(space="team", authors=["carol@localhost"])) == []
    counted = await store.batch(BOB, [Request(ForgetMemories(space="team", authors=[BOB]),
                                               None, (team,))])  # fmt: skip
    assert counted[0].count == 2 and counted[0].dry_run  # type: ignore[union-attr]
    # a writer forgets only its own: another author's count nothing
    assert (await in_team(ALICE, ForgetMemories(space="team", authors=[BOB]))).count == 0
    with pytest.raises(ValidationError):
        RecentMemories(authors=[])


async def test_every_search_result_has_a_score_best_first_and_a_reasoning(
    store: LongTermStore,
) -> None:
    await put(store, "sqlite wal mode makes readers wait less", category="fact")
    await put(store, "sqlite is a small database", category="fact")
    await put(store, "wal mode needs a busy timeout in sqlite under wal load", category="fact")
    for i in range(5):
        await put(store, f"unrelated memory number {i}", category="fact")
    found = await store.apply(ALICE, SearchMemories(query="sqlite wal mode"))
    scores = [m.score for m in found.memories]
    assert len(scores) == 3 and all(s is not None for s in scores)
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    reasoning = found.reasoning
    assert reasoning is not None and reasoning.strategy == "bm25"
    assert not reasoning.dense_available and reasoning.mode == "semantic"
    assert reasoning.word_candidates == 3 and reasoning.returned == 3 and not reasoning.filtered
    narrowed = await store.apply(ALICE, SearchMemories(query="sqlite", category="pattern"))
    assert narrowed.reasoning is not None and narrowed.reasoning.filtered
    newest = await store.apply(ALICE, SearchMemories(query="x", mode="session_recovery", limit=2))
    assert newest.reasoning is not None and newest.reasoning.strategy == "recency"
    assert newest.reasoning.returned == 2 and all(m.score is None for m in newest.memories)
    listed = await store.apply(ALICE, RecentMemories())
    assert listed.reasoning is None and all(m.score is None for m in listed.memories)


# -- history ------------------------------------------------------------------------


async def test_updates_keep_their_versions_bounded_and_a_delete_keeps_only_an_audit(
    store: LongTermStore, location: Location
) -> None:
    stored = await put(store, "first text", category="fact", tags=["a"])
    await store.apply(ALICE, UpdateMemory(id=stored.id, content="second text"))
    await store.apply(ALICE, UpdateMemory(id=stored.id, tags=["b"], confidence=0.5))
    history = await store.apply(ALICE, MemoryHistoryOp(id=stored.id))
    assert isinstance(history, MemoryHistory) and history.deleted is None
    assert [(v.version, v.content, v.tags) for v in history.versions] == [
        (1, "first text", ["a"]), (2, "second text", ["a"]), (3, "second text", ["b"]),
    ]  # fmt: skip
    assert [v.changed_by for v in history.versions] == [ALICE] * 3
    times = [v.changed_at for v in history.versions]
    assert times == sorted(times)
    for n in range(3):  # max_versions=3: the oldest go first
        await store.apply(ALICE, UpdateMemory(id=stored.id, content=f"text {n}"))
    history = await store.apply(ALICE, MemoryHistoryOp(id=stored.id))
    assert [v.version for v in history.versions] == [4, 5, 6] and history.dropped == 3
    assert (await store.apply(ALICE, GetMemory(id=stored.id))).version == 6
    with pytest.raises(ItemNotFound):  # bob reads only his own personal space
        await store.apply(BOB, MemoryHistoryOp(id=stored.id))

    await store.apply(ALICE, DeleteMemory(id=stored.id))
    history = await store.apply(ALICE, MemoryHistoryOp(id=stored.id))
    assert history.versions == [] and history.deleted is not None
    assert history.deleted.deleted_by == ALICE and history.deleted.reason is None
    dump = await everything(location("memory.db"))  # nothing of what it said is kept
    assert "text 2" not in dump and "second text" not in dump and "first text" not in dump
    with pytest.raises(ItemNotFound):
        await store.apply(ALICE, MemoryHistoryOp(id="never-there"))


# -- expiry and forgetting ----------------------------------------------------------


async def test_an_expired_memory_is_invisible_at_once_and_purged_with_its_reason(
    store: LongTermStore, location: Location
) -> None:
    gone = await put(store, "the door code is 4411", category="fact", expires_at=PAST,
                     tags=["code"], source="bd-42")  # fmt: skip
    later = await put(store, "the door code changes monthly", category="fact", ttl_seconds=3600)
    kept = await put(store, "the door is blue", category="fact")
    visible = {later.id, kept.id}
    assert await ids(store, RecentMemories()) == visible
    assert await ids(store, ListMemories(category="fact")) == visible
    assert await ids(store, SearchMemories(query="door code")) == visible
    assert await ids(store, SearchMemories(query="x", mode="session_recovery")) == visible
    assert await ids(store, RecentMemories(tags_any=["code"])) == set()
    assert await ids(store, MemoryRefs(work_id="bd-42")) == set()
    with pytest.raises(ItemNotFound):
        await store.apply(ALICE, GetMemory(id=gone.id))
    assert (await store.apply(ALICE, MemoryStatsOp())).total_memories == 2
    remaining = (await store.apply(ALICE, GetMemory(id=later.id))).expires_at
    assert remaining is not None and 3500 < remaining.timestamp() - time.time() <= 3600

    assert await store.purge_expired() == 1
    assert await store.purge_expired() == 0
    feed = await store.changes_since(0)
    assert [(c.kind, c.reason) for c in feed.changes if c.memory_id == gone.id] == [
        ("stored", None), ("deleted", "expired"),
    ]  # fmt: skip
    audit = await store.apply(ALICE, MemoryHistoryOp(id=gone.id))
    assert audit.deleted is not None and audit.deleted.reason == "expired"
    assert await query(location("memory.db"), "SELECT COUNT(*) FROM memories") == [(2,)]
    assert await query(location("memory.db"), "SELECT COUNT(*) FROM memory_links") == [(0,)]


async def test_expiry_survives_a_restart(location: Location) -> None:
    store = await LongTermStore.open(location("m.db"))
    stored = await put(store, "short lived", category="fact", ttl_seconds=3600)
    await store.close()
    # its hour passes while it is closed
    await query(location("m.db"), "UPDATE memories SET expires_at = ?", time.time() - 1)
    store = await LongTermStore.open(location("m.db"))
    try:
        assert await ids(store, RecentMemories()) == set()
        with pytest.raises(ItemNotFound):
            await store.apply(ALICE, GetMemory(id=stored.id))
    finally:
        await store.close()


async def test_forget_by_filter_counts_first_then_deletes_only_what_matched(
    store: LongTermStore,
) -> None:
    old = await store.apply(ALICE, ImportMemory(
        id="old", category="pattern", content="old habit", confidence=1.0,
        created_at=time.time() - 90 * 86_400, last_accessed=time.time() - 90 * 86_400,
        access_count=0,
    ))  # fmt: skip
    tagged = await put(store, "scratch note", category="fact", tags=["scratch"])
    kept = await put(store, "keep me", category="fact", tags=["keep"])
    bobs = await put(store, "bob's scratch", category="fact", owner=BOB, tags=["scratch"])
    month_ago = datetime.now(timezone.utc) - timedelta(days=30)

    dry = await store.apply(ALICE, ForgetMemories(tags_any=["scratch"]))
    assert isinstance(dry, MemoriesForgotten) and dry.dry_run and dry.ids == [tagged.id]
    assert await ids(store, RecentMemories()) == {old.id, tagged.id, kept.id}  # counted only
    stale = ForgetMemories(created_before=month_ago, dry_run=False)
    assert (await store.apply(ALICE, stale)).ids == [old.id]
    idle = ForgetMemories(accessed_before=month_ago, category="pattern")
    assert (await store.apply(ALICE, idle)).count == 0
    done = await store.apply(ALICE, ForgetMemories(tags_any=["scratch"], dry_run=False))
    assert done.count == 1 and not done.dry_run
    assert await ids(store, RecentMemories()) == {kept.id}
    assert await ids(store, RecentMemories(), owner=BOB) == {bobs.id}  # bob's untouched
    feed = await store.changes_since(0)
    assert [c.reason for c in feed.changes if c.kind == "deleted"] == ["forgotten", "forgotten"]


# -- links to work items -------------------------------------------------------------


async def test_a_source_with_a_work_item_links_the_memory_and_one_without_links_nothing(
    location: Location,
) -> None:
    heard: list[WorkLink] = []
    patterns = (*WorkItems().patterns, beads_pattern("buh"))
    store = await LongTermStore.open(
        location("m.db"), work_items=WorkItems(patterns, notify=heard.extend)
    )
    try:
        plan = await put(store, "the plan needs a rollback step", category="fact",
                         source="docs/work/active/E2-241/plans/PLAN.md")  # fmt: skip
        assert plan.work_items == ["E2-241"]
        bead = await put(store, "flaky test seen", category="pattern",
                         source="found while fixing buh-uxrm and bd-42 (see PROJ-7)")  # fmt: skip
        assert bead.work_items == ["buh-uxrm", "bd-42", "PROJ-7"]
        plain = await put(store, "a long-term plan", category="fact",
                          source="https://example.com/notes/long-term")  # fmt: skip
        assert plain.work_items == []
        assert [(link.work_id, link.memory_id, link.author) for link in heard] == [
            ("E2-241", plan.id, ALICE), ("buh-uxrm", bead.id, ALICE),
            ("bd-42", bead.id, ALICE), ("PROJ-7", bead.id, ALICE),
        ]  # fmt: skip
        assert await ids(store, MemoryRefs(work_id="E2-241")) == {plan.id}
        assert await ids(store, MemoryRefs(work_id="bd-42")) == {bead.id}
        assert await ids(store, MemoryRefs(work_id="bd-42"), owner=BOB) == set()
        moved = await store.apply(ALICE, UpdateMemory(id=plan.id, source="see bd-42"))
        assert moved.work_items == ["bd-42"] and moved.source == "see bd-42"
        assert await ids(store, MemoryRefs(work_id="E2-241")) == set()
        assert await ids(store, MemoryRefs(work_id="bd-42")) == {plan.id, bead.id}
        await store.apply(ALICE, DeleteMemory(id=bead.id))
        assert await ids(store, MemoryRefs(work_id="bd-42")) == {plan.id}
    finally:
        await store.close()


# -- bad input -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        {"op": "store_memory", "content": "x", "ttl_seconds": -5},
        {"op": "store_memory", "content": "x", "ttl_seconds": 0},
        {"op": "store_memory", "content": "x", "expires_at": "next tuesday"},
        {"op": "store_memory", "content": "x", "expires_at": "2030-01-01T00:00:00"},  # naive
        {"op": "store_memory", "content": "x", "tags": [f"t{i}" for i in range(10_000)]},
        {"op": "store_memory", "content": "x", "tags": ["two words"]},
        {"op": "store_memory", "content": "x", "tags": ["agent:spoof@localhost"]},
        {"op": "store_memory", "content": "x", "metadata": {"blob": "x" * 1_000_000}},
        {"op": "store_memory", "content": "x", "metadata": {"spade_memory": {}}},
        {"op": "store_memory", "content": "x", "metadata": {'a"b': 1}},
        {"op": "store_memory", "content": "x", "source": ""},
        {"op": "recent_memories", "created_after": "yesterday"},
        {"op": "recent_memories", "metadata_equals": {"k": [1, 2]}},
        {"op": "recent_memories", "metadata_equals": {}},
        {"op": "forget_memories", "dry_run": False},
        {"op": "update_memory", "id": "x", "ttl_seconds": -1},
        {"op": "memory_refs", "work_id": ""},
    ],
)
async def test_bad_details_are_refused_and_change_nothing(
    store: LongTermStore, body: dict[str, Any]
) -> None:
    await put(store, "already here", category="fact")
    with pytest.raises(BadRequest):
        parse_op(base_memory_ops, json.dumps(body))
    assert len((await store.apply(ALICE, RecentMemories())).memories) == 1


def test_an_unknown_op_is_named_with_the_close_ones_not_every_op() -> None:
    """A peer's mistyped op: one sentence with its name and the close ones (it was
    pydantic's list of all thirty tags; issue 79)."""
    with pytest.raises(BadRequest) as mistyped:
        parse_op(base_memory_ops, json.dumps({"op": "serch_memories", "query": "x"}))
    assert mistyped.value.text.startswith(
        "unknown op 'serch_memories'; did you mean 'search_memories'"
    )
    assert "`spade-memory schema` lists them" in mistyped.value.text
    assert "store_memory" not in mistyped.value.text and "Input tag" not in mistyped.value.text
    with pytest.raises(BadRequest) as unlike:
        parse_op(base_memory_ops, json.dumps({"op": "zzz"}))
    assert unlike.value.text == "unknown op 'zzz' (`spade-memory schema` lists them)"
