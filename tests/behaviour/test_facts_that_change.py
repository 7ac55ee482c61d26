"""Facts that change, on real SQLite files and PostgreSQL: a memory's validity, reads at
another moment (``as_of``, ``known_at``), supersedes named or found, their chains across
a restart, and the roles of a space.

Over XMPP (client, tools, shell) they are in ``test_facts_that_change_e2e``.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import Counter
from datetime import datetime, timedelta, timezone
from importlib import resources
from typing import Any

import pytest

from benchmarks.supersede import hostile_texts
from spade_memory.base_memory.facts.duplicates import (
    COMMON,
    MOST_COMPARED_EACH,
    MOST_WALKED,
    Candidate,
    Effort,
    Stopped,
    merges,
)
from spade_memory.base_memory.store.journal import SpaceEvent
from spade_memory.base_memory.store.listeners import Listeners
from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.base_memory.store.tables import add_validity, key_subjects
from spade_memory.protocol.consolidation import Consolidated, ConsolidateMemories
from spade_memory.protocol.errors import BadRequest, Busy, Conflict, ItemNotFound, NotAuthorized
from spade_memory.protocol.memories import (
    DeleteMemory,
    GetMemory,
    ListMemories,
    Memory,
    MemoryHistory,
    MemoryHistoryOp,
    MemoryList,
    MemoryStatsOp,
    RecentMemories,
    RestoreMemory,
    SearchMemories,
    Stored,
    StoreMemory,
    SupersedeMemory,
    UpdateMemory,
)
from spade_memory.protocol.ops import Place, Request
from tests.support.stores import Location, query, set_back

ALICE = "alice@localhost"
BOB = "bob@localhost"
CAROL = "carol@localhost"
NOW = datetime.now(timezone.utc)


async def put(store: LongTermStore, content: str, owner: str = ALICE, **fields: Any) -> Stored:
    result = await store.apply(owner, StoreMemory(content=content, category="fact", **fields))
    assert isinstance(result, Stored)
    return result


async def found(store: LongTermStore, op: Any, owner: str = ALICE) -> list[str]:
    result = await store.apply(owner, op)
    assert isinstance(result, MemoryList)
    return [memory.id for memory in result.memories]


async def test_validity_decides_what_is_read_now_and_as_of_another_time(
    store: LongTermStore,
) -> None:
    past = await put(
        store,
        "The office wifi password was hunter2",
        valid_from=NOW - timedelta(days=60),
        valid_to=NOW - timedelta(days=30),
    )
    future = await put(store, "The office wifi password will be correcthorse",
                       valid_from=NOW + timedelta(days=30))  # fmt: skip
    always = await put(store, "The office wifi network is called Guest")
    search = SearchMemories(query="office wifi")
    assert await found(store, search) == [always.id]
    assert set(await found(store, RecentMemories())) == {always.id}
    assert await found(store, ListMemories(category="fact")) == [always.id]
    then = NOW - timedelta(days=45)
    assert set(await found(store, search.model_copy(update={"as_of": then}))) == {
        past.id, always.id,
    }  # fmt: skip
    later = NOW + timedelta(days=31)
    assert set(await found(store, RecentMemories(as_of=later))) == {future.id, always.id}
    with pytest.raises(ItemNotFound, match="not valid at that time"):
        await store.apply(ALICE, GetMemory(id=past.id))
    memory = await store.apply(ALICE, GetMemory(id=past.id, as_of=then))
    assert memory.valid_from is not None and memory.valid_to is not None
    assert abs((memory.valid_to - (NOW - timedelta(days=30))).total_seconds()) < 0.01
    with pytest.raises(ValueError, match="valid_to must come after valid_from"):
        StoreMemory(content="x", valid_from=NOW, valid_to=NOW)


async def test_a_named_supersede_closes_the_old_memory_and_links_both_ways(
    location: Location,
) -> None:
    store = await LongTermStore.open(location("memory.db"))
    try:
        chain = await _supersede_twice(store)
    finally:
        await store.close()
    reopened = await LongTermStore.open(location("memory.db"))  # the chain outlives a restart
    try:
        await _read_the_chain(reopened, chain)
    finally:
        await reopened.close()


async def _supersede_twice(store: LongTermStore) -> dict[str, Any]:
    old = await put(store, "Deploys go out on Tuesdays")
    before = datetime.now(timezone.utc)
    await asyncio.sleep(0.01)
    new = await put(store, "Deploys go out on Thursdays", supersedes=old.id)
    assert new.supersedes == old.id and not new.deduplicated
    assert await found(store, SearchMemories(query="deploys")) == [new.id]
    with pytest.raises(ItemNotFound, match=f"superseded by '{new.id}'"):
        await store.apply(ALICE, GetMemory(id=old.id))
    was = await store.apply(ALICE, GetMemory(id=old.id, as_of=before))
    assert was.superseded_by == new.id and was.content == "Deploys go out on Tuesdays"
    current = await store.apply(ALICE, GetMemory(id=new.id))
    assert current.supersedes == old.id and current.valid_from == was.valid_to
    third = await store.apply(ALICE, SupersedeMemory(id=new.id, content="Deploys go out daily"))
    assert third.supersedes == new.id and third.category == "fact"  # the old one's category
    with pytest.raises(Conflict, match="already superseded"):
        await store.apply(ALICE, SupersedeMemory(id=old.id, content="Deploys go out weekly"))
    return {"old": old.id, "new": new.id, "third": third.id, "before": before}


async def _read_the_chain(store: LongTermStore, chain: dict[str, Any]) -> None:
    old, new, third = chain["old"], chain["new"], chain["third"]
    first = await store.apply(ALICE, MemoryHistoryOp(id=old))
    assert isinstance(first, MemoryHistory)
    assert first.superseded_by == [new, third] and first.supersedes == []
    last = await store.apply(ALICE, MemoryHistoryOp(id=third))
    assert last.supersedes == [new, old] and last.superseded_by == []
    assert await found(store, SearchMemories(query="deploys")) == [third]
    then = SearchMemories(query="deploys", as_of=chain["before"])
    assert await found(store, then) == [old]


async def test_known_at_answers_with_what_the_store_held_then(store: LongTermStore) -> None:
    old = await put(store, "The build server runs on Ubuntu 20.04")
    await asyncio.sleep(0.01)
    held = datetime.now(timezone.utc)
    await asyncio.sleep(0.01)
    new = await put(store, "The build server now runs on Ubuntu 22.04")
    assert new.supersedes == old.id  # found without being told
    query = SearchMemories(query="build server")
    assert await found(store, query) == [new.id]
    assert await found(store, query.model_copy(update={"known_at": held})) == [old.id]
    later = datetime.now(timezone.utc) + timedelta(seconds=1)
    assert await found(store, query.model_copy(update={"known_at": later})) == [new.id]
    # what was true at ``held``, as the store knows it now: the old one
    assert await found(store, query.model_copy(update={"as_of": held})) == [old.id]
    stale = await store.apply(ALICE, GetMemory(id=old.id, known_at=held))
    assert stale.id == old.id


@pytest.mark.parametrize(
    ("old", "new", "superseded", "reported"),
    [
        ("Alice lives in Paris.", "Alice moved to Berlin.", True, False),
        ("Bob prefers tea.", "Bob now prefers coffee.", True, False),
        ("Bob prefers tea.", "Bob prefers coffee instead.", True, False),
        ("Bob prefers tea.", "Bob prefers coffee.", False, True),  # both may hold: reported
        # the memories guide's two preferences: a length is no language (issue 76)
        ("The user prefers answers in Spanish", "The user prefers short answers", False, True),
        ("Carol works at Acme.", "Carol joined Globex.", True, False),
        ("The staging API lives on port 8443.", "The staging API lives on port 9443.", True, False),
        ("Dan likes tea.", "Dan likes coffee.", False, False),  # both may be true
        ("The team uses Jira.", "The team uses Slack.", False, True),  # reported only
        ("He lives in Paris.", "He lives in Rome.", False, True),  # who is "he"?
        ("Erin lives in Paris.", "Erin lives in Paris, France.", False, False),
    ],
)
async def test_a_store_finds_the_memory_it_replaces(
    store: LongTermStore, old: str, new: str, superseded: bool, reported: bool
) -> None:
    first = await put(store, old)
    second = await put(store, new)
    assert (second.supersedes == first.id) is superseded
    assert [c.id for c in second.conflicts] == ([first.id] if reported else [])
    assert set(await found(store, RecentMemories())) == (
        {second.id} if superseded else {first.id, second.id}
    )


async def test_conflicts_report_and_off_leave_the_old_memory_current(
    store: LongTermStore,
) -> None:
    old = await put(store, "Frank lives in Oslo.")
    reported = await put(store, "Frank moved to Bergen.", conflicts="report")
    assert reported.supersedes is None
    (conflict,) = reported.conflicts
    assert conflict.id == old.id and conflict.confident
    assert (conflict.was, conflict.now, conflict.subject) == ("oslo", "bergen", "frank · lives in")
    quiet = await put(store, "Frank moved to Tromsø.", conflicts="off")
    assert quiet.supersedes is None and quiet.conflicts == []
    assert len(await found(store, RecentMemories())) == 3
    other = await put(store, "Frank moved to Oslo again.", owner=BOB)  # another owner's space
    assert other.supersedes is None and other.conflicts == []


async def test_the_same_words_again_after_a_supersede_are_a_new_current_memory(
    store: LongTermStore,
) -> None:
    tea = await put(store, "Gina lives in Oslo.")
    coffee = await put(store, "Gina moved to Bergen.")
    assert coffee.supersedes == tea.id
    back = await put(store, "Gina lives in Oslo.")
    assert not back.deduplicated and back.id != tea.id and back.supersedes == coffee.id
    assert await found(store, RecentMemories()) == [back.id]


async def test_deleting_the_newer_memory_makes_the_older_current_again(
    store: LongTermStore,
) -> None:
    old = await put(store, "Hugo works at Initech.")
    new = await put(store, "Hugo joined Hooli.")
    assert new.supersedes == old.id
    await store.apply(ALICE, DeleteMemory(id=new.id))
    memory = await store.apply(ALICE, GetMemory(id=old.id))
    assert memory.superseded_by is None and memory.valid_to is None
    history = await store.apply(ALICE, MemoryHistoryOp(id=old.id))
    assert history.superseded_by == []


async def test_a_supersede_cannot_start_before_the_memory_it_replaces(
    store: LongTermStore,
) -> None:
    old = await put(store, "Ines lives in Lyon.", valid_from=NOW - timedelta(days=10))
    with pytest.raises(BadRequest, match="valid_from must come after"):
        await put(store, "Ines lives in Nice.", supersedes=old.id,
                  valid_from=NOW - timedelta(days=20))  # fmt: skip
    assert (await store.apply(ALICE, GetMemory(id=old.id))).superseded_by is None


async def test_history_told_out_of_order_is_reported_not_superseded(
    store: LongTermStore,
) -> None:
    newer = await put(store, "Jo lives in Oslo.", valid_from=NOW - timedelta(days=10))
    older = await put(store, "Jo lives in Bergen.", valid_from=NOW - timedelta(days=400))
    assert older.supersedes is None and [c.id for c in older.conflicts] == [newer.id]


async def test_an_update_may_end_a_memory_s_validity(store: LongTermStore) -> None:
    memory = await put(store, "The hotline is staffed on weekends")
    ended = NOW - timedelta(seconds=1)
    await store.apply(ALICE, UpdateMemory(id=memory.id, valid_to=ended))
    assert await found(store, RecentMemories()) == []
    assert await found(store, RecentMemories(as_of=NOW - timedelta(days=1))) == [memory.id]


async def in_space(
    store: LongTermStore, sender: str, op: Any, role: str
) -> Stored | Memory | MemoryList:
    place = Place("space-1", name="team", role=role)
    (outcome,) = await store.batch(sender, [Request(op, places=(place,))])
    if isinstance(outcome, Exception):
        raise outcome
    return outcome  # type: ignore[return-value]


async def test_in_a_space_a_writer_supersedes_its_own_and_only_reports_another_s(
    store: LongTermStore,
) -> None:
    bobs = await in_space(store, BOB, StoreMemory(content="The staging host is s1.example.",
                                                  category="fact"), "writer")  # fmt: skip
    assert isinstance(bobs, Stored)
    mine = await in_space(store, ALICE, StoreMemory(content="The staging host is s2.example.",
                                                    category="fact"), "writer")  # fmt: skip
    assert isinstance(mine, Stored)
    assert mine.supersedes is None and [c.id for c in mine.conflicts] == [bobs.id]
    with pytest.raises(NotAuthorized):
        await in_space(store, ALICE, SupersedeMemory(id=bobs.id, content="s3"), "writer")
    admin = await in_space(store, "carol@localhost", StoreMemory(
        content="The staging host is s4.example.", category="fact"), "admin")  # fmt: skip
    assert isinstance(admin, Stored) and admin.supersedes in (bobs.id, mine.id)
    assert {c.id for c in admin.conflicts} | {admin.supersedes} == {bobs.id, mine.id}


def held_out_pairs() -> list[dict[str, Any]]:
    text = resources.files("spade_memory.base_memory.facts").joinpath("labelled_pairs.jsonl")
    pairs = [json.loads(line) for line in text.read_text().splitlines() if line]
    return [pair for pair in pairs if pair["half"] == "held_out"]


async def test_on_the_held_out_pairs_the_store_supersedes_precisely(
    store: LongTermStore,
) -> None:
    """Each held-out pair stored by its own agent, through the store: what it supersedes
    on its own is right at least nine times in ten, and seven updates in ten are found
    (superseded when sure, reported otherwise)."""
    right = said = relevant = found = 0
    for number, pair in enumerate(held_out_pairs()):
        owner = f"agent{number}@localhost"
        old = await put(store, pair["old"], owner=owner)
        new = await put(store, pair["new"], owner=owner)
        superseded = new.supersedes == old.id
        reported = old.id in {conflict.id for conflict in new.conflicts}
        said += superseded
        relevant += pair["supersedes"]
        right += superseded and pair["supersedes"]
        found += (superseded or reported) and pair["supersedes"]
    assert relevant >= 40 and right / said >= 0.9 and found / relevant >= 0.7


async def test_consolidation_merges_the_same_fact_in_other_words(store: LongTermStore) -> None:
    kept = await put(store, "Alice lives in Paris.")
    for _ in range(3):
        await store.apply(ALICE, GetMemory(id=kept.id))  # the most used is kept
    twin = await put(store, "Alice resides in Paris.", source="chat-12")
    reworded = await put(store, "The nightly backup runs at 2am on the NAS")
    again = await put(store, "the nightly backup runs on the NAS at 2am")
    other = await put(store, "The weekly backup runs at 3am on the NAS")  # another fact
    await store.flush_accesses()
    before = datetime.now(timezone.utc)

    planned = await store.apply(ALICE, ConsolidateMemories())
    assert isinstance(planned, Consolidated) and planned.dry_run and planned.compared == 5
    groups = {group.kept: set(group.merged) for group in planned.merges}
    assert groups == {kept.id: {twin.id}, reworded.id: {again.id}}
    look = RecentMemories(count_access=False)
    assert len(await found(store, look)) == 5  # a dry run changes nothing

    done = await store.apply(ALICE, ConsolidateMemories(dry_run=False))
    assert done.merged == 2 and done.superseded == 2 and done.longest_chain == 2
    assert set(await found(store, look)) == {kept.id, reworded.id, other.id}
    merged = await store.apply(ALICE, GetMemory(id=kept.id, count_access=False))
    assert merged.access_count == 3 and merged.source == "chat-12"
    history = await store.apply(ALICE, MemoryHistoryOp(id=kept.id))
    assert history.merged == [twin.id]
    assert (await store.apply(ALICE, GetMemory(id=twin.id, as_of=before))).superseded_by == kept.id
    stats = await store.apply(ALICE, MemoryStatsOp())
    assert (stats.total_memories, stats.superseded_memories, stats.merged_memories) == (3, 2, 2)
    assert (await store.apply(ALICE, ConsolidateMemories(dry_run=False))).merged == 0


async def test_consolidation_leaves_a_memory_changed_since_its_plan(store: LongTermStore) -> None:
    # the plan compares texts before the batch: an update before it in the same batch
    # made the memory another fact, which was then merged away
    kept = await put(store, "The deploy happens every Friday at noon.")
    twin = await put(store, "the deploy happens every friday at noon!")
    update = UpdateMemory(id=twin.id, content="The database backup runs every Sunday night.")
    outcomes = await store.batch(ALICE, [
        Request(update, None), Request(ConsolidateMemories(dry_run=False), None),
    ])  # fmt: skip
    assert isinstance(outcomes[1], Consolidated) and outcomes[1].merged == 0
    assert set(await found(store, RecentMemories(count_access=False))) == {kept.id, twin.id}
    assert (await store.apply(ALICE, ConsolidateMemories(dry_run=False))).merged == 0


async def test_a_delete_leaves_what_it_replaced_current_or_replaced_by_its_successor(
    store: LongTermStore,
) -> None:
    # "by" gave the successor no start of its own: deleting it left the old one closed
    berlin = await put(store, "The office is in Berlin.", conflicts="off")
    paris = await put(store, "The office moved to Paris.", conflicts="off")
    await store.apply(ALICE, SupersedeMemory(id=berlin.id, by=paris.id))
    await store.apply(ALICE, DeleteMemory(id=paris.id))
    current = RecentMemories(count_access=False)
    assert await found(store, current) == [berlin.id]
    # the middle of a chain: the first is replaced by the last, not current again
    pizzeria = await put(store, "Team lunch is at the pizzeria.", conflicts="off")
    sushi = await store.apply(
        ALICE, SupersedeMemory(id=pizzeria.id, content="Team lunch is sushi.")
    )
    tacos = await store.apply(ALICE, SupersedeMemory(id=sushi.id, content="Team lunch is tacos."))
    await store.apply(ALICE, DeleteMemory(id=sushi.id))
    assert set(await found(store, current)) == {berlin.id, tacos.id}
    last = await store.apply(ALICE, GetMemory(id=tacos.id, count_access=False))
    assert last.supersedes == pizzeria.id
    # what consolidation merged into a memory deleted since is current again
    kept = await put(store, "The deploy happens every Friday at noon.", conflicts="off")
    twin = await put(store, "the deploy happens every friday at noon!", conflicts="off")
    merged = await store.apply(ALICE, ConsolidateMemories(dry_run=False))
    assert merged.merged == 1
    (merged_away,) = {kept.id, twin.id} - set(await found(store, current))
    await store.apply(ALICE, DeleteMemory(id=({kept.id, twin.id} - {merged_away}).pop()))
    assert merged_away in await found(store, current)


async def test_consolidating_a_space_takes_an_admin(store: LongTermStore) -> None:
    with pytest.raises(NotAuthorized, match="takes an admin"):
        await in_space(store, BOB, ConsolidateMemories(), "writer")
    assert isinstance(await in_space(store, BOB, ConsolidateMemories(), "admin"), Consolidated)


async def test_one_consolidation_at_a_time_per_sender_and_two_in_all(
    store: LongTermStore,
) -> None:
    """Passes compare on one thread: each one under way holds a serving slot, so a
    sender's second, or a third in all, is answered ``Busy`` (its client asks again)."""
    for n in range(3):
        await put(store, f"The deploy checklist has step {n}")
    first = asyncio.create_task(store.apply(ALICE, ConsolidateMemories()))
    await asyncio.sleep(0)  # the first is under way: its plan reads the store
    with pytest.raises(Busy, match="one at a time") as refused:
        await store.apply(ALICE, ConsolidateMemories())
    assert refused.value.retry_after > 0
    second = asyncio.create_task(in_space(store, BOB, ConsolidateMemories(), "admin"))
    await asyncio.sleep(0)
    with pytest.raises(Busy, match="2 consolidations are under way"):
        await store.apply(CAROL, ConsolidateMemories(dry_run=False))
    assert (await store.apply(CAROL, MemoryStatsOp())).total_memories == 0  # others served
    assert isinstance(await first, Consolidated) and isinstance(await second, Consolidated)
    assert isinstance(await store.apply(ALICE, ConsolidateMemories()), Consolidated)


