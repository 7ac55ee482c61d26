"""Every code block of the user guide runs, so that no page shows code that stopped working.

The pages are ``docs/getting-started.md`` and ``docs/guides/*.md``. A module-wide
``spade-memory run`` (embedded XMPP server, every memory agent, its own data directory,
free ports) serves them all. One test per block, named ``page#n`` (``n`` counts the
page's fenced blocks from 1, whatever their language), in page order; the blocks of a
page share one working directory, so a block may use what an earlier one stored or wrote.

What runs:

- every ```` ```python ```` block, as a whole program (``python block.py``): it must exit
  with status 0 and print no traceback. Blocks reach the service through the port in
  ``SPADE_MEMORY_PORT`` (default 5222 on a user's machine), which the test sets, and the
  service's defaults (domain ``localhost``, accounts made at first login).
- a ```` ```sh ```` block made only of ``spade-memory memories|forget|schema …`` commands
  (and ``spade-memory mcp --check …``)
  (each may start with ``NAME=value`` assignments; ``export NAME=value`` lines and
  comments are allowed between them; no pipes, redirections or ``$``): each command runs
  as the ``spade-memory`` console script, with ``--port`` of the service added to
  ``memories``, ``forget`` and ``mcp``, and must exit with status 0. Any other shell block
  (installing, ``spade-memory run``, …) is only shown.
- nothing else (``text``, ``toml``, ``json``, … blocks are only shown).

``<!-- doc-test: skip -->`` on the line before a fence leaves that block out (for a block
that cannot run here; keep such blocks rare: a skipped block is reported as skipped).

What a page says a block prints is checked: a ```` ```text ```` block right after a line
ending in ``prints:`` is the output of the runnable block before it, line for line; ``…``
stands for any text (a last line of ``…`` alone: any further lines), and ids (UUIDs)
and times (ISO 8601) match any id and any time.

How: importing SPADE, spade_memory and spade_llm takes a process 3 to 10 s, so one
helper process imports them once and forks a child per block, before any event loop or
agent exists: each block starts in a fresh process, as ``python block.py`` would, except
that those modules are already imported. A block has ``BLOCK_TIMEOUT`` seconds.
"""

from __future__ import annotations

import json
import os
import queue
import re
import shlex
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from spade_memory.testing import MemoryServiceProcess
from tests.support.paths import ROOT

DOCS = ROOT / "docs"
PAGES = ["getting-started.md", *sorted(f"guides/{p.name}" for p in DOCS.glob("guides/*.md"))]
SKIP_MARK = "<!-- doc-test: skip -->"
BLOCK_TIMEOUT = 90.0
RUNNABLE_COMMANDS = {"memories", "forget", "schema", "mcp", "--version", "--help"}
"""``spade-memory`` subcommands a shell block may run (they need no data directory;
``mcp`` only with ``--check``: it serves until stopped otherwise)."""
WITH_PORT = {"memories", "forget", "mcp"}
"""Subcommands that log in, and are given the service's ``--port``."""

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


@dataclass
class Command:
    """One ``spade-memory`` command of a shell block."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class Block:
    page: str
    number: int
    """Its place among the page's fenced blocks, from 1."""
    language: str
    code: str
    line: int
    skipped: bool
    shows: str | None = None
    """What the page says it prints (the ``text`` block after a line ending ``prints:``)."""

    @property
    def name(self) -> str:
        return f"{self.page}#{self.number}"


def fenced_blocks(page: str) -> list[Block]:
    """The fenced code blocks of a page, in order (an indented fence is dedented)."""
    lines = (DOCS / page).read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        indent, fence = opening["indent"], opening["fence"]
        info = opening["info"].strip()
        language = info.split()[0].lstrip("{.").rstrip("}") if info else ""
        skipped = index > 0 and lines[index - 1].strip() == SKIP_MARK
        start = index + 1
        index = start
        while index < len(lines) and not (
            lines[index].strip().startswith(fence[0] * len(fence))
            and lines[index].strip().strip(fence[0]) == ""
        ):
            index += 1
        body = [line.removeprefix(indent) for line in lines[start:index]]
        blocks.append(
            Block(page, len(blocks) + 1, language, "\n".join(body) + "\n", start, skipped)
        )
        index += 1
    return blocks


