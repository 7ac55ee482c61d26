"""The bd engine, against a stand-in bd on PATH that accepts only bd's real flags."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spade_memory.beads import IssueChanges, IssueFilter, NewIssue
from spade_memory.beads.bd_cli import BdCliEngine
from spade_memory.beads.engines import open_engine
from spade_memory.beads.errors import BeadsError, IssueNotFound


def calls(log: Path) -> list[list[str]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


async def test_auto_takes_bd_when_it_is_on_path(bd_log: Path, tmp_path: Path) -> None:
    assert isinstance(open_engine(tmp_path / "project"), BdCliEngine)
    assert open_engine(tmp_path / "project", "native").name == "native"


async def test_every_operation_is_one_bd_command_with_real_flags(
    bd_log: Path, tmp_path: Path
) -> None:
    engine = open_engine(tmp_path / "project", "bd")
    created = await engine.create(
        NewIssue(
            title="-rf looks like a flag",
            description="--also this",
            issue_type="chore",
            priority=1,
            assignee="alice@localhost",
            labels=("memory:pattern", "agent:alice@localhost"),
            external_ref="spade-memory:m1",
            metadata={"k": "v"},
        )
    )
    assert created.title == "-rf looks like a flag"
    assert created.metadata == {"k": "v"}
    other = await engine.create(NewIssue(title="second"))
    await engine.add_dependency(created.id, other.id, "related")
    await engine.add_label(created.id, "extra")
    updated = await engine.update(
        created.id, IssueChanges(notes="n", priority=0, add_labels=("x",), remove_labels=("extra",))
    )
    assert updated.priority == 0 and "x" in updated.labels and "extra" not in updated.labels
    assert [i.id for i in await engine.list_issues(IssueFilter(labels=("x",)))] == [created.id]
    assert [i.id for i in await engine.search("looks like")] == [created.id]
    assert {i.id for i in await engine.ready(5)} == {created.id, other.id}
    closed = await engine.close(other.id, "done")
    assert closed.status == "closed"
    assert (await engine.get(created.id)).dependencies[0].depends_on_id == other.id  # type: ignore[union-attr]
    assert await engine.get("sd-404") is None

    recorded = calls(bd_log)
    assert all(call[0] == "--json" for call in recorded)
    assert recorded[0] == [
        "--json",
        "create",
        "--title=-rf looks like a flag",
        "--type=chore",
        "--priority=1",
        "--description=--also this",
        "--assignee=alice@localhost",
        "--external-ref=spade-memory:m1",
        "--labels=memory:pattern",
        "--labels=agent:alice@localhost",
    ]
    assert recorded[1] == ["--json", "update", created.id, '--metadata={"k": "v"}']
    commands = [call[1] for call in recorded]
    assert commands == [
        "create", "update", "create", "dep", "label", "update",
        "list", "search", "ready", "close", "show", "show",
    ]  # fmt: skip
    assert recorded[3] == ["--json", "dep", "add", created.id, other.id, "--type=related"]
    assert recorded[4] == ["--json", "label", "add", created.id, "extra"]


async def test_bd_errors_become_beads_errors(bd_log: Path, tmp_path: Path) -> None:
    engine = open_engine(tmp_path / "project", "bd")
    with pytest.raises(IssueNotFound):
        await engine.update("sd-404", IssueChanges(title="x"))
    with pytest.raises(BeadsError):
        await engine.add_dependency("sd-404", "sd-405", "blocks")
    engine_with_bad_flag = BdCliEngine(tmp_path / "project", engine.bd)  # type: ignore[attr-defined]
    with pytest.raises(BeadsError, match="bd list failed"):
        await engine_with_bad_flag._run(["list", "--no-such-flag"])


def test_asking_for_bd_without_it_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(BeadsError, match="not on PATH"):
        open_engine(tmp_path, "bd")