async def test_the_background_consolidates_a_space_once_its_writes_pause(
    location: Location,
) -> None:
    store = await LongTermStore.open(location("memory.db"), consolidate_after=0.2)
    try:
        first = await put(store, "Bruno works at Initech.")
        await put(store, "Bruno is employed at Initech.")
        for _ in range(200):  # a second at most on an idle machine; the deadline is loose
            stats = await store.apply(ALICE, MemoryStatsOp())
            if stats.merged_memories:
                break
            await asyncio.sleep(0.1)
        # read again: on PostgreSQL the merge may commit between the statements of a read
        stats = await store.apply(ALICE, MemoryStatsOp())
        assert stats.merged_memories == 1 and stats.total_memories == 1
        assert await found(store, RecentMemories()) == [first.id]
    finally:
        await store.close()


async def test_a_store_closing_under_a_write_leaves_no_pass_behind(location: Location) -> None:
    """A write that ends while its store closes starts no consolidation: before, its pass
    woke after the close and failed on the closed connection, an exception no one read."""
    store = await LongTermStore.open(location("memory.db"), consolidate_after=0.01)
    written = asyncio.ensure_future(put(store, "Bruno works at Initech."))
    await asyncio.sleep(0)  # the write is under way when the close begins
    await store.close()
    await written
    passes = [t for t in asyncio.all_tasks() if "_consolidate_quiet_spaces" in repr(t)]
    for task in passes:
        task.cancel()
    assert len(passes) == 0, "a consolidation pass outlived its store"


