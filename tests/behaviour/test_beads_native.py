"""The native beads engine against real issues.jsonl files from public projects."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from spade_memory.beads.errors import IssueNotFound
from spade_memory.beads.issue import IssueChanges, IssueFilter, NewIssue
from spade_memory.beads.jsonl import id_prefix
from spade_memory.beads.native import NativeEngine
from spade_memory.beads.timestamps import nanoseconds
from tests.support.paths import FIXTURES

BEADS_FILES = FIXTURES / "beads"
FILES = sorted(BEADS_FILES.glob("*.jsonl"))


def project(tmp_path: Path, fixture: Path) -> NativeEngine:
    beads = tmp_path / ".beads"
    beads.mkdir()
    shutil.copyfile(fixture, beads / "issues.jsonl")
    return NativeEngine(beads)


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


@pytest.mark.parametrize("fixture", FILES, ids=lambda path: path.name.split("__")[1])
async def test_every_line_reencoded_is_semantically_identical(
    tmp_path: Path, fixture: Path
) -> None:
    engine = project(tmp_path, fixture)
    await engine.list_issues()
    for line in engine._lines:
        line.changed = True  # force our encoder onto every issue line
    await engine._save()
    before, after = lines(fixture), lines(engine.path)
    assert len(after) == len(before)
    for original, written in zip(before, after, strict=True):
        assert json.loads(written) == json.loads(original)  # same keys, values, strings


@pytest.mark.parametrize("fixture", FILES, ids=lambda path: path.name.split("__")[1])
async def test_a_memory_created_in_each_file_gets_its_prefix_and_keeps_the_rest(
    tmp_path: Path, fixture: Path
) -> None:
    engine = project(tmp_path, fixture)
    created = await engine.create(NewIssue(title="remember this", labels=("memory:context",)))
    expected_prefix = id_prefix(json.loads(lines(fixture)[0])["id"])
    assert id_prefix(created.id) == expected_prefix
    after = lines(engine.path)
    assert after[:-1] == lines(fixture)  # untouched lines byte for byte
    assert json.loads(after[-1])["id"] == created.id


async def test_a_changed_line_keeps_unknown_keys_and_moves_updated_at(tmp_path: Path) -> None:
    engine = project(tmp_path, BEADS_FILES / "mattsp1290__lotel__issues.jsonl")
    original = json.loads(lines(engine.path)[0])
    updated = await engine.update(original["id"], IssueChanges(add_labels=("seen",)))
    written = json.loads(lines(engine.path)[0])
    assert {key for key in original if key not in ("labels", "updated_at")} <= set(written)
    assert written["created_at"] == original["created_at"]  # nanoseconds kept as written
    assert nanoseconds(updated.updated_at) > nanoseconds(original["updated_at"])
    assert written["labels"] == [*original["labels"], "seen"]


async def test_other_record_types_survive_a_rewrite(tmp_path: Path) -> None:
    engine = project(tmp_path, BEADS_FILES / "maslennikov-ig__BuhBot__issues.jsonl")
    memory_line = lines(engine.path)[-1]
    assert json.loads(memory_line)["_type"] == "memory"
    first = (await engine.list_issues(IssueFilter(include_closed=True)))[0]
    await engine.update(first.id, IssueChanges(notes="touched"))
    assert lines(engine.path)[-1] == memory_line


async def test_closed_at_is_present_exactly_when_closed(tmp_path: Path) -> None:
    engine = NativeEngine(tmp_path / ".beads")
    issue = await engine.create(NewIssue(title="a"))
    closed = await engine.close(issue.id, "done")
    assert closed.closed_at is not None and closed.close_reason == "done"
    assert nanoseconds(closed.updated_at) >= nanoseconds(closed.closed_at)
    reopened = await engine.update(issue.id, IssueChanges(status="open"))
    assert reopened.closed_at is None and reopened.close_reason is None
    for text in lines(engine.path):
        data = json.loads(text)
        assert "priority" in data
        assert ("closed_at" in data) == (data["status"] == "closed")


async def test_filters_dependencies_ready_and_search(tmp_path: Path) -> None:
    engine = NativeEngine(tmp_path / ".beads", "proj")
    blocker = await engine.create(NewIssue(title="Choose the database", labels=("a",)))
    blocked = await engine.create(
        NewIssue(title="Write the schema", labels=("a", "b"), assignee="alice@x", priority=1)
    )
    await engine.add_dependency(blocked.id, blocker.id, "blocks")
    await engine.add_dependency(blocked.id, blocker.id, "blocks")  # once only
    assert [dep.depends_on_id for dep in (await engine.get(blocked.id)).dependencies] == [  # type: ignore[union-attr]
        blocker.id
    ]
    assert [i.id for i in await engine.ready()] == [blocker.id]
    await engine.close(blocker.id, "chosen")
    assert [i.id for i in await engine.ready()] == [blocked.id]
    assert [i.id for i in await engine.list_issues(IssueFilter(labels=("a", "b")))] == [blocked.id]
    assert [i.id for i in await engine.list_issues(IssueFilter(labels_any=("b", "zzz")))] == [
        blocked.id
    ]
    assert [i.id for i in await engine.list_issues(IssueFilter(assignee="alice@x"))] == [blocked.id]
    assert len(await engine.list_issues(IssueFilter(include_closed=True))) == 2
    assert [i.id for i in await engine.list_issues(IssueFilter(status="closed"))] == [blocker.id]
    assert [i.id for i in await engine.search("SCHEMA write")] == [blocked.id]
    assert blocked.id.startswith("proj-")
    with pytest.raises(IssueNotFound):
        await engine.add_dependency(blocked.id, "proj-nope", "blocks")


async def test_a_batch_writes_once_and_outside_changes_are_read(tmp_path: Path) -> None:
    engine = NativeEngine(tmp_path / ".beads")
    async with engine.batch():
        for n in range(5):
            await engine.create(NewIssue(title=f"issue {n}"))
        assert not engine.path.exists()
    assert len(lines(engine.path)) == 5
    other = NativeEngine(tmp_path / ".beads")
    first = (await other.list_issues())[0]
    await other.close(first.id, "elsewhere")  # as bd or a git pull would
    assert (await engine.get(first.id)).status == "closed"  # type: ignore[union-attr]


async def test_the_prefix_setting_of_the_project_wins(tmp_path: Path) -> None:
    (tmp_path / ".beads").mkdir()
    (tmp_path / ".beads" / "config.yaml").write_text('issue-prefix: "team"\n')
    created = await NativeEngine(tmp_path / ".beads").create(NewIssue(title="x"))
    assert created.id.startswith("team-")


async def test_a_torn_last_line_is_set_aside_and_reported(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A write cut short (no newline, no JSON) is repaired: moved beside the file, said."""
    fixture = BEADS_FILES / "matt-riley__mjrwtf__issues.jsonl"
    engine = project(tmp_path, fixture)
    whole = engine.path.read_text(encoding="utf-8")
    torn = whole.splitlines()[-1][:40]
    engine.path.write_text(whole + torn, encoding="utf-8")  # a last write cut short
    with caplog.at_level("WARNING", logger="spade_memory.beads"):
        issues = await engine.list_issues(IssueFilter(include_closed=True))
    assert len(issues) == len(lines(fixture))  # every whole line is still an issue
    assert engine.path.read_text(encoding="utf-8") == whole  # the file is whole again
    (aside,) = engine.path.parent.glob("issues.jsonl.torn-*")
    assert aside.read_text(encoding="utf-8") == torn + "\n"  # set aside, not dropped
    assert "torn" in caplog.text and aside.name in caplog.text
