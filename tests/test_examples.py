"""The examples run as written against `spade-memory run`."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from spade_memory.testing import MemoryServiceProcess

EXAMPLES = Path(__file__).parent.parent / "examples"


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryServiceProcess]:
    process = MemoryServiceProcess(tmp_path_factory.mktemp("examples"))
    process.start()
    yield process
    process.stop()


def test_client_agent_example(service: MemoryServiceProcess) -> None:
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "client_agent.py")],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "SPADE_MEMORY_PORT": str(service.port)},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "recalled [preference] The user prefers answers in Spanish" in result.stdout
    assert "total_memories=1" in result.stdout
