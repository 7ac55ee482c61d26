"""The context directory on a real file system."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from spade_memory.interaction.context_dir import ContextDirectory, safe_name
from spade_memory.interaction.context_index import INDEX_FOLDER

ALICE = "alice@localhost"


@pytest.mark.parametrize(
    "hostile",
    ["../../etc/passwd", "/etc/passwd", "..", ".", "a/../../b", "con\x00nul", "~root", ""],
)
def test_any_id_stays_inside_the_directory(tmp_path: Path, hostile: str) -> None:
    context = ContextDirectory(tmp_path / "context")
    written = context.write_conversation(ALICE, hostile, "summary of a hostile id", [])
    owner_dir = context.owner_dir(ALICE)
    path = (owner_dir / written.path).resolve()
    assert path.is_file() and owner_dir.resolve() in path.parents
    assert "/" not in safe_name(hostile) and not safe_name(hostile).startswith(".")
    context.save_preferences(ALICE, hostile, {"x": 1})
    context.write_knowledge(ALICE, hostile, "knowledge", [])
    index = tmp_path / "context" / INDEX_FOLDER  # the folders' search indexes
    assert all(
        owner_dir.resolve() in p.resolve().parents for p in (tmp_path / "context").rglob("*")
        if p.is_file() and index not in p.parents
    )  # fmt: skip
    assert all(p.parent == index for p in index.rglob("*"))


def test_layout_frontmatter_and_search(tmp_path: Path) -> None:
    context = ContextDirectory(tmp_path)
    written = context.write_conversation(ALICE, "chat-1", "Ana wants invoices in PDF", ["billing"])
    assert written.path.startswith("conversations/") and written.path.endswith(".md")
    text = (context.owner_dir(ALICE) / written.path).read_text()
    assert text.startswith(
        "---\ntype: conversation\nowner: alice@localhost\nconversation: chat-1\n"
    )
    context.write_knowledge(ALICE, "refund policy", "Refunds within 30 days", ["billing"])
    context.save_preferences(ALICE, "ana", {"language": "es"})
    assert context.preferences(ALICE, "ana") == {"language": "es"}
    assert context.save_preferences(ALICE, "ana", {"tone": "short"}) == {
        "language": "es", "tone": "short"}  # fmt: skip

    found = context.search(ALICE, "PDF invoices")
    assert [f.title for f in found] == ["chat-1"]
    assert [f.type for f in context.search(ALICE, "billing", kind="knowledge")] == ["knowledge"]
    assert context.search("bob@localhost", "PDF invoices") == []


def test_hand_edits_are_found_and_malformed_files_skipped(tmp_path: Path) -> None:
    context = ContextDirectory(tmp_path)
    written = context.write_knowledge(ALICE, "deploys", "deploy on fridays", [])
    path = context.owner_dir(ALICE) / written.path
    path.write_text(path.read_text().replace("deploy on fridays", "never deploy on mondays"))
    (path.parent / "broken.md").write_text("---\n: [unclosed\n---\nmondays too\n")
    (path.parent / "no-frontmatter.md").write_text("mondays, no header\n")
    found = context.search(ALICE, "mondays")
    assert [f.title for f in found] == ["deploys"]
    assert "never deploy on mondays" in found[0].text


def test_a_search_reads_only_the_files_changed_since_the_last(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    context = ContextDirectory(tmp_path)
    for n in range(200):
        context.write_knowledge(ALICE, f"note {n}", f"topic{n} and the words all notes share", [])
    first = context.search(ALICE, "topic7")  # the first search indexes every file once
    reads: list[Path] = []
    read_text = Path.read_text

    def counted(path: Path, *args: object, **kwargs: object) -> str:
        reads.append(path)
        return read_text(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "read_text", counted)
    again = context.search(ALICE, "topic7")
    assert [f.title for f in again] == [f.title for f in first] == ["note 7"]
    assert reads == []

    edited = context.owner_dir(ALICE) / "knowledge" / f"{safe_name('note 3')}.md"
    edited.write_text(read_text(edited).replace("topic3", "topic3 topic7 topic7"))
    found = context.search(ALICE, "topic7")
    assert [f.title for f in found] == ["note 3", "note 7"]  # it says topic7 twice
    assert reads == [edited]

    shutil.rmtree(tmp_path / INDEX_FOLDER)  # a cache: rebuilt from the files
    assert [f.title for f in context.search(ALICE, "topic7")] == ["note 3", "note 7"]
    assert len(reads) == 201
