"""Tags, filters, scores, work-item links, expiry and history end to end: clients in this
process, a real ``spade-memory run`` (embedded XMPP server, SQLite, the beads mirror on a
local JSONL file) in another.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from spade.behaviour import CyclicBehaviour

from spade_memory.base_memory.notifiers import WORK_ONTOLOGY
from spade_memory.protocol.errors import ItemNotFound
from spade_memory.protocol.memories import (
    ForgetMemories,
    MemoriesForgotten,
    MemoryList,
    MemoryRefs,
    SearchMemories,
    Stored,
    StoreMemory,
)
from spade_memory.server.runtime import PASSWORD_ENV
from spade_memory.testing import MemoryServiceProcess
from spade_memory.xmpp import wire
from spade_memory.xmpp.lifecycle import stop_agent
from tests.support.harness import start_client, unique_jid

from .conftest import NewService

WORK_ITEM = {
    "id": "wrk-a1b2",
    "title": "Make the CI green again",
    "description": "",
    "status": "open",
    "priority": 1,
    "issue_type": "task",
    "created_at": "2026-11-01T10:00:00Z",
    "updated_at": "2026-11-01T10:00:00Z",
}


def issues(data_dir: Path) -> dict[str, dict[str, Any]]:
    path = data_dir / "beads" / ".beads" / "issues.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return {issue["id"]: issue for issue in map(json.loads, lines)}


def mirrored(data_dir: Path, memory_id: str) -> dict[str, Any] | None:
    ref = f"spade-memory:{memory_id}"
    return next((i for i in issues(data_dir).values() if i.get("external_ref") == ref), None)


async def eventually(check: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("the condition did not hold in time")
        await asyncio.sleep(0.1)


WORK_ENGINE = unique_jid("work-engine")
"""The deployment's own work engine, told of every link (``--work-engine-jid``)."""


@pytest.fixture
def service(tmp_path: Path, new_service: NewService) -> Iterator[MemoryServiceProcess]:
    data_dir = tmp_path / "data"
    beads = data_dir / "beads" / ".beads"
    beads.mkdir(parents=True)
    (beads / "issues.jsonl").write_text(json.dumps(WORK_ITEM) + "\n")  # the project's work
    process = new_service(
        data_dir, "--beads-debounce", "0.2", "--purge-every", "0.3", "--no-dense-search",
        "--work-engine-jid", WORK_ENGINE, env={PASSWORD_ENV: "details-e2e-secret"},
    )  # fmt: skip
    process.start()
    yield process
    process.stop()


class Heard(CyclicBehaviour):  # type: ignore[misc]
    """Keeps the body of every work-item notice."""

    def __init__(self) -> None:
        super().__init__()
        self.bodies: list[dict[str, Any]] = []

    async def run(self) -> None:
        message = await self.receive(timeout=0.5)
        if message is not None:
            self.bodies.append(json.loads(message.body))


async def test_a_work_item_source_links_the_memory_in_beads_and_in_memory_refs(
    service: MemoryServiceProcess,
) -> None:
    alice = await start_client(unique_jid("alice"), service.port)
    try:
        stored = await alice.memory.store(
            None, "The CI runner cannot reach the package mirror", "while fixing the build",
            source="found while fixing wrk-a1b2", tags=["ci", "network"],
        )  # fmt: skip
        assert stored is not None and stored.work_items == ["wrk-a1b2"]
        assert stored.classified and stored.category == "capability"
        refs = await alice.memory.memory_refs("wrk-a1b2")
        assert [m.id for m in refs] == [stored.id]
        assert refs[0].source == "found while fixing wrk-a1b2"
        await eventually(lambda: mirrored(service.data_dir, stored.id) is not None)
        await eventually(
            lambda: (
                stored.id
                in issues(service.data_dir)["wrk-a1b2"].get("metadata", {}).get("memory_refs", [])
            )
        )
        issue = mirrored(service.data_dir, stored.id)
        assert issue is not None
        assert {"ci", "network", "category:capability"} <= set(issue["labels"])
        assert {(d["depends_on_id"], d["type"]) for d in issue.get("dependencies", [])} == {
            ("wrk-a1b2", "discovered-from")
        }
        assert issue["metadata"]["spade_memory"]["work_items"] == ["wrk-a1b2"]
        plain = await alice.memory.store("fact", "No work item here", source="notes/long-term.md")
        assert plain is not None and plain.work_items == []
    finally:
        await stop_agent(alice)


