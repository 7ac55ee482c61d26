"""Shared test setup."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from spade_memory.testing import MemoryServiceProcess

# spade_llm imports litellm, which otherwise fetches a price list from the network.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@pytest.fixture(scope="session")
def memory_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryServiceProcess]:
    """`spade-memory run` in its own process (embedded XMPP server), for the whole run."""
    process = MemoryServiceProcess(tmp_path_factory.mktemp("memory-service"))
    process.start()
    yield process
    process.stop()
