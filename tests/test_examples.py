"""The examples run as written against `spade-memory run`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from spade_memory.testing import MemoryServiceProcess

EXAMPLES = Path(__file__).parent.parent / "examples"


def test_client_agent_example(memory_service: MemoryServiceProcess) -> None:
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "client_agent.py")],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "SPADE_MEMORY_PORT": str(memory_service.port)},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "recalled [preference] The user prefers answers in Spanish" in result.stdout
    assert "total_memories=1" in result.stdout
