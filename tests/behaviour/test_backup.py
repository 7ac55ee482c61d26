"""What a backup copies: every store and file of the data directory, never a file that
is being written (``.tmp-…``, renamed in place once whole) nor the lock."""

from __future__ import annotations

import json
from pathlib import Path

from spade_memory.server import backup
from spade_memory.storage.files import TEMPORARY, write_atomically


def test_a_file_being_written_is_not_backed_up(tmp_path: Path) -> None:
    """A running service writes the beads file as a temporary one renamed in place: a
    backup that listed it failed once the rename took it away."""
    data = tmp_path / "data"
    write_atomically(data / "beads" / ".beads" / "issues.jsonl", '{"id": "mem-1"}\n')
    (data / "beads" / ".beads" / f"{TEMPORARY}half.jsonl").write_text('{"id": "me')
    record = backup.backup(data, tmp_path / "copy")
    assert sorted(record["files"]) == ["beads/.beads/issues.jsonl"]
    written = json.loads((tmp_path / "copy" / "backup.json").read_text())
    assert written["files"] == record["files"]
    assert not list((tmp_path / "copy").rglob(f"{TEMPORARY}*"))