def test_a_pass_told_to_stop_ends_its_thread_at_once() -> None:
    """What a closing store tells the comparing of thousands of memories: it stops at the
    next memory instead of running on after the service stopped."""
    memories = [
        Candidate(f"m{n}", ALICE, "fact", f"note number {n} of many", 0, float(n))
        for n in range(1000)
    ]
    stop = threading.Event()
    assert merges(memories, stop) == []
    stop.set()
    with pytest.raises(Stopped):
        merges(memories, stop)


def test_a_pass_walks_and_compares_a_bounded_amount_per_memory_whatever_the_words() -> None:
    """Memories whose every word is in 200 of them (just under the index's limit) made
    each memory walk 200 entries per word and compare with all it met: a space's writer
    could make a pass cost minutes. The walk and the full comparisons are bounded per
    memory, and the copy of a memory among them is still found."""
    texts = hostile_texts(600)  # 200 made-up words each, every word in 200 of them
    copy = " ".join(reversed(texts[0].split()))  # the same words in another order
    memories = [
        Candidate(str(n), ALICE, "fact", text, 0, float(n)) for n, text in enumerate([*texts, copy])
    ]
    effort = Effort()
    (merge,) = merges(memories, effort=effort)
    assert (merge.kept.id, [m.id for m in merge.merged]) == ("0", [str(len(texts))])
    assert effort.walked <= MOST_WALKED * len(memories)
    assert effort.compared <= MOST_COMPARED_EACH * len(memories)
    in_memories = Counter(word for text in texts for word in set(text.split()))
    assert max(in_memories.values()) <= COMMON
    unbounded = sum(in_memories[word] for text in texts for word in set(text.split()))
    assert effort.walked < unbounded // 10, "the bound is what held the walk"


