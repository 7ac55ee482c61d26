"""The ``spade-memory`` command, run as its entry point runs it, in this process or in
one of its own.

``in_process`` is what most tests of the command line take: the entry point's
``main`` in a thread of its own (its own event loop, as a fresh process would have),
with its standard streams, environment, umask and loggers given back afterwards. It
spends none of the second a new interpreter spends importing the package.
``in_a_process`` runs a real ``python -m spade_memory``, and ``run_once`` a ``run``
expected to stop at once (forked from a process with its modules loaded): for the
tests that need a process (exit status on a signal, a terminal, what a fresh
interpreter loads, ``run`` itself)."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from spade_memory.server.entry import main
from spade_memory.testing import free_ports
from spade_memory.warm_start import WarmProcess

RAN_WITHIN = 120.0
"""Seconds a command may take on a loaded machine before the test gives up on it."""
_ONE_AT_A_TIME = threading.Lock()
"""The streams and the environment are the process's: one command at a time."""


@dataclass(frozen=True)
class Ran:
    """What a command did, as ``subprocess.CompletedProcess`` says it."""

    returncode: int
    stdout: str
    stderr: str


def in_process(
    *argv: str, env: Mapping[str, str] | None = None, stdin: str | None = None,
    unset: tuple[str, ...] = (),
) -> Ran:  # fmt: skip
    """``spade-memory ARGV`` through its entry point in this process, with ``env`` added
    to the environment (and ``unset`` taken out of it) and ``stdin`` (None: empty) as its
    standard input. Returns its exit status and what it printed. Raises
    ``TimeoutError`` past ``RAN_WITHIN``."""
    out, err = io.StringIO(), io.StringIO()
    with (
        _ONE_AT_A_TIME,
        _environment(env or {}, unset),
        _streams(io.StringIO(stdin or ""), out, err),
        _kept_process_state(),
    ):
        status = _in_a_thread(list(argv))
    return Ran(status, out.getvalue(), err.getvalue())


def _in_a_thread(argv: list[str]) -> int:
    """``main(argv)``'s status, run in a daemon thread of its own; raises ``TimeoutError``
    past ``RAN_WITHIN`` (a command that hangs fails its test, and its thread, left
    behind, keeps neither the run nor the interpreter's exit waiting)."""
    outcome: list[int | BaseException] = []

    def command() -> None:
        try:
            outcome.append(_status_of(argv))
        except BaseException as error:  # handed to the test
            outcome.append(error)

    thread = threading.Thread(target=command, name="spade-memory-command", daemon=True)
    thread.start()
    thread.join(RAN_WITHIN)
    if not outcome:
        raise TimeoutError(f"spade-memory {' '.join(argv)} still running after {RAN_WITHIN:.0f}s")
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return outcome[0]


