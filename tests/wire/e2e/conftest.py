"""The end-to-end tests run on both engines.

In the default tier they run against one ``spade-memory run`` on SQLite. In the slow
tier they run again on PostgreSQL with two base memory agents and two interaction
memory agents, the second of each in a process of its own (sharing the first's
context directory and beads sync agent). The clients reach them as pools named in the
environment (``SPADE_MEMORY_BASE_POOL``, ``SPADE_MEMORY_INTERACTION_POOL``), as a
deployment's clients would, so each test's requests are spread over both agents.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from spade_memory.client.failover import BASE_POOL_ENV, INTERACTION_POOL_ENV
from spade_memory.server.runtime import PASSWORD_ENV
from spade_memory.testing import MemoryServiceProcess, PostgresServer
from tests.support.prosody import MEMORY_PASSWORD, ProsodyProcess

SECOND_BASE = "base-memory-2@localhost"
SECOND_INTERACTION = "interaction-memory-2@localhost"
POOLS = {
    BASE_POOL_ENV: f"base-memory@localhost {SECOND_BASE}",
    INTERACTION_POOL_ENV: f"interaction-memory@localhost {SECOND_INTERACTION}",
}
SECRET = "two-of-each-secret"

_DATABASES = itertools.count()

NewService = Callable[..., MemoryServiceProcess]
"""``(data_dir, *run_arguments, env=None, port=None)``: a memory service, not started."""


class TwoOfEach(MemoryServiceProcess):
    """``spade-memory run`` on a PostgreSQL database (every service, and the XMPP server
    unless told ``--external-server``), with a second process serving the same database
    as ``base-memory-2`` and ``interaction-memory-2``. It starts, stops and is killed as
    one service."""

    def __init__(
        self, data_dir: Path, *args: str, url: str, env: dict[str, str] | None = None,
        port: int | None = None,
    ) -> None:  # fmt: skip
        env = {PASSWORD_ENV: SECRET, **(env or {})}
        super().__init__(data_dir, *args, "--database", url, env=env, port=port)
        self.second = MemoryServiceProcess(
            data_dir.with_name(f"{data_dir.name}-second"), *args, "--database", url,
            "--external-server", "--services", "base-memory,interaction-memory",
            "--base-jid", SECOND_BASE, "--interaction-jid", SECOND_INTERACTION,
            "--mirror-jid", "beads-sync@localhost", "--context-dir", str(data_dir / "context"),
            env=env, port=self.port,
        )  # fmt: skip

    def start(self, timeout: float = 30.0) -> None:
        super().start(timeout)
        self.second.start(timeout)

    def stop(self, timeout: float = 15.0) -> None:
        self.second.stop(timeout)
        super().stop(timeout)

    def kill(self) -> None:
        self.second.kill()
        super().kill()


@pytest.fixture(
    scope="session", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)]
)
def engine(request: pytest.FixtureRequest) -> str:
    """Where the memories are kept: SQLite (default tier), PostgreSQL (slow tier)."""
    return str(request.param)


@pytest.fixture(autouse=True)
def pools(engine: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """On PostgreSQL, every client the test makes uses both agents of each service."""
    if engine == "postgresql":
        for variable, jids in POOLS.items():
            monkeypatch.setenv(variable, jids)


@pytest.fixture(scope="session")
def new_service(engine: str, request: pytest.FixtureRequest) -> NewService:
    """Makes a memory service that a test starts, stops or kills itself: one process on
    SQLite, or two of each agent on a new database of the tests' PostgreSQL server."""
    if engine == "sqlite":
        return MemoryServiceProcess
    postgres: PostgresServer = request.getfixturevalue("postgres_server")

    def two_of_each(
        data_dir: Path, *args: str, env: dict[str, str] | None = None, port: int | None = None
    ) -> MemoryServiceProcess:
        url = postgres.database(f"e2e_{next(_DATABASES)}")
        return TwoOfEach(data_dir, *args, url=url, env=env, port=port)

    return two_of_each


@pytest.fixture(scope="session")
def memory_service(
    engine: str, new_service: NewService, request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[MemoryServiceProcess]:  # fmt: skip
    """The service most tests share: the one of ``tests/conftest.py`` on SQLite."""
    if engine == "sqlite":
        yield request.getfixturevalue("memory_service")
        return
    yield from _running(new_service(tmp_path_factory.mktemp("memory-service")))


@pytest.fixture(scope="session")
def prosody_memory_service(
    engine: str, new_service: NewService, request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[MemoryServiceProcess]:  # fmt: skip
    """The memory agents on Prosody: those of ``tests/conftest.py`` on SQLite."""
    if engine == "sqlite":
        yield request.getfixturevalue("prosody_memory_service")
        return
    prosody: ProsodyProcess = request.getfixturevalue("prosody_server")
    password = MEMORY_PASSWORD  # the accounts prosody_server made
    for jid in (SECOND_BASE, SECOND_INTERACTION):
        prosody.register(jid, password)
    service = new_service(
        tmp_path_factory.mktemp("memory-service-prosody"), "--external-server",
        port=prosody.port, env={PASSWORD_ENV: password},
    )  # fmt: skip
    yield from _running(service)


def _running(service: MemoryServiceProcess) -> Iterator[MemoryServiceProcess]:
    """``service`` started, for as long as the fixture lasts."""
    service.start()
    try:
        yield service
    finally:
        service.stop()