async def test_a_supersede_by_an_existing_memory_links_the_two(store: LongTermStore) -> None:
    """What an admin does with a conflict a writer's store reported: the writer's memory
    replaces the older one."""
    older = await in_space(store, ALICE, StoreMemory(content="The VPN gateway is vpn1.example.",
                                                     category="fact"), "owner")  # fmt: skip
    newer = await in_space(store, BOB, StoreMemory(content="The VPN gateway is vpn2.example.",
                                                   category="fact"), "writer")  # fmt: skip
    assert isinstance(older, Stored) and isinstance(newer, Stored)
    assert [c.id for c in newer.conflicts] == [older.id]
    with pytest.raises(NotAuthorized):
        await in_space(store, BOB, SupersedeMemory(id=older.id, by=newer.id), "writer")
    done = await in_space(store, ALICE, SupersedeMemory(id=older.id, by=newer.id), "owner")
    assert isinstance(done, Stored) and (done.id, done.supersedes) == (newer.id, older.id)
    listed = await in_space(store, ALICE, RecentMemories(), "owner")
    assert isinstance(listed, MemoryList) and [m.id for m in listed.memories] == [newer.id]
    assert listed.memories[0].supersedes == older.id
    # the newer starts where the older ends: a time before the link finds the older alone
    # (the facts guide's "then" listed both)
    assert listed.memories[0].valid_from is not None
    then = RecentMemories(as_of=listed.memories[0].valid_from - timedelta(microseconds=1))
    was = await in_space(store, ALICE, then, "owner")
    assert isinstance(was, MemoryList) and [m.id for m in was.memories] == [older.id]
    with pytest.raises(ItemNotFound, match="no current memory"):
        await in_space(store, ALICE, SupersedeMemory(id=newer.id, by="nope"), "owner")
    with pytest.raises(ValueError, match="give the new content, or by"):
        SupersedeMemory(id=older.id)