def in_a_process(
    *argv: str, env: Mapping[str, str] | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m spade_memory ARGV`` in a process of its own, ``env`` added to this
    process's environment. Returns the finished process."""
    return subprocess.run(
        [sys.executable, "-m", "spade_memory", *argv], input=stdin, capture_output=True,
        text=True, timeout=RAN_WITHIN, env={**os.environ, **(env or {})},
    )  # fmt: skip


def _status_of(argv: list[str]) -> int:
    """The exit status ``main`` returns, or the one argparse exits with."""
    try:
        return main(argv)
    except SystemExit as exit:
        code = exit.code
        return code if isinstance(code, int) else (0 if code is None else 1)


@contextlib.contextmanager
def _environment(added: Mapping[str, str], removed: tuple[str, ...]) -> Iterator[None]:
    before = {name: os.environ.get(name) for name in (*added, *removed)}
    for name in removed:
        os.environ.pop(name, None)
    os.environ.update(added)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextlib.contextmanager
def _streams(stdin: io.StringIO, out: io.StringIO, err: io.StringIO) -> Iterator[None]:
    kept = sys.stdin
    sys.stdin = stdin
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            yield
    finally:
        sys.stdin = kept


@contextlib.contextmanager
def _kept_process_state() -> Iterator[None]:
    """The umask the command tightens and the root logger it configures, given back."""
    umask = os.umask(0o022)
    os.umask(umask)
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    try:
        yield
    finally:
        os.umask(umask)
        root.setLevel(level)
        root.handlers[:] = handlers


SHELL_PASSWORD = "shell-secret"
"""The password the shell's agents log in with (their accounts are made at the first
login, on the embedded server)."""


def shell(
    port: int, jid: str, *argv: str, stdin: str | None = None,
    password: str = SHELL_PASSWORD, columns: int = 200,
) -> Ran:  # fmt: skip
    """``spade-memory ARGV --jid JID --port PORT`` in this process, as ``jid`` logged in
    with ``password``, its tables ``columns`` wide."""
    env = {"SPADE_MEMORY_AGENT_PASSWORD": password, "COLUMNS": str(columns)}
    return in_process(*argv, "--jid", jid, "--port", str(port), env=env, stdin=stdin)


def ok(result: Ran | subprocess.CompletedProcess[str]) -> str:
    """What a command that succeeded printed (it fails the test otherwise)."""
    assert result.returncode == 0, result.stderr
    return result.stdout


def answer(port: int, jid: str, *argv: str, stdin: str | None = None) -> Any:
    """The JSON a shell command prints with ``--json``."""
    return json.loads(ok(shell(port, jid, *argv, "--json", stdin=stdin)))


def one_line_naming(result: Ran | subprocess.CompletedProcess[str], named: str) -> str:
    """The one ``spade-memory:`` line a failed command printed, which names ``named``
    (no traceback)."""
    assert result.returncode != 0, result.stdout
    assert "Traceback" not in result.stderr + result.stdout
    lines = [line for line in result.stderr.splitlines() if line.startswith("spade-memory:")]
    assert len(lines) == 1, result.stderr
    assert named in lines[0], lines[0]
    return lines[0]


def loaded_by(statement: str) -> list[str]:
    """The modules loaded by running ``statement`` in a fresh interpreter."""
    script = f"{statement}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    return list(json.loads(out.splitlines()[-1]))


def run_once(data_dir: Path, *args: str, env: Mapping[str, str] | None = None) -> Ran:
    """``spade-memory run`` on ``data_dir`` and free ports, ``env`` added to the
    environment, in a process of its own (forked warm: ``warm_start``), for a test that
    expects it to stop at once; waits for it to end. Raises ``TimeoutError`` past
    ``RAN_WITHIN``."""
    port, s2s = free_ports(2)
    argv = ["run", "--data-dir", str(data_dir), "--port", str(port), "--s2s-port", str(s2s)]
    child = WarmProcess([*argv, *args], {**os.environ, **(env or {})}, errors_apart=True)
    streams: dict[str, str] = {}

    def read(name: str, stream: IO[str] | None) -> None:
        streams[name] = stream.read() if stream is not None else ""

    readers = [
        threading.Thread(target=read, args=(name, getattr(child, name)), daemon=True)
        for name in ("stdout", "stderr")
    ]
    for reader in readers:
        reader.start()
    try:
        status = child.wait(RAN_WITHIN)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
        raise TimeoutError(
            f"spade-memory {' '.join(argv)} still running after {RAN_WITHIN:.0f}s"
        ) from None
    finally:
        for reader in readers:
            reader.join(RAN_WITHIN)
        child.close()
    return Ran(status, streams.get("stdout", ""), streams.get("stderr", ""))


EXTRAS = ("numpy", "onnxruntime", "faiss")
"""What the ``embeddings`` extra installs and word search must not need."""


def hidden(folder: Path, modules: tuple[str, ...] = EXTRAS) -> dict[str, str]:
    """The environment of a child process to which ``modules`` are not installed."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(
        f"import sys\n\nsys.modules.update(dict.fromkeys({modules!r}))\n"
    )
    path = os.pathsep.join(p for p in (str(folder), os.environ.get("PYTHONPATH")) if p)
    return {"PYTHONPATH": path}
