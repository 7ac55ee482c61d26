"""An XMPP server of a test's own, embedded (SPADE's pyjabber in its own process) or
Prosody (Debian's), for tests of what happens on the stream itself: the memory agents run
with ``--external-server`` against it, so each test can put something between them."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from benchmarks.wire import peer_process
from spade_memory.testing import ChildProcess, free_ports
from tests.support import prosody

AGENTS_PASSWORD = "stream-test-secret"
"""The memory agents' password on these servers (``PASSWORD_ENV`` of the service)."""


@dataclass
class Server:
    kind: str
    port: int
    process: ChildProcess


@pytest.fixture(params=["embedded", "prosody"])
def xmpp_server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Server]:
    """Each kind of server in turn (Prosody skipped, with one line, where not installed)."""
    if request.param == "embedded":
        port, s2s = free_ports(2)
        process: ChildProcess = peer_process("server", str(tmp_path / "xmpp"), str(port), str(s2s))
    else:
        if not prosody.installed():
            pytest.skip(prosody.MISSING)
        process = prosody.ProsodyProcess(
            tmp_path / "prosody", prosody.memory_agent_accounts(AGENTS_PASSWORD)
        )
        port = process.port
    process.start(timeout=120.0)  # generous: a loaded machine starts slowly
    yield Server(request.param, port, process)
    process.stop()
