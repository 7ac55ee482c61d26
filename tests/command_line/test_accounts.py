"""``spade-memory accounts`` (server/accounts.py, server/account_admin.py): the embedded
server's accounts listed, given a new password and deleted while `spade-memory run`
serves, each verb through the command's entry point; the guard of the account
database still holds afterwards; and a refused password says the next step."""

from __future__ import annotations

import collections
import re
import sqlite3
from pathlib import Path

import pytest
from spade.agent import Agent

from spade_memory.server.account_database import FILE
from spade_memory.storage.manifest import Manifest
from spade_memory.testing import MemoryServiceProcess
from spade_memory.xmpp.lifecycle import WrongPassword, start_agent, stop_agent
from tests.support.command_line import Ran, in_process
from tests.support.harness import unique_jid
from tests.support.paths import ROOT

PASSWORD_ENV = "SPADE_MEMORY_AGENT_PASSWORD"


def accounts(*args: str, password: str | None = None, stdin: str = "", columns: int = 80) -> Ran:
    """``spade-memory accounts ARGS`` through its entry point (no terminal: stdin is not
    one), its tables ``columns`` wide."""
    env = {"COLUMNS": str(columns)} | ({} if password is None else {PASSWORD_ENV: password})
    return in_process("accounts", *args, env=env, stdin=stdin, unset=(PASSWORD_ENV,))


async def log_in(jid: str, password: str, port: int) -> None:
    """Log in as ``jid`` (made at its first login) and out again; raises ``WrongPassword``."""
    agent = Agent(jid, password, port=port)
    await start_agent(agent)
    await stop_agent(agent)


def _hashes(data_dir: Path) -> dict[str, str]:
    with sqlite3.connect(data_dir / FILE) as db:
        return {
            name: hashed for name, hashed in db.execute("SELECT jid, hash_pwd FROM credentials")
        }


async def test_list_shows_every_account_and_when_made_never_a_hash(
    memory_service: MemoryServiceProcess,
) -> None:
    jid = unique_jid("listed")
    await log_in(jid, "listed-secret", memory_service.port)
    listed = accounts("list", "--data-dir", str(memory_service.data_dir))
    assert listed.returncode == 0, listed.stderr
    row = next(line for line in listed.stdout.splitlines() if jid in line)
    assert re.search(r"20\d\d-\d\d-\d\d \d\d:\d\d:\d\d", row), row  # when it was made
    # at 80 columns the last column may wrap (the names and times never do): read it wide
    wide = accounts("list", "--data-dir", str(memory_service.data_dir), columns=200).stdout
    agent_row = next(line for line in wide.splitlines() if "base-memory@localhost" in line)
    assert "base memory agent" in agent_row
    assert "sha256$" not in listed.stdout
    assert not any(
        hashed[-16:] in listed.stdout for hashed in _hashes(memory_service.data_dir).values()
    )


@pytest.mark.parametrize("given", ["environment", "stdin"])
async def test_set_password_holds_from_the_next_login_while_the_service_runs(
    memory_service: MemoryServiceProcess, given: str
) -> None:
    jid = unique_jid("reset")
    await log_in(jid, "first-secret", memory_service.port)
    where = ("set-password", jid, "--data-dir", str(memory_service.data_dir))
    if given == "environment":
        done = accounts(*where, password="second-secret")
    else:
        done = accounts(*where, stdin="second-secret\n")
    assert done.returncode == 0, done.stderr
    assert "second-secret" not in done.stdout + done.stderr
    with pytest.raises(WrongPassword) as refused:
        await log_in(jid, "first-secret", memory_service.port)
    assert f"`spade-memory accounts set-password {jid}`" in str(refused.value)
    assert "registered with another password" in str(refused.value)
    await log_in(jid, "second-secret", memory_service.port)


