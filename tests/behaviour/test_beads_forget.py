"""Forgetting an agent at the beads sync agent: its beads memories redacted, not deleted,
on both engines; and the mirror, which redacts what the base memory forgot and never
writes a redacted issue again."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from spade_memory import StoreMemory
from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.beads import mapping as m
from spade_memory.beads.engine import BeadsEngine
from spade_memory.beads.engines import open_engine
from spade_memory.beads.issue import IssueFilter, NewIssue
from spade_memory.beads_sync.service import BeadsSyncService
from spade_memory.beads_sync.store import BeadsMemoryStore
from spade_memory.protocol.beads import BeadsStoreMemory, ForgetBeadsMemories
from spade_memory.protocol.memories import (
    DeleteMemory,
    ForgetAllMemories,
    ForgetMemories,
    UpdateMemory,
)

ALICE, BOB = "alice@localhost", "bob@localhost"


def texts(issues: object) -> str:
    return repr(issues)


async def test_forget_redacts_every_beads_memory_of_the_agent_and_nothing_else(
    engine: BeadsEngine,
) -> None:
    store = BeadsMemoryStore(engine, session="s-1")
    kept = await store.store(BOB, BeadsStoreMemory(content="bob's own plan"))
    open_one = await store.store(
        ALICE,
        BeadsStoreMemory(content="alice's launch code is 0000", tags=["secret"],
                         metadata={"where": "vault"}, importance=9),
    )  # fmt: skip
    closed_one = await store.store(ALICE, BeadsStoreMemory(content="alice's old password"))
    await store.delete(ALICE, closed_one.id, "because alice's old password leaked")
    mirrored = await engine.create(
        NewIssue(title="alice's mirrored fact", description="alice's mirrored fact",
                 labels=m.labels_for("learning", ALICE, None, category="fact"),
                 notes="alice's context", external_ref="spade-memory:m-1", assignee=ALICE)
    )  # fmt: skip
    shared = await engine.create(
        NewIssue(title="the team's fact", description="the team's fact",
                 labels=m.labels_for("learning", ALICE, None, category="fact", space="team"))
    )  # fmt: skip
    work = await engine.create(NewIssue(title="a work item of the project"))
    await engine.add_dependency(open_one.id, work.id, "discovered-from")

    counted = await store.forget(ALICE, dry_run=True)
    assert (counted.issues, counted.dry_run) == (3, True)
    assert "launch code" in texts(await engine.list_issues(IssueFilter(include_closed=True)))

    assert (await store.forget(ALICE)).issues == 3
    issues = {i.id: i for i in await engine.list_issues(IssueFilter(include_closed=True))}
    for forgotten in (open_one.id, closed_one.id, mirrored.id):
        issue = issues[forgotten]  # still there, by the same id
        assert (issue.status, issue.title, issue.close_reason) == (
            "closed", m.FORGOTTEN_TITLE, m.FORGOTTEN_REASON,
        )  # fmt: skip
        assert issue.description == m.FORGOTTEN_TEXT and m.tags_of(issue) == []
        assert m.user_metadata(issue) == {} and m.is_forgotten(issue)
        assert m.AGENT_LABEL + ALICE in issue.labels
    assert issues[mirrored.id].notes == m.FORGOTTEN_TEXT
    assert issues[mirrored.id].external_ref == "spade-memory:m-1"
    assert [d.depends_on_id for d in issues[open_one.id].dependencies] == [work.id]
    everything = texts(list(issues.values()))
    for secret in ("launch code", "vault", "old password", "mirrored fact", "alice's context"):
        assert secret not in everything, secret
    assert issues[kept.id].description == "bob's own plan"
    assert issues[shared.id].description == "the team's fact"  # the space's, not alice's
    assert issues[work.id].status == "open"
    assert (await store.forget(ALICE)).issues == 0  # nothing left to redact


@pytest.fixture
async def base(tmp_path: Path) -> AsyncIterator[LongTermStore]:
    store = await LongTermStore.open(tmp_path / "base-memory.db")
    yield store
    await store.close()


async def test_the_mirror_redacts_what_the_base_memory_forgot_and_never_writes_it_again(
    tmp_path: Path, base: LongTermStore
) -> None:
    """Memories forgotten in the base memory (by ``forget_all_memories`` or by filter)
    have their issues redacted when the mirror hears of it; a page of changes read
    before a ``forget`` (the mirror's fetch races the shell's forget) writes nothing into
    a redacted issue."""
    beads = BeadsMemoryStore(open_engine(tmp_path / "project", "native"), session="s-1")
    plan = await base.apply(ALICE, StoreMemory(category="fact", content="alice's plan"))
    scratch = await base.apply(
        ALICE, StoreMemory(category="pattern", content="alice's scratch", tags=["scratch"])
    )
    kept = await base.apply(BOB, StoreMemory(category="fact", content="bob's fact"))
    first = await base.changes_since(0)
    assert await beads.mirror(first.changes) == 3
    await base.apply(ALICE, UpdateMemory(id=plan.id, content="alice's plan, revised"))
    stale = await base.changes_since(first.last_seq)  # read before the forget below

    await base.apply(ALICE, ForgetMemories(tags_any=["scratch"], dry_run=False))
    forgotten = await base.apply(ALICE, ForgetAllMemories())
    assert (forgotten.memories, forgotten.dry_run) == (1, False)  # the scratch went before
    assert (await beads.forget(ALICE)).issues == 2  # the forget reaches beads first
    assert await beads.mirror(stale.changes) == 0  # stale: it carries the revised text
    after = await base.changes_since(stale.last_seq)
    assert [(c.kind, c.reason) for c in after.changes] == [("deleted", "forgotten")] * 2
    await beads.mirror(after.changes)

    issues = await beads.engine.list_issues(IssueFilter(include_closed=True))
    assert "alice's" not in texts(issues)
    by_ref = {issue.external_ref: issue for issue in issues}
    for memory_id in (plan.id, scratch.id):
        assert m.is_forgotten(by_ref[m.EXTERNAL_REF_PREFIX + memory_id])
    assert by_ref[m.EXTERNAL_REF_PREFIX + kept.id].description == "bob's fact"


async def test_the_mirror_redacts_a_memory_forgotten_by_filter(
    tmp_path: Path, base: LongTermStore
) -> None:
    beads = BeadsMemoryStore(open_engine(tmp_path / "project", "native"), session="s-1")
    gone = await base.apply(
        ALICE, StoreMemory(category="fact", content="alice's stale fact", tags=["stale"])
    )
    deleted = await base.apply(ALICE, StoreMemory(category="fact", content="alice's deleted"))
    feed = await base.changes_since(0)
    await beads.mirror(feed.changes)
    await base.apply(ALICE, ForgetMemories(tags_any=["stale"], dry_run=False))
    await base.apply(ALICE, DeleteMemory(id=deleted.id))
    await beads.mirror((await base.changes_since(feed.last_seq)).changes)
    everything = await beads.engine.list_issues(IssueFilter(include_closed=True))
    issues = {issue.external_ref: issue for issue in everything}
    forgotten = issues[m.EXTERNAL_REF_PREFIX + gone.id]
    assert m.is_forgotten(forgotten) and "stale fact" not in texts(forgotten)
    closed = issues[m.EXTERNAL_REF_PREFIX + deleted.id]  # a delete keeps its audit trail
    assert closed.status == "closed" and closed.description == "alice's deleted"


async def test_the_service_forgets_the_answers_kept_for_the_senders_writes(
    tmp_path: Path,
) -> None:
    """A beads write retried within the run is answered from memory, with what it stored:
    after the forget, alice's retry is applied again; bob's is still answered."""
    engine = open_engine(tmp_path / "project", "native")
    service = BeadsSyncService(BeadsMemoryStore(engine, session="s-1"))
    note = BeadsStoreMemory(content="a note to self")
    stored = await service.apply(ALICE, note, "w-1")
    bobs = await service.apply(BOB, note, "w-1")
    counted = await service.apply(ALICE, ForgetBeadsMemories(dry_run=True))
    assert (counted.issues, counted.replies, counted.dry_run) == (1, 1, True)
    forgotten = await service.apply(ALICE, ForgetBeadsMemories())
    assert (forgotten.issues, forgotten.replies, forgotten.dry_run) == (1, 1, False)
    assert (await service.apply(ALICE, note, "w-1")).id != stored.id
    assert await service.apply(BOB, note, "w-1") == bobs