def shell_commands(code: str) -> list[Command] | None:
    """The ``spade-memory`` commands of a shell block, or None if it is not one that runs
    here (see the module's docstring)."""
    joined = re.sub(r"\\\n", " ", code)
    exported: dict[str, str] = {}
    commands: list[Command] = []
    for raw in joined.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if any(mark in line.split(" #")[0] for mark in "|<>;&$`"):
            return None
        words = shlex.split(line, comments=True)
        if words[0] == "export":
            if not all(_ASSIGNMENT.match(word) for word in words[1:]):
                return None
            for word in words[1:]:
                name, value = word.split("=", 1)
                exported[name] = value
            continue
        env = dict(exported)
        while words and _ASSIGNMENT.match(words[0]):
            name, value = words.pop(0).split("=", 1)
            env[name] = value
        if len(words) < 2 or words[0] != "spade-memory" or words[1] not in RUNNABLE_COMMANDS:
            return None
        if words[1] == "mcp" and "--check" not in words:
            return None
        commands.append(Command(words[1:], env))
    return commands or None


def runnable(block: Block) -> bool:
    if block.language == "python":
        return True
    return block.language in ("sh", "bash", "shell") and shell_commands(block.code) is not None


PRINTS = re.compile(r"prints:\s*$")
_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
_TIME = re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)?")
"""An ISO 8601 time, as a page shows one and a program prints one."""


def with_outputs(page: str) -> list[Block]:
    """The page's blocks, each runnable one with what the page says it prints."""
    blocks = fenced_blocks(page)
    lines = (DOCS / page).read_text(encoding="utf-8").splitlines()
    last: Block | None = None
    for block in blocks:
        told = next((line for line in reversed(lines[: block.line - 1]) if line.strip()), "")
        if block.language == "text" and last is not None and PRINTS.search(told):
            last.shows = block.code
        elif runnable(block):
            last = block
    return blocks


def printed_as_shown(shown: str, printed: str) -> bool:
    """Whether ``printed`` is what a page ``shown``, line for line (``…``: any text; any
    id for an id, any time for a time)."""
    wanted = shown.strip("\n").splitlines()
    got = [line.rstrip() for line in printed.strip("\n").splitlines()]
    if wanted and wanted[-1] == "…":  # a last line of "…" alone: and more lines
        wanted, got = wanted[:-1], got[: len(wanted) - 1]
    return len(wanted) == len(got) and all(
        re.fullmatch(_pattern(want.rstrip()), line) for want, line in zip(wanted, got, strict=True)
    )


def _pattern(shown: str) -> str:
    """A shown line as a regular expression: its text as written, but for ``…``, ids and
    times."""
    parts = []
    for piece in re.split(f"({_UUID.pattern}|{_TIME.pattern}|…)", shown):
        if piece == "…":
            parts.append(".*?")
        elif _UUID.fullmatch(piece):
            parts.append(_UUID.pattern)
        elif piece and _TIME.fullmatch(piece):
            parts.append(_TIME.pattern)
        else:
            parts.append(re.escape(piece))
    return "".join(parts)


def _params() -> Iterator[object]:
    for page in PAGES:
        if not (DOCS / page).exists():
            continue
        for block in with_outputs(page):
            if not runnable(block):
                continue
            marks = [pytest.mark.skip(reason=f"{SKIP_MARK} at line {block.line - 1}")]
            yield pytest.param(block, id=block.name, marks=marks if block.skipped else [])


# --- the process that forks one child per block ---------------------------------------

FORKER = r"""
import importlib, json, os, runpy, sys, traceback
from importlib.metadata import entry_points

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
for name in ("spade.agent", "spade_memory", "spade_llm.agent", "spade_memory.llm.agent",
             "spade_memory.llm.providers", "spade_memory.llm.drop_in", "rich"):
    try:
        importlib.import_module(name)
    except ImportError:
        pass  # only slower: the child imports it
(console_script,) = entry_points(group="console_scripts", name="spade-memory")
command_line = console_script.load()


def run(job):
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    output = os.open(job["output"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(output, 1)
    os.dup2(output, 2)
    os.chdir(job["cwd"])
    os.environ.update(job["env"])
    code = 1
    try:
        if job["kind"] == "script":
            sys.argv = [job["path"]]
            runpy.run_path(job["path"], run_name="__main__")
        else:
            sys.argv = ["spade-memory", *job["argv"]]
            sys.exit(command_line())
        code = 0
    except SystemExit as stop:
        if stop.code is None or isinstance(stop.code, int):
            code = stop.code or 0
        else:
            print(stop.code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(code)


print(json.dumps({"ready": True}), flush=True)
while line := sys.stdin.readline():
    job = json.loads(line)
    pid = os.fork()
    if pid == 0:
        run(job)
    print(json.dumps({"pid": pid}), flush=True)
    _, status = os.waitpid(pid, 0)
    print(json.dumps({"status": os.waitstatus_to_exitcode(status)}), flush=True)
"""