async def test_delete_asks_first_then_frees_the_name(memory_service: MemoryServiceProcess) -> None:
    jid = unique_jid("deleted")
    data_dir = str(memory_service.data_dir)
    await log_in(jid, "old-secret", memory_service.port)
    unconfirmed = accounts("delete", jid, "--data-dir", data_dir)
    assert unconfirmed.returncode == 1 and "--yes" in unconfirmed.stderr
    assert jid.split("@")[0] in _hashes(memory_service.data_dir)
    done = accounts("delete", jid, "--data-dir", data_dir, "--yes")
    assert done.returncode == 0, done.stderr
    assert jid.split("@")[0] not in _hashes(memory_service.data_dir)
    await log_in(jid, "new-owner-secret", memory_service.port)  # registered afresh
    again = accounts("delete", unique_jid("nobody"), "--data-dir", data_dir, "--yes")
    assert again.returncode == 1 and "has no account" in again.stderr


@pytest.mark.parametrize("verb", [["set-password"], ["delete", "--yes"]])
def test_the_memory_agents_accounts_need_force(
    memory_service: MemoryServiceProcess, verb: list[str]
) -> None:
    before = _hashes(memory_service.data_dir)
    refused = accounts(
        *verb, "base-memory@localhost", "--data-dir", str(memory_service.data_dir),
        password="taken-over",
    )  # fmt: skip
    assert refused.returncode == 1
    assert "--force" in refused.stderr and len(refused.stderr.splitlines()) == 1
    assert _hashes(memory_service.data_dir) == before


def test_bad_input_is_one_line(memory_service: MemoryServiceProcess, tmp_path: Path) -> None:
    data_dir = str(memory_service.data_dir)
    for args, said in (
        (["list", "--data-dir", str(tmp_path / "none")], "not a data directory"),
        (["set-password", "someone@example.org", "--data-dir", data_dir], "--domain"),
        (["set-password", unique_jid("nobody"), "--data-dir", data_dir], "has no account"),
    ):
        failed = accounts(*args, password="x")
        assert failed.returncode == 1, failed.stdout
        assert len(failed.stderr.splitlines()) == 1 and said in failed.stderr, failed.stderr
    empty = accounts("set-password", unique_jid("x"), "--data-dir", data_dir, stdin="\n")
    assert empty.returncode == 1 and PASSWORD_ENV in empty.stderr


async def test_the_guard_holds_after_changes_made_while_stopped(tmp_path: Path) -> None:
    """Accounts changed with the service stopped: the manifest follows the file, and the
    next run starts on it (the guard of issue 47 still finds what the file held)."""
    data_dir = tmp_path / "data"
    service = MemoryServiceProcess(data_dir)
    service.start()
    jids = [unique_jid(f"kept{number}") for number in range(3)]
    try:
        for jid in jids:
            await log_in(jid, "secret", service.port)
    finally:
        service.stop()
    assert accounts("delete", jids[0], "--data-dir", str(data_dir), "--yes").returncode == 0
    assert (
        accounts("set-password", jids[1], "--data-dir", str(data_dir), password="new").returncode
        == 0
    )
    with sqlite3.connect(data_dir / FILE) as db:
        pages = int(db.execute("PRAGMA page_count").fetchone()[0])
    assert Manifest(data_dir).pages(data_dir / FILE) == pages
    service = MemoryServiceProcess(data_dir)
    service.start()
    try:
        await log_in(jids[1], "new", service.port)
        await log_in(jids[2], "secret", service.port)
    finally:
        service.stop()


def test_examples_and_snippets_never_give_one_jid_two_passwords() -> None:
    """A reader runs the examples and then the README's and the guides' snippets against
    one service: a JID they share must have one password, or the second login is refused."""
    made = re.compile(
        r"""(?<![.\w])[A-Z]\w*\(\s*f?["']([\w.-]+)@(?:localhost|\{domain\})["'],\s*"""
        r"""(?:password=)?["']([^"'\n]+)["']"""
    )
    places = [ROOT / "README.md", *(ROOT / "examples").glob("*.py"), *(ROOT / "docs").rglob("*.md")]
    passwords: dict[str, set[str]] = collections.defaultdict(set)
    for place in places:
        for found in made.finditer(place.read_text(encoding="utf-8")):
            passwords[found.group(1)].add(f"{found.group(2)!r} ({place.relative_to(ROOT)})")
    assert passwords["assistant"]  # the pattern still finds the README's agent
    clashes = {
        name: sorted(told)
        for name, told in passwords.items()
        if len({t.split(" (")[0] for t in told}) > 1
    }
    assert not clashes
