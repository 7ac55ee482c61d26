"""The memory ↔ issue tables, both ways, and a memory's round trip through an issue."""

from __future__ import annotations

from pathlib import Path

import pytest

from spade_memory.base_memory.service import BaseMemoryService
from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.beads import mapping as m
from spade_memory.beads.issue import Issue, NewIssue
from spade_memory.beads.native import NativeEngine
from spade_memory.beads_sync.store import BeadsMemoryStore
from spade_memory.protocol.beads import BeadsStoreMemory, RetrieveMemories
from spade_memory.protocol.errors import ItemNotFound
from spade_memory.protocol.memories import CATEGORIES, ChangesSince
from spade_memory.protocol.services import BASE_MEMORY
from spade_memory.spaces.directory import SpaceDirectory
from tests.support.in_process import client_of
from tests.support.stores import Location

IMPORTANCE_TO_PRIORITY = {10: 0, 9: 0, 8: 1, 7: 1, 6: 2, 5: 2, 4: 2, 3: 3, 2: 3, 1: 4}
PRIORITY_TO_IMPORTANCE = {0: 9, 1: 7, 2: 5, 3: 3, 4: 1}


def test_importance_and_priority_both_ways() -> None:
    assert {i: m.priority_of(i) for i in range(1, 11)} == IMPORTANCE_TO_PRIORITY
    assert m.priority_of(None) == 2
    assert {p: m.importance_of(p) for p in range(5)} == PRIORITY_TO_IMPORTANCE
    for priority in range(5):  # back and forth lands on the same priority
        assert m.priority_of(m.importance_of(priority)) == priority
    with pytest.raises(ValueError):
        m.priority_of(11)


def test_memory_types_both_ways_through_labels() -> None:
    assert m.ISSUE_TYPE == {
        "conversation": "task", "context": "task", "artifact": "task",
        "decision": "feature", "pattern": "chore", "learning": "chore",
    }  # fmt: skip
    for memory_type in m.MEMORY_TYPES:
        labels = m.labels_for(memory_type, "alice@x", "s1", ("t",))
        issue = Issue(id="p-1", title="t", issue_type=m.issue_type_of(memory_type), labels=labels)
        assert m.memory_type_of(issue) == memory_type  # exact, though types share issue types
    unlabelled = Issue(id="p-2", title="from bd", issue_type="feature")
    assert m.memory_type_of(unlabelled) == "decision"


def test_every_category_has_a_memory_type_and_keeps_its_label() -> None:
    assert set(m.CATEGORY_MEMORY_TYPE) == set(CATEGORIES)
    assert set(m.CATEGORY_MEMORY_TYPE.values()) <= set(m.MEMORY_TYPES)
    labels = m.labels_for("learning", "alice@x", None, category="fact")
    assert labels == ("memory:learning", "agent:alice@x", "category:fact")


async def test_a_memory_comes_back_as_it_was_stored(tmp_path: Path) -> None:
    store = BeadsMemoryStore(NativeEngine(tmp_path / ".beads"), session="s-now")
    stored = await store.store(
        "alice@x",
        BeadsStoreMemory(
            content="Retry with the same request id\nso writes apply once",
            memory_type="pattern",
            tags=["xmpp", "retries"],
            importance=10,
            metadata={"source": "review", "nested": {"a": [1, 2]}},
        ),
    )
    (memory,) = (await store.retrieve("alice@x", RetrieveMemories())).memories
    assert stored.session == "s-now" and memory.id == stored.id
    assert memory.title == "Retry with the same request id"
    assert memory.content == "Retry with the same request id\nso writes apply once"
    assert (memory.memory_type, memory.agent, memory.session) == ("pattern", "alice@x", "s-now")
    assert memory.tags == ["xmpp", "retries"]
    assert memory.metadata == {"source": "review", "nested": {"a": [1, 2]}}
    assert memory.importance == 10  # kept exactly, though priority 0 alone reads back as 9
    issue = await store.engine.get(stored.id)
    assert issue is not None and issue.priority == 0 and issue.issue_type == "chore"
    assert issue.assignee == "alice@x"
    assert (await store.retrieve("bob@x", RetrieveMemories())).memories == []


async def test_the_projects_own_issues_are_ready_work_for_its_space_alone(
    tmp_path: Path, location: Location
) -> None:
    """Issues that are not memories (the project's own work, titles included) reach only
    the members of the space the deployment names for them; by default, no one."""
    engine = NativeEngine(tmp_path / ".beads")
    own_work = await engine.create(NewIssue(title="Rotate the signing key", issue_type="task"))
    directory = await SpaceDirectory.open(location("spaces.db"))
    try:
        space = await directory.create("maintainers", "ana@d", None)
        await directory.grant(space, "bob@d", "reader", "ana@d")
        for project_space, seeing in [
            (None, set()), ("maintainers", {"ana@d", "bob@d"}), ("nobody-has-it", set())
        ]:  # fmt: skip
            store = BeadsMemoryStore(engine, "s-1", directory, project_space=project_space)
            mine = await store.store("eve@d", BeadsStoreMemory(content="Eve's note"))
            for account in ("ana@d", "bob@d", "eve@d"):
                ready = {i.id for i in (await store.session_context(account, None)).ready_work}
                assert (own_work.id in ready) == (account in seeing), (project_space, account)
                assert (mine.id in ready) == (account == "eve@d")  # memories: as ever
    finally:
        await directory.close()


async def test_a_space_made_under_a_deleted_ones_name_reads_none_of_its_mirror(
    tmp_path: Path,
) -> None:
    """The mirror keeps each shared memory's space by id beside its name: the new owner
    of a deleted space's name reads none of the old space's issues, even before the
    beads agent has closed them (it lags behind the deletion)."""
    mirror = "beads-sync@localhost"
    memories = await LongTermStore.open(tmp_path / "base.db", consolidate_after=None)
    directory = await SpaceDirectory.open(tmp_path / "spaces.db")
    try:
        service = BaseMemoryService(memories, mirror=mirror, directory=directory)
        beads = BeadsMemoryStore(NativeEngine(tmp_path / ".beads"), "s-1", directory)
        ana, eve = (client_of(who, {BASE_MEMORY: service}) for who in ("ana@d", "eve@d"))
        feed = client_of(mirror, {BASE_MEMORY: service})

        async def mirrored(after: int) -> int:
            changes = await feed.request(BASE_MEMORY, ChangesSince(after=after))
            await beads.mirror(changes.changes)
            return changes.last_seq

        await ana.create_space("team")
        old = await ana.store("fact", "The launch code is 4711", space="team")
        seen = await mirrored(0)
        assert (await beads.mirrored("ana@d", old.id)).content == "The launch code is 4711"
        await ana.delete_space("team")
        await eve.create_space("team")  # at once, before the mirror hears of the deletion
        new = await eve.store("fact", "Eve's own team note", space="team")
        with pytest.raises(ItemNotFound):
            await beads.mirrored("eve@d", old.id)
        assert "4711" not in str(await beads.search("eve@d", "launch code", 10))
        await mirrored(seen)
        assert (await beads.mirrored("eve@d", new.id)).content == "Eve's own team note"
        with pytest.raises(ItemNotFound):
            await beads.mirrored("eve@d", old.id)
    finally:
        await directory.close()
        await memories.close()
