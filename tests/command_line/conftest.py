"""Fixtures the tests of the command line share."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from spade_memory.testing import MemoryServiceProcess
from tests.support.harness import unique_jid


@pytest.fixture
def me(memory_service: MemoryServiceProcess) -> Iterator[str]:
    """A new agent's JID (its account is made at its first login, on the embedded server)."""
    yield unique_jid("shell")