async def test_an_expired_memory_is_gone_from_every_read_and_closed_in_beads(
    service: MemoryServiceProcess,
) -> None:
    alice = await start_client(unique_jid("alice"), service.port)
    try:
        # ten seconds to see it mirrored and found on a loaded machine, then it expires
        brief = await alice.memory.store("fact", "The staging password is hunter2", ttl_seconds=10)
        stored_by = time.monotonic()  # the service applied it before this
        kept = await alice.memory.store("fact", "The staging host is stage.example.com")
        assert brief is not None and kept is not None
        found = await alice.memory.search_memories("staging")
        assert {m.id for m in found} == {brief.id, kept.id}
        await eventually(lambda: mirrored(service.data_dir, brief.id) is not None)
        await asyncio.sleep(stored_by + 10.1 - time.monotonic())  # over: no read shows it
        assert [m.id for m in await alice.memory.search_memories("staging")] == [kept.id]
        assert [m.id for m in await alice.memory.get_memories_by_category("fact")] == [kept.id]
        assert [m.id for m in await alice.memory.get_recent_memories()] == [kept.id]
        with pytest.raises(ItemNotFound):
            await alice.memory.get_memory(brief.id)

        def closed() -> bool:
            issue = mirrored(service.data_dir, brief.id)
            return issue is not None and issue["status"] == "closed"

        await eventually(closed)
        issue = mirrored(service.data_dir, brief.id)
        assert issue is not None and issue["close_reason"] == "expired in the base memory"
        history = await alice.memory.memory_history(brief.id)
        assert history is not None and history.deleted is not None
        assert history.deleted.reason == "expired" and history.versions == []
    finally:
        await stop_agent(alice)


async def test_history_names_both_authors_and_filters_and_scores_hold_over_the_wire(
    service: MemoryServiceProcess,
) -> None:
    alice = await start_client(unique_jid("alice"), service.port)
    bob = await start_client(unique_jid("bob"), service.port)
    space = f"team-{uuid.uuid4().hex[:8]}"
    try:
        await alice.memory.create_space(space)
        await alice.memory.grant(space, str(bob.jid.bare), "admin")
        first = await alice.memory.store_memory(
            "fact", "Release notes go out on Tuesday", space=space, tags=["release"]
        )
        assert first is not None
        await alice.memory.update_memory(first, space=space, content="Release notes: Wednesday")
        await bob.memory.update_memory(first, space=space, tags=["release", "comms"])
        history = await bob.memory.memory_history(first, space=space)
        assert history is not None
        assert [(v.version, v.changed_by) for v in history.versions] == [
            (1, str(alice.jid.bare)), (2, str(alice.jid.bare)), (3, str(bob.jid.bare)),
        ]  # fmt: skip
        assert history.versions[0].content == "Release notes go out on Tuesday"
        assert history.versions[2].tags == ["release", "comms"]

        for n, tags in enumerate((["release"], ["release", "qa"], ["qa"], [])):
            await alice.memory.store_memory(
                "pattern", f"release checklist step {n} for the release", tags=tags,
                metadata={"step": n},
            )  # fmt: skip
        found = await alice.memory.search_memories("release checklist", tags_any=["qa"])
        assert sorted(m.metadata["step"] for m in found) == [1, 2]
        both = await alice.memory.search_memories("release", tags_all=["release", "qa"])
        assert [m.metadata["step"] for m in both] == [1]
        one = await alice.memory.get_recent_memories(metadata_equals={"step": 3})
        assert [m.tags for m in one] == [[]]
        later = datetime.now(timezone.utc) + timedelta(minutes=5)
        assert list(await alice.memory.get_recent_memories(created_after=later)) == []
        ranked = await alice.memory.search_memories("release checklist step")
        scores = [m.score for m in ranked]
        assert len(scores) == 4 and None not in scores
        assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
        assert ranked.reasoning is not None and ranked.reasoning.strategy == "bm25"
        assert ranked.reasoning.word_candidates == 4
    finally:
        await stop_agent(alice)
        await stop_agent(bob)


async def test_the_work_engine_hears_each_link_and_batches_carry_the_new_fields(
    service: MemoryServiceProcess,
) -> None:
    engine = await start_client(WORK_ENGINE, service.port)
    heard = Heard()
    engine.add_behaviour(heard, wire.notice_template(WORK_ONTOLOGY))
    alice = await start_client(unique_jid("alice"), service.port)
    try:
        outcomes = await alice.memory.batch(
            alice.memory.base_memory_jid,
            [
                StoreMemory(category="fact", content="Login needs 2FA", source="see SEC-9",
                            tags=["auth"], metadata={"risk": "high"}, ttl_seconds=3600),
                StoreMemory(category="fact", content="Login page is slow", tags=["perf"]),
                SearchMemories(query="login", tags_any=["auth"]),
                MemoryRefs(work_id="SEC-9"),
                ForgetMemories(tags_any=["perf"]),
            ],
        )  # fmt: skip
        stored, _, found, refs, forgotten = outcomes
        assert isinstance(stored, Stored) and stored.work_items == ["SEC-9"]
        assert isinstance(found, MemoryList) and [m.id for m in found.memories] == [stored.id]
        assert found.memories[0].metadata == {"risk": "high"}
        assert found.memories[0].expires_at is not None
        assert isinstance(refs, MemoryList) and [m.id for m in refs.memories] == [stored.id]
        assert (
            isinstance(forgotten, MemoriesForgotten) and forgotten.dry_run and forgotten.count == 1
        )
        await eventually(lambda: len(heard.bodies) >= 1)
        assert heard.bodies == [{
            "event": "memory_linked", "work_id": "SEC-9", "memory_id": stored.id,
            "author": str(alice.jid.bare),
        }]  # fmt: skip
    finally:
        await stop_agent(alice)
        await stop_agent(engine)
