"""Supersedes in the beads mirror, on real beads JSONL (the native engine, and bd's flags
through the stand-in): the older memory's issue gets a ``supersedes`` dependency on its
successor's and is closed with the reason, as ``bd supersede`` leaves it; deleting the
successor reopens it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.beads import mapping as m
from spade_memory.beads.engine import BeadsEngine
from spade_memory.beads.issue import Issue, IssueFilter
from spade_memory.beads_sync.store import BeadsMemoryStore
from spade_memory.protocol.memories import DeleteMemory, StoreMemory

ALICE = "alice@localhost"


@pytest.fixture
async def base(tmp_path: Path) -> AsyncIterator[LongTermStore]:
    store = await LongTermStore.open(tmp_path / "base-memory.db")
    yield store
    await store.close()


async def issues_of(beads: BeadsMemoryStore) -> dict[str, Issue]:
    issues = await beads.engine.list_issues(IssueFilter(include_closed=True))
    return {issue.external_ref or "": issue for issue in issues}


async def test_a_supersede_closes_the_old_issue_with_a_supersedes_link(
    engine: BeadsEngine, base: LongTermStore
) -> None:
    beads = BeadsMemoryStore(engine, session="s-1")
    old = await base.apply(ALICE, StoreMemory(category="fact", content="Ada lives in Paris."))
    feed = await base.changes_since(0)
    await beads.mirror(feed.changes)
    new = await base.apply(ALICE, StoreMemory(category="fact", content="Ada moved to Rome."))
    assert new.supersedes == old.id
    later = await base.changes_since(feed.last_seq)
    await beads.mirror(later.changes)

    issues = await issues_of(beads)
    was, now = issues[m.EXTERNAL_REF_PREFIX + old.id], issues[m.EXTERNAL_REF_PREFIX + new.id]
    assert now.is_open and not was.is_open
    assert was.close_reason == f"superseded by {now.id}"
    assert [(d.depends_on_id, d.type) for d in was.dependencies] == [(now.id, "supersedes")]
    await beads.mirror(later.changes)  # again: nothing doubles
    again = (await issues_of(beads))[m.EXTERNAL_REF_PREFIX + old.id]
    assert len(again.dependencies) == 1

    await base.apply(ALICE, DeleteMemory(id=new.id))
    await beads.mirror((await base.changes_since(later.last_seq)).changes)
    issues = await issues_of(beads)
    assert issues[m.EXTERNAL_REF_PREFIX + old.id].is_open  # current again
    assert not issues[m.EXTERNAL_REF_PREFIX + new.id].is_open


async def test_a_page_holding_both_memories_links_them_too(
    engine: BeadsEngine, base: LongTermStore
) -> None:
    """The older memory's first change already shows it superseded; its issue is closed
    once the successor's issue exists (the supersede's own change comes after it)."""
    beads = BeadsMemoryStore(engine, session="s-1")
    old = await base.apply(ALICE, StoreMemory(category="fact", content="Bo works at Acme."))
    new = await base.apply(ALICE, StoreMemory(category="fact", content="Bo joined Globex."))
    assert new.supersedes == old.id
    await beads.mirror((await base.changes_since(0)).changes)
    issues = await issues_of(beads)
    was, now = issues[m.EXTERNAL_REF_PREFIX + old.id], issues[m.EXTERNAL_REF_PREFIX + new.id]
    assert was.close_reason == f"superseded by {now.id}"
    assert [(d.depends_on_id, d.type) for d in was.dependencies] == [(now.id, "supersedes")]