async def test_a_writer_supersedes_only_with_a_memory_it_may_change(
    store: LongTermStore,
) -> None:
    """The link changes the newer memory too (it names the older, and starts where the
    older ends): a writer may not make it with another member's memory."""
    bobs = await in_space(store, BOB, StoreMemory(content="Deploys go out on Tuesdays.",
                                                  category="fact"), "writer")  # fmt: skip
    alices = await in_space(store, ALICE, StoreMemory(content="The office plant is a fern.",
                                                      category="fact"), "owner")  # fmt: skip
    assert isinstance(bobs, Stored) and isinstance(alices, Stored)
    with pytest.raises(NotAuthorized, match=f"stored by {ALICE}"):
        await in_space(store, BOB, SupersedeMemory(id=bobs.id, by=alices.id), "writer")
    for memory_id in (bobs.id, alices.id):  # both as they were
        memory = await in_space(store, ALICE, GetMemory(id=memory_id), "owner")
        assert isinstance(memory, Memory)
        assert (memory.supersedes, memory.superseded_by, memory.valid_from) == (None, None, None)
    # its own newer memory it may link, and an admin any member's
    own = await in_space(store, BOB, StoreMemory(content="The release train leaves Thursdays.",
                                                 category="fact"), "writer")  # fmt: skip
    assert isinstance(own, Stored)
    linked = await in_space(store, BOB, SupersedeMemory(id=bobs.id, by=own.id), "writer")
    assert isinstance(linked, Stored) and linked.supersedes == bobs.id
    other = await in_space(store, BOB, StoreMemory(content="The office plant is a cactus.",
                                                   category="fact"), "writer")  # fmt: skip
    assert isinstance(other, Stored)
    by_admin = await in_space(store, ALICE, SupersedeMemory(id=alices.id, by=other.id), "owner")
    assert isinstance(by_admin, Stored) and by_admin.supersedes == alices.id


