"""Files are private: data directories and backups 0700, files 0600, whatever the umask
(storage/private.py). Modes are read with ``os.lstat``: the tests run as root, who
could read any file anyway.

Every command runs in its own process under ``umask 000`` (everything it creates
would be world-writable), or on a directory an earlier tool left open.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from spade_memory.storage.private import tighten
from spade_memory.testing import MemoryServiceProcess
from spade_memory.xmpp.lifecycle import stop_agent
from tests.support.harness import start_client, unique_jid

OPEN_UMASK = ["sh", "-c", 'umask 000 && exec "$@"', "sh"]
"""A command prefix: what follows runs with no bit masked."""


def _modes(root: Path) -> dict[str, int]:
    """The mode of ``root`` and of everything under it (symbolic links left out)."""
    paths = [root, *root.rglob("*")]
    return {
        str(path.relative_to(root)): os.lstat(path).st_mode
        for path in paths
        if not path.is_symlink()
    }


def _open(modes: dict[str, int]) -> dict[str, str]:
    """What is not private: folders not 0700, files not 0600 (with the mode found)."""
    return {
        name: f"{stat.S_IMODE(mode):04o}"
        for name, mode in modes.items()
        if stat.S_IMODE(mode) != (0o700 if stat.S_ISDIR(mode) else 0o600)
    }


def _loosen(root: Path) -> None:
    """As an older version left a data directory: folders 0755, files 0644."""
    for path in [root, *root.rglob("*")]:
        if not path.is_symlink():
            path.chmod(0o755 if path.is_dir() else 0o644)


def spade_memory_with_open_umask(*args: str) -> subprocess.CompletedProcess[str]:
    command = [*OPEN_UMASK, sys.executable, "-m", "spade_memory", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory `spade-memory run` has run on and stopped."""
    data_dir = tmp_path_factory.mktemp("ran") / "data"
    service = MemoryServiceProcess(data_dir)
    service.start()
    service.stop()
    return data_dir


async def test_run_makes_every_file_private_whatever_the_umask(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    service = MemoryServiceProcess(data_dir)
    service.command = [*OPEN_UMASK, *service.command]
    service.start()
    try:
        client = await start_client(unique_jid("alice"), service.port)
        await client.memory.store_memory("fact", "kept in the long-term store")
        await client.memory.beads.store_memory("kept in the beads file")
        await client.memory.save_knowledge("notes", "kept in the context directory")
        await stop_agent(client)
        running = _modes(data_dir)
    finally:
        service.stop()
    stopped = _modes(data_dir)
    for name in (
        ".", "agent-password", "manifest.json", "spade-memory.lock", "spaces.db",
        "base-memory.db", "base-memory.db-wal", "interaction-memory.db", "xmpp-server.db",
        "xmpp-server.db-wal", "xmpp-certs", "xmpp-certs/ca_key.pem",
        "xmpp-certs/localhost_key.pem", "beads/.beads/issues.jsonl", "context",
    ):  # fmt: skip
        assert name in running, sorted(running)
    assert any(name.startswith("context/") and name.endswith(".md") for name in stopped)
    assert _open(running) == {}
    assert _open(stopped) == {}


def test_a_loose_data_directory_is_made_private_at_start_with_a_line(
    ran: Path, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    shutil.copytree(ran, data_dir)
    project = tmp_path / "project"  # the user's git repository: not the service's to change
    project.mkdir()
    (project / "README.md").write_text("a project")
    (data_dir / "readme-link").symlink_to(project / "README.md")
    _loosen(data_dir)
    _loosen(project)
    service = MemoryServiceProcess(data_dir, "--beads-project", str(project))
    service.start()
    service.stop()
    assert _open(_modes(data_dir)) == {}
    said = [line for line in service.output if "that others could read private" in line]
    assert len(said) == 1, service.output
    assert f"{data_dir}: made " in said[0] and "was 0644, now 0600" in said[0]
    assert stat.S_IMODE(os.stat(project).st_mode) == 0o755
    assert stat.S_IMODE(os.stat(project / "README.md").st_mode) == 0o644  # not through the link


def test_a_private_data_directory_is_not_reported(ran: Path, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    shutil.copytree(ran, data_dir)
    tighten(data_dir)
    service = MemoryServiceProcess(data_dir)
    service.start()
    service.stop()
    assert not [line for line in service.output if "others could read" in line]


def test_backup_and_restore_are_private_whatever_the_umask(ran: Path, tmp_path: Path) -> None:
    data_dir, copy, restored = tmp_path / "data", tmp_path / "backup", tmp_path / "restored"
    shutil.copytree(ran, data_dir)
    _loosen(data_dir)  # an older version's: copies must not keep its modes
    taken = spade_memory_with_open_umask("backup", str(copy), "--data-dir", str(data_dir))
    assert taken.returncode == 0, taken.stderr
    assert "backup.json" in _modes(copy) and "xmpp-server.db" in _modes(copy)
    assert _open(_modes(copy)) == {}
    _loosen(copy)  # an older version's backup
    put_back = spade_memory_with_open_umask("restore", str(copy), "--data-dir", str(restored))
    assert put_back.returncode == 0, put_back.stderr
    assert "xmpp-server.db" in _modes(restored)
    assert _open(_modes(restored)) == {}


def test_tighten_takes_group_and_other_bits_off_and_follows_no_link(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    (root / "sub" / "script").write_text("#!/bin/sh\n")
    (root / "sub" / "script").chmod(0o775)
    (outside / "file").write_text("not ours")
    (root / "link").symlink_to(outside, target_is_directory=True)
    _loosen(outside)
    root.chmod(0o777)
    done = tighten(root)
    assert {path.name: mode for path, mode in done.changed} == {
        "root": 0o777, "sub": 0o755, "script": 0o775,
    }  # fmt: skip
    assert stat.S_IMODE(os.stat(root / "sub" / "script").st_mode) == 0o700  # still runs
    assert _open(_modes(outside)) == {".": "0755", "file": "0644"}
    assert not tighten(root)  # nothing left to do
