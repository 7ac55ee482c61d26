"""Prosody (Debian's package) started by the tests with the repository's configuration.

In-band registration is closed there, as shipped: ``ACCOUNTS`` remembers each
running test Prosody by port, so ``harness.start`` creates an agent's account
(``prosodyctl``) before it logs in.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from spade_memory.server.registry import SERVICES
from spade_memory.server.runtime import PASSWORD_ENV
from spade_memory.testing import MemoryServiceProcess
from spade_memory.testing import ProsodyProcess as _Prosody
from tests.support.paths import ROOT

PROSODY_DIR = ROOT / "prosody"
MISSING = (
    "Prosody is not installed; `apt-get install prosody` (Debian/Ubuntu) enables "
    "the Prosody tier (CI installs it)"
)
ACCOUNTS: dict[int, _Prosody] = {}
"""Running test Prosodys by port: where an account must be created before a login."""


MEMORY_PASSWORD = "memory-agents-secret"
"""The memory agents' password on the tests' Prosodys."""
SUITE_RATE = {"PROSODY_C2S_RATE": "10mb/s"}
"""The run's shared Prosody reads each client faster than the shipped 32 kB/s: the
tests' clients send in seconds what a person sends in an hour, and waited on the limit
for seconds at a time (12 s of each identity matrix). The shipped rate is tested on a
Prosody of its own (``wire/test_prosody_config.py``)."""


def installed() -> bool:
    return shutil.which("prosody") is not None


@contextmanager
def serving(folder: Path) -> Iterator[tuple[ProsodyProcess, MemoryServiceProcess]]:
    """A Prosody of its own in ``folder`` (the repository's configuration as shipped)
    with the memory agents on it, for a test that restarts them or needs the shipped
    settings; both stopped at the end. Yields (the server, the memory service)."""
    server = ProsodyProcess(folder / "prosody", memory_agent_accounts(MEMORY_PASSWORD))
    server.start()
    try:
        service = MemoryServiceProcess(
            folder / "memory", "--external-server", port=server.port,
            env={PASSWORD_ENV: MEMORY_PASSWORD},
        )  # fmt: skip
        service.start()
        try:
            yield server, service
        finally:
            service.stop()
    finally:
        server.stop()


class ProsodyProcess(_Prosody):
    """``prosody/start.sh`` on a free port with its own data directory."""

    def __init__(self, data_dir: Path, env: dict[str, str] | None = None):
        super().__init__(PROSODY_DIR, data_dir, env)
        ACCOUNTS[self.port] = self


def memory_agent_accounts(password: str) -> dict[str, str]:
    """``start.sh``'s setting that creates the memory agents' accounts (as compose does)."""
    return {"PROSODY_ACCOUNTS": " ".join(f"{s.node}:{password}" for s in SERVICES)}


def register_on(port: int, jid: str, password: str) -> None:
    """Create ``jid``'s account when ``port`` is a test Prosody (nothing to do on the
    embedded server, whose accounts are made at first login)."""
    server = ACCOUNTS.get(port)
    if server is not None:
        server.register(jid, password)
