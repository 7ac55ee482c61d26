"""The embedded server's account database is guarded like the stores (server/accounts.py).

A lost ``xmpp-server.db`` would let whoever logs in first take an agent's name and the
memories kept under it: `spade-memory run` refuses to start on one, `check` names it,
`backup` and `restore` bring it back, and `reset-accounts` starts afresh on purpose.
Each runs as a user runs it, in its own process.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from spade.agent import Agent

from spade_memory.server.account_database import FILE
from spade_memory.storage.manifest import Manifest
from spade_memory.testing import MemoryServiceProcess
from spade_memory.xmpp.lifecycle import WrongPassword, start_agent, stop_agent
from tests.support.command_line import in_process as spade_memory
from tests.support.command_line import one_line_naming, run_once
from tests.support.harness import start_client, unique_jid


def _remove(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


LOSSES: dict[str, Callable[[Path], None]] = {
    "missing": _remove,
    "emptied": lambda path: os.truncate(path, 0),
    "truncated to half": lambda path: os.truncate(path, path.stat().st_size // 2),
    "garbage": lambda path: path.write_bytes(os.urandom(64 * 1024)),
}


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory `spade-memory run` has run on and stopped: the agents' accounts
    are in its account database."""
    data_dir = tmp_path_factory.mktemp("ran") / "data"
    service = MemoryServiceProcess(data_dir)
    service.start()
    service.stop()
    return data_dir


def _copy(ran: Path, tmp_path: Path) -> Path:
    data_dir = tmp_path / "data"
    shutil.copytree(ran, data_dir)
    return data_dir


def test_run_records_the_account_database_in_the_manifest(ran: Path) -> None:
    assert Manifest(ran).pages(ran / FILE) > 0
    assert not Path(f"{ran / FILE}-wal").exists()  # the stop leaves one whole file


@pytest.mark.parametrize("loss", list(LOSSES))
def test_a_lost_account_database_stops_run_with_one_line(
    ran: Path, tmp_path: Path, loss: str
) -> None:
    data_dir = _copy(ran, tmp_path)
    LOSSES[loss](data_dir / FILE)
    line = one_line_naming(run_once(data_dir), str(data_dir / FILE))
    assert "spade-memory restore" in line and "spade-memory reset-accounts" in line


def test_allow_damaged_does_not_start_without_the_accounts(ran: Path, tmp_path: Path) -> None:
    data_dir = _copy(ran, tmp_path)
    _remove(data_dir / FILE)
    one_line_naming(run_once(data_dir, "--allow-damaged"), str(data_dir / FILE))


def test_check_names_a_lost_account_database(ran: Path, tmp_path: Path) -> None:
    data_dir = _copy(ran, tmp_path)
    assert spade_memory("check", str(data_dir)).returncode == 0
    _remove(data_dir / FILE)
    found = spade_memory("check", str(data_dir))
    assert found.returncode == 1
    assert f"{data_dir / FILE}: is missing" in found.stderr


@pytest.mark.parametrize("loss", ["missing", "garbage"])
def test_reset_accounts_starts_afresh_on_purpose(ran: Path, tmp_path: Path, loss: str) -> None:
    data_dir = _copy(ran, tmp_path)
    LOSSES[loss](data_dir / FILE)
    lost = (data_dir / FILE).read_bytes() if loss == "garbage" else None
    done = spade_memory("reset-accounts", "--data-dir", str(data_dir))
    assert done.returncode == 0, done.stderr
    assert "the next run starts with no accounts" in done.stdout
    kept = list(data_dir.glob(f"{FILE}.before-reset-*"))
    assert [path.read_bytes() for path in kept] == ([lost] if lost else [])
    service = MemoryServiceProcess(data_dir)
    service.start()  # a new account database, made at the agents' first login
    service.stop()
    assert Manifest(data_dir).pages(data_dir / FILE) > 0  # and guarded from now on


def test_reset_accounts_refuses_a_running_service(tmp_path: Path) -> None:
    service = MemoryServiceProcess(tmp_path / "data")
    service.start()
    try:
        refused = spade_memory("reset-accounts", "--data-dir", str(tmp_path / "data"))
    finally:
        service.stop()
    assert refused.returncode == 1 and "in use" in refused.stderr
    assert (tmp_path / "data" / FILE).exists()


async def test_a_restored_backup_gives_every_name_back_to_its_owner(tmp_path: Path) -> None:
    """alice's account is in the backup: after the database is lost and the backup
    restored, her name still needs her password (no one else can take it)."""
    data_dir, copy = tmp_path / "data", tmp_path / "backup"
    alice = unique_jid("alice")
    service = MemoryServiceProcess(data_dir)
    service.start()
    try:
        client = await start_client(alice, service.port)  # her account, made at first login
        kept = await client.memory.store_memory("fact", "alice's secret")
        await stop_agent(client)
        taken = spade_memory("backup", str(copy), "--data-dir", str(data_dir))
        assert taken.returncode == 0, taken.stderr
    finally:
        service.stop()
    _remove(data_dir / FILE)
    one_line_naming(run_once(data_dir), str(data_dir / FILE))
    put_back = spade_memory("restore", str(copy), "--data-dir", str(data_dir))
    assert put_back.returncode == 0, put_back.stderr
    service = MemoryServiceProcess(data_dir)
    service.start()
    try:
        mallory = Agent(alice, "mallory's password", port=service.port)
        with pytest.raises(WrongPassword):
            await start_agent(mallory)
        client = await start_client(alice, service.port)
        try:
            found = await client.memory.get_memory(str(kept))
            assert found is not None and found.content == "alice's secret"
        finally:
            await stop_agent(client)
    finally:
        service.stop()
