"""Stopping never hangs: each step of the stop is bounded and runs whatever failed
before it, a thread left alive is named and the process exits anyway, and a second
signal ends the process at once. `spade-memory run` in its own process, as a user
starts it; the subprocess timeouts only guard against a hang."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.wire import peer_process
from spade_memory.server.runtime import EXIT_AT_ONCE, PASSWORD_ENV
from spade_memory.testing import ChildProcess, MemoryServiceProcess, free_ports
from spade_memory.xmpp.lifecycle import stop_agent
from tests.support.harness import start_client, unique_jid

HANGING_CLOSE = """
import asyncio, sys
from spade_memory.interaction.store import InteractionStore
from spade_memory.server import cli, runtime

async def close_forever(self):
    await asyncio.sleep(3600)

InteractionStore.close = close_forever  # the interaction store never closes
runtime.STEP_SECONDS = cli.STEP_SECONDS = 1.0
sys.exit(cli.main(sys.argv[1:]))
"""


def test_a_step_that_hangs_is_abandoned_and_the_rest_of_the_stop_runs(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    service = MemoryServiceProcess(data_dir)
    service.command[1:3] = ["-c", HANGING_CLOSE]  # python -c ... run --data-dir ...
    service.start()
    assert service.process is not None
    service.process.send_signal(signal.SIGINT)
    status = service.process.wait(timeout=120)
    output = "".join(service.output)
    service.stop()
    assert status == 1
    assert "spade-memory: a step of the stop took over 1s and was abandoned" in output
    # the store whose close hung keeps its connection thread: named, and the process ends
    assert "spade-memory: still running after the stop:" in output
    # steps after the hung one ran: the base memory store closed (SQLite removes the
    # WAL file when the last connection closes); the hung store's is still there
    assert not (data_dir / "base-memory.db-wal").exists()
    assert (data_dir / "interaction-memory.db-wal").exists()


async def test_a_service_that_consolidated_stops_at_once_and_exits_0(tmp_path: Path) -> None:
    """The thread where consolidation compares memories ends with its store: an idle
    one used to keep the process alive two seconds past "stopped.", named, exit 1."""
    service = MemoryServiceProcess(tmp_path / "data")
    service.start()
    assert service.process is not None
    client = await start_client(unique_jid("tidy"), service.port)
    try:
        for text in ("the cat is called Tom", "The cat is called Tom."):
            await client.memory.store_memory("fact", text)
        planned = await client.memory.consolidate_memories(dry_run=True)
        assert planned is not None and planned.compared == 2
    finally:
        await stop_agent(client)
        service.process.send_signal(signal.SIGINT)
        status = service.process.wait(timeout=120)
        output = "".join(service.output)
        service.stop()
    assert status == 0, output
    assert "still running after the stop" not in output


@pytest.fixture
def stalled_server(tmp_path: Path) -> Iterator[tuple[ChildProcess, MemoryServiceProcess]]:
    """The memory agents on an XMPP server of their own, which the test can SIGSTOP."""
    port, s2s = free_ports(2)
    server = peer_process("server", str(tmp_path / "xmpp"), str(port), str(s2s))
    server.start()
    service = MemoryServiceProcess(
        tmp_path / "memory", "--external-server", port=port, env={PASSWORD_ENV: "stop-test"}
    )
    try:
        service.start(timeout=60)
        yield server, service
    finally:
        if server.process is not None:
            os.kill(server.process.pid, signal.SIGCONT)
        service.kill()
        server.stop()


def _pause(server: ChildProcess) -> None:
    assert server.process is not None
    os.kill(server.process.pid, signal.SIGSTOP)  # every disconnect now waits for its timeout


def test_a_stop_against_a_stalled_server_ends_by_itself(
    stalled_server: tuple[ChildProcess, MemoryServiceProcess],
) -> None:
    server, service = stalled_server
    _pause(server)
    assert service.process is not None
    service.process.send_signal(signal.SIGINT)
    assert service.process.wait(timeout=120) == 0
    assert "stopped." in "".join(service.output)


def test_a_second_signal_exits_at_once(
    stalled_server: tuple[ChildProcess, MemoryServiceProcess],
) -> None:
    server, service = stalled_server
    _pause(server)  # the first signal's stop now takes seconds (a disconnect per agent)
    assert service.process is not None
    service.process.send_signal(signal.SIGINT)
    try:
        service.process.wait(timeout=0.5)
    except subprocess.TimeoutExpired:
        pass
    else:
        pytest.fail("the stop ended before the second signal could be sent")
    service.process.send_signal(signal.SIGTERM)
    assert service.process.wait(timeout=30) == EXIT_AT_ONCE
    assert "stopped." not in "".join(service.output)