async def test_memories_stored_before_this_version_are_keyed_by_subject_at_open(
    location: Location,
) -> None:
    """A store made before facts that change: its memories get their subject keys when it
    opens, so a new store finds what it replaces among them."""
    where = location("older.db")
    store = await LongTermStore.open(where)
    try:
        old = await put(store, "Lena lives in Vienna.")
    finally:
        await store.close()
    await query(where, "UPDATE memories SET subject_key = NULL")
    await set_back(where, add_validity, on_postgres=key_subjects)
    reopened = await LongTermStore.open(where)
    try:
        new = await put(reopened, "Lena moved to Graz.")
        assert new.supersedes == old.id
    finally:
        await reopened.close()


async def test_a_spaces_subscribers_hear_what_consolidation_merged(location: Location) -> None:
    heard: list[SpaceEvent] = []
    store = await LongTermStore.open(location("heard.db"), listeners=Listeners(heard.extend))
    try:
        kept = await in_space(store, ALICE, StoreMemory(content="Mia works at Initech.",
                                                        category="fact"), "owner")  # fmt: skip
        twin = await in_space(store, ALICE, StoreMemory(content="Mia is employed at Initech.",
                                                        category="fact"), "owner")  # fmt: skip
        assert isinstance(kept, Stored) and isinstance(twin, Stored)
        heard.clear()
        await in_space(store, BOB, ConsolidateMemories(dry_run=False), "admin")
        changes = [event.change() for event in heard]
        assert [(c.kind, c.memory_id, c.reason) for c in changes] == [
            ("updated", twin.id, "merged"), ("updated", kept.id, None),
        ]  # fmt: skip
        assert changes[0].memory is not None and changes[0].memory.superseded_by == kept.id
    finally:
        await store.close()


