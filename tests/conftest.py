"""Shared test setup."""

from __future__ import annotations

import asyncio
import atexit
import os
from collections.abc import AsyncIterator, Iterator

import pytest

from spade_memory.lifecycle import stop_agent
from spade_memory.server.runtime import PASSWORD_ENV
from spade_memory.testing import MemoryServiceProcess

from . import prosody
from .harness import ClientAgent, start_client, unique_jid

# spade_llm imports litellm, which otherwise fetches a price list from the network.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


_EXIT_LOOPS: list[asyncio.AbstractEventLoop] = []


def pytest_sessionstart() -> None:
    """Prepare the embedding model once, before the services the tests start (each would
    otherwise prepare its own copy at the same time on a new machine)."""
    from spade_memory.base_memory.embeddings import load_embedder

    load_embedder()


def pytest_sessionfinish() -> None:
    """litellm (imported with spade_llm) closes its HTTP clients at exit, on the current
    event loop; pytest-asyncio leaves its closed loop current, so litellm's closing
    coroutine was never run ("never awaited"). Give it an open loop to run on."""
    _EXIT_LOOPS.append(asyncio.new_event_loop())
    asyncio.set_event_loop(_EXIT_LOOPS[-1])


@atexit.register  # registered before litellm's handler, so it runs after it
def _close_the_exit_loop() -> None:
    for loop in _EXIT_LOOPS:
        loop.close()


@pytest.fixture(scope="session")
def memory_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryServiceProcess]:
    """`spade-memory run` in its own process (embedded XMPP server), for the whole run."""
    process = MemoryServiceProcess(tmp_path_factory.mktemp("memory-service"))
    process.start()
    yield process
    process.stop()


@pytest.fixture(scope="session")
def prosody_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[prosody.ProsodyProcess]:
    """Debian's Prosody with the repository's configuration, for the whole run."""
    if not prosody.installed():
        pytest.skip(prosody.MISSING)
    server = prosody.ProsodyProcess(
        tmp_path_factory.mktemp("prosody"), prosody.memory_agent_accounts("memory-agents-secret")
    )
    server.start()
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
        env={PASSWORD_ENV: "memory-agents-secret"},
    )
    process.start()
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