class Forker:
    """The helper process: ``run(job)`` forks a child for one block and waits for it."""

    def __init__(self, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", FORKER],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
        self.replies: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.replies.put(json.loads(line))
        self.replies.put(None)

    def _reply(self, timeout: float) -> dict[str, Any]:
        reply = self.replies.get(timeout=timeout)
        if reply is None:
            raise RuntimeError(f"the forking helper ended (status {self.process.wait()})")
        return reply

    def wait_ready(self, timeout: float = 120.0) -> None:
        assert self._reply(timeout) == {"ready": True}

    def run(self, job: dict[str, Any], timeout: float) -> int | None:
        """The child's exit status, or None if it was killed after ``timeout`` seconds."""
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(job) + "\n")
        self.process.stdin.flush()
        pid = int(self._reply(30.0)["pid"])
        try:
            return int(self._reply(timeout)["status"])
        except queue.Empty:
            os.kill(pid, signal.SIGKILL)
            self._reply(30.0)
            return None

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        assert self.process.stdout is not None
        self._reader.join(timeout=5)
        self.process.stdout.close()


@pytest.fixture(scope="module")
def forker() -> Iterator[Forker]:
    """The forking helper, with none of the caller's ``SPADE_MEMORY_*`` settings (the
    blocks must run on the service's defaults) and no real model configured."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPADE_MEMORY_")}
    env.update(PYTHONUNBUFFERED="1", COLUMNS="120", LITELLM_LOCAL_MODEL_COST_MAP="True")
    helper = Forker(env)
    try:
        yield helper
    finally:
        helper.close()


@pytest.fixture(scope="module")
def service(
    forker: Forker, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[MemoryServiceProcess]:
    """``spade-memory run`` for the pages (started while the helper imports)."""
    process = MemoryServiceProcess(
        tmp_path_factory.mktemp("doc-snippets-service"), "--registrations-per-minute", "0"
    )
    process.start(timeout=60.0)
    try:
        forker.wait_ready()
        yield process
    finally:
        process.stop()


@pytest.fixture(scope="module")
def workdirs(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """A page's working directory (the same for each of its blocks)."""
    made: dict[str, Path] = {}

    def workdir(page: str) -> Path:
        if page not in made:
            made[page] = tmp_path_factory.mktemp(re.sub(r"\W+", "-", page))
        return made[page]

    return workdir


def jobs(block: Block, port: int) -> list[tuple[str, dict[str, Any]]]:
    """What to run for a block: (what it is called in a failure, the forker's job)."""
    env = {"SPADE_MEMORY_PORT": str(port)}
    if block.language == "python":
        return [("the block", {"kind": "script", "env": env})]
    found: list[tuple[str, dict[str, Any]]] = []
    for command in shell_commands(block.code) or []:
        argv = command.argv + (["--port", str(port)] if command.argv[0] in WITH_PORT else [])
        job = {"kind": "command", "argv": argv, "env": {**env, **command.env}}
        found.append((shlex.join(["spade-memory", *command.argv]), job))
    return found


@pytest.mark.parametrize("block", list(_params()))
def test_block_runs(
    block: Block,
    service: MemoryServiceProcess,
    forker: Forker,
    workdirs: Callable[[str], Path],
) -> None:
    cwd = workdirs(block.page)
    script = cwd / f"block-{block.number}.py"
    if block.language == "python":
        script.write_text(block.code, encoding="utf-8")
    output = cwd / f"block-{block.number}.out"
    output.write_text("", encoding="utf-8")
    where = f"{block.name} (line {block.line} of docs/{block.page})"
    for what, job in jobs(block, service.port):
        job.update(path=str(script), cwd=str(cwd), output=str(output))
        status = forker.run(job, BLOCK_TIMEOUT)
        printed = output.read_text(encoding="utf-8", errors="replace")
        assert status is not None, f"{where}: {what} ran over {BLOCK_TIMEOUT:.0f}s:\n{printed}"
        assert status == 0, f"{where}: {what} exited with status {status}:\n{printed}"
        assert "Traceback (most recent call last)" not in printed, f"{where}: {what}:\n{printed}"
        # a reply or notice that reached no behaviour: SPADE's warning, a program's leak
        assert "No behaviour matched" not in printed, f"{where}: {what}:\n{printed}"
    if block.shows is not None:
        assert printed_as_shown(block.shows, printed), (
            f"{where} prints:\n{printed}\nwhere the page shows:\n{block.shows}"
        )


def test_every_page_has_code_that_runs() -> None:
    """A page of the guide whose blocks all stopped being collected would pass unseen."""
    assert (DOCS / "getting-started.md").exists()
    assert len(PAGES) > 1, "no page in docs/guides"
    for page in PAGES:
        assert any(runnable(block) for block in fenced_blocks(page)), f"{page}: nothing runs"
