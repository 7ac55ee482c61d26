"""Long work says what it is doing: on a terminal with rich, elsewhere with one line when
it starts (the command's result ends it). And an interrupted backup leaves no
half-made folder that could pass for a backup."""

from __future__ import annotations

import io
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from spade_memory.base_memory.retrieval.model_file import once_per_machine
from spade_memory.server import backup, progress


def _data_dir(root: Path) -> Path:
    data_dir = root / "data"
    (data_dir / "context").mkdir(parents=True)
    with sqlite3.connect(data_dir / "base-memory.db") as db:
        db.execute("CREATE TABLE memories (content TEXT)")
        db.execute("INSERT INTO memories VALUES ('the user prefers Spanish')")
    (data_dir / "context" / "notes.md").write_text("a note")
    return data_dir


def test_a_backup_off_a_terminal_says_it_starts_and_what_it_did(tmp_path: Path) -> None:
    data_dir = _data_dir(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "spade_memory", "backup", str(tmp_path / "copy"),
         "--data-dir", str(data_dir)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"backing up {data_dir} ...",
        f"backed up 2 files of {data_dir} into {tmp_path / 'copy'}",
    ]


def test_an_interrupted_backup_is_removed_and_the_data_kept(tmp_path: Path) -> None:
    data_dir = _data_dir(tmp_path)
    seen: list[Path] = []

    def interrupt_at_the_second(file: Path) -> None:
        seen.append(file)
        if len(seen) == 2:
            raise KeyboardInterrupt  # Ctrl-C between two files

    with pytest.raises(KeyboardInterrupt):
        backup.backup(data_dir, tmp_path / "copy", interrupt_at_the_second)
    assert not (tmp_path / "copy").exists()
    assert backup.check(data_dir) == []
    assert len(seen) == 2


def test_a_long_step_on_a_terminal_is_a_rich_spinner_then_a_line() -> None:
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=200)
    with progress.shown_on(console), once_per_machine("preparing the embedding model"):
        assert screen.getvalue() != ""  # the spinner is drawn while the step runs
    lines = [line for line in screen.getvalue().splitlines() if "done in" in line]
    assert len(lines) == 1
    assert "preparing the embedding model: done in" in lines[0]


def test_a_long_step_off_a_terminal_is_a_line_when_it_starts_and_one_when_it_ends() -> None:
    screen = io.StringIO()
    console = Console(file=screen, width=200)
    with progress.shown_on(console), once_per_machine("preparing the embedding model"):
        assert screen.getvalue() == "preparing the embedding model ...\n"
    assert screen.getvalue().splitlines()[1].startswith("preparing the embedding model: done in")


def test_counted_work_is_a_bar_on_a_terminal_and_nothing_elsewhere() -> None:
    screen = io.StringIO()
    terminal = Console(file=screen, force_terminal=True, width=100)
    with progress.counting(terminal, "importing memories.jsonl", 250) as advance:
        for _ in range(5):
            advance(50)
    assert "importing memories.jsonl" in screen.getvalue()
    assert "250/250" in screen.getvalue()  # the bar's last frame, before it is removed

    piped = io.StringIO()
    with progress.counting(Console(file=piped, width=100), "importing", 250) as advance:
        advance(250)
    assert piped.getvalue() == ""  # a pipe or a --json reader gets the result line only