async def test_a_spaces_subscribers_hear_a_supersede_by_new_text(location: Location) -> None:
    # the store it makes noted its events and links under a request of its own, unheard
    heard: list[SpaceEvent] = []
    linked: list[Any] = []
    store = await LongTermStore.open(
        location("heard.db"), listeners=Listeners(heard.extend, links=linked.extend)
    )
    try:
        old = await in_space(store, ALICE, StoreMemory(content="Deploys are on Friday.",
                                                       category="fact"), "owner")  # fmt: skip
        assert isinstance(old, Stored)
        heard.clear()
        new = await in_space(store, ALICE, SupersedeMemory(
            id=old.id, content="Deploys are on Monday.", source="PROJ-2"), "owner")  # fmt: skip
        assert isinstance(new, Stored) and new.supersedes == old.id
        changes = [event.change() for event in heard]
        assert sorted((c.kind, c.memory_id) for c in changes) == sorted(
            [("stored", new.id), ("updated", old.id)]
        )
        assert [(link.work_id, link.memory_id) for link in linked] == [("PROJ-2", new.id)]
    finally:
        await store.close()


async def test_a_wrong_supersede_is_undone_by_the_author_or_an_admin(location: Location) -> None:
    heard: list[SpaceEvent] = []
    store = await LongTermStore.open(location("undo.db"), listeners=Listeners(heard.extend))
    try:
        old = await in_space(store, BOB, StoreMemory(content="Hugo works at Initech.",
                                                     category="fact"), "writer")  # fmt: skip
        new = await in_space(store, BOB, StoreMemory(content="Hugo joined Hooli.",
                                                     category="fact"), "writer")  # fmt: skip
        assert isinstance(old, Stored) and isinstance(new, Stored) and new.supersedes == old.id
        with pytest.raises(NotAuthorized):  # another writer's memory
            await in_space(store, ALICE, RestoreMemory(id=old.id), "writer")
        heard.clear()
        restored = await in_space(store, CAROL, RestoreMemory(id=old.id), "admin")
        assert isinstance(restored, Memory)
        assert restored.superseded_by is None and restored.valid_to is None
        assert sorted((e.change().kind, e.change().memory_id) for e in heard) == sorted(
            [("updated", old.id), ("updated", new.id)]
        )  # the space's subscribers hear both
        now = await in_space(store, BOB, SearchMemories(query="Hugo"), "writer")
        assert isinstance(now, MemoryList)
        assert {m.id for m in now.memories} == {old.id, new.id}  # both current
        newer = await in_space(store, BOB, GetMemory(id=new.id), "writer")
        assert isinstance(newer, Memory) and newer.supersedes is None
        with pytest.raises(Conflict, match="not superseded"):
            await in_space(store, BOB, RestoreMemory(id=old.id), "writer")
        history = await in_space(store, BOB, MemoryHistoryOp(id=old.id), "writer")
        assert isinstance(history, MemoryHistory) and history.superseded_by == []
        assert [(v.version, v.changed_by) for v in history.versions][-1] == (2, CAROL)
    finally:
        await store.close()
