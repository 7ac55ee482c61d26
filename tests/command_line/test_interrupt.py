"""Ctrl-C at any moment of `spade-memory run` ends it soon, with one line and no
traceback: while it starts, while it prepares the embedding model (the first start on
a machine, made to happen here with an empty model cache), and once it is ready.

`spade-memory run` runs in its own process, as a user starts it; each test waits on a
condition (a file, a line), never on a fixed time, and the bound on the exit is
generous (the model's preparation alone takes far longer than it).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

import pytest

from spade_memory.base_memory.retrieval import model_file
from spade_memory.server.lock import LOCK
from spade_memory.server.runtime import EXIT_AT_ONCE, INTERRUPTED_START
from spade_memory.storage.connection import Database, open_migrated
from spade_memory.testing import READY_LINE, free_port, free_ports

EXIT_WITHIN = 10.0
"""Seconds from the signal to the end of the process (it needs well under one)."""
PREPARING = "preparing the embedding model"


class Run:
    """`spade-memory run` with its stdout read all along and its stderr kept apart."""

    def __init__(self, data_dir: Path, env: dict[str, str]) -> None:
        port, s2s = free_ports(2)
        command = [
            sys.executable, "-m", "spade_memory", "run", "--data-dir", str(data_dir),
            "--port", str(port), "--s2s-port", str(s2s),
        ]  # fmt: skip
        self.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "200", **env},
        )  # fmt: skip
        self.lines: list[str] = []
        self.errors: list[str] = []
        self._readers = [
            threading.Thread(target=self._read, args=(self.process.stdout, self.lines)),
            threading.Thread(target=self._read, args=(self.process.stderr, self.errors)),
        ]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _read(stream: IO[str] | None, into: list[str]) -> None:
        """Read all along, or a chatty child would block on a full pipe."""
        assert stream is not None
        for line in stream:
            into.append(line)

    def wait_for(self, condition: Callable[[], bool], what: str, timeout: float = 300.0) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if self.process.poll() is not None:
                pytest.fail(f"the service ended before {what}: {self.lines}")
            if time.monotonic() > deadline:
                pytest.fail(f"no {what} within {timeout:.0f}s: {self.lines}")
            time.sleep(0.05)

    def said(self, text: str) -> bool:
        return any(text in line for line in self.lines)

    def interrupt(self) -> tuple[int, str]:
        """SIGINT; the exit status and stderr, failing if it takes over ``EXIT_WITHIN``."""
        self.process.send_signal(signal.SIGINT)
        try:
            status = self.process.wait(timeout=EXIT_WITHIN)
        except subprocess.TimeoutExpired:
            pytest.fail(f"still running {EXIT_WITHIN:.0f}s after Ctrl-C: {self.lines}")
        for reader in self._readers:
            reader.join(timeout=5)
        return status, "".join(self.errors)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        for reader in self._readers:
            reader.join(timeout=5)
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture
def runs() -> Iterator[Callable[..., Run]]:
    started: list[Run] = []

    def start(data_dir: Path, **env: str) -> Run:
        started.append(Run(data_dir, env))
        return started[-1]

    yield start
    for run in started:
        run.kill()


def _one_line_interrupted(status: int, stderr: str) -> None:
    """One line on stderr, no traceback, the status of Ctrl-C."""
    assert "Traceback" not in stderr
    assert stderr.splitlines() == [f"spade-memory: {INTERRUPTED_START}"]
    assert status == EXIT_AT_ONCE


def test_ctrl_c_while_starting(tmp_path: Path, runs: Callable[..., Run]) -> None:
    data_dir = tmp_path / "data"
    run = runs(data_dir)
    run.wait_for(lambda: (data_dir / LOCK).exists(), "lock on the data directory")
    status, stderr = run.interrupt()  # the agents' logins are still seconds away
    _one_line_interrupted(status, stderr)
    assert not run.said(READY_LINE)


def test_ctrl_c_while_the_model_is_prepared(tmp_path: Path, runs: Callable[..., Run]) -> None:
    pytest.importorskip("onnx", reason="the model is prepared only with the embeddings extra")
    cache = tmp_path / "empty-cache"
    run = runs(tmp_path / "data", SPADE_MEMORY_CACHE=str(cache))
    run.wait_for(lambda: run.said(PREPARING), "progress line for the model's preparation")
    status, stderr = run.interrupt()
    _one_line_interrupted(status, stderr)
    assert not run.said(READY_LINE)
    assert not (cache / "all-MiniLM-L6-v2-int8-dynamic.onnx").exists()  # never half-made
    # the scratch folder the preparation leaves is removed by a later one, once abandoned
    left = list(cache.iterdir())
    assert all(path.name.startswith(model_file.SCRATCH) for path in left)
    for path in left:
        os.utime(path, (0, 0))
    model_file._remove_abandoned_scratch(cache)
    assert list(cache.iterdir()) == []


def test_ctrl_c_once_ready(tmp_path: Path, runs: Callable[..., Run]) -> None:
    run = runs(tmp_path / "data")
    run.wait_for(lambda: run.said(READY_LINE), "ready line")
    status, stderr = run.interrupt()
    assert (status, stderr) == (0, "")
    assert run.lines[-1].strip() == "stopped."


IN_IMPORTS = """
import importlib.abc, pathlib, sys, time

class HeldImport(importlib.abc.MetaPathFinder):
    '''Holds the import of SPADE, the command's first heavy one, for a minute.'''

    def find_spec(self, name, path, target=None):
        if name == "spade":
            pathlib.Path(sys.argv[1]).touch()
            time.sleep(60)
        return None

sys.meta_path.insert(0, HeldImport())
from spade_memory.server.entry import main

sys.exit(main(["run", "--data-dir", sys.argv[2], "--port", sys.argv[3]]))
"""


def _as_from_a_terminal() -> None:
    """SIGINT as a terminal's Ctrl-C finds it: a suite started in the background of a
    shell without job control (``cmd &``) hands its children SIGINT ignored, and Python
    then leaves it ignored (the other commands here take the signal themselves)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_while_the_command_imports(tmp_path: Path) -> None:
    """The command's own modules are still being imported (held there by a finder, so
    the signal cannot miss that moment): one line and status 130, no traceback."""
    marker = tmp_path / "importing-spade"
    child = subprocess.Popen(
        [sys.executable, "-c", IN_IMPORTS, str(marker), str(tmp_path / "data"),
         str(free_port())],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=_as_from_a_terminal,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert child.poll() is None, child.communicate()
            assert time.monotonic() < deadline, "the command never imported SPADE"
            time.sleep(0.05)
        child.send_signal(signal.SIGINT)
        _, stderr = child.communicate(timeout=EXIT_WITHIN)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()  # and its pipes closed
    assert child.returncode == 130, stderr
    assert stderr.splitlines() == ["spade-memory: interrupted"], stderr


async def test_a_migration_ended_without_its_transaction_keeps_its_own_error(
    tmp_path: Path,
) -> None:
    # a Ctrl-C while a migration's COMMIT ran on the connection's thread: the cleanup's
    # ROLLBACK then failed ("no transaction is active"), and that error was reported in
    # place of the interruption (seen once in CI); a migration that commits, then fails,
    # leaves the connection in the same state
    async def commits_then_stops(db: Database) -> None:
        await db.execute("CREATE TABLE t (x INTEGER)")
        await db.execute("COMMIT")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        await open_migrated(tmp_path / "store.db", [commits_then_stops])
