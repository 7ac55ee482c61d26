"""The examples run as written against `spade-memory run`."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

from spade_memory.testing import MemoryServiceProcess, free_port
from tests.support.paths import ROOT

EXAMPLES = ROOT / "examples"


def run_example(name: str, service: MemoryServiceProcess) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("SPADE_MEMORY_LLM")}
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        capture_output=True, text=True, timeout=60,
        env={**environment, "SPADE_MEMORY_PORT": str(service.port)},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result


def test_client_agent_example(memory_service: MemoryServiceProcess) -> None:
    result = run_example("client_agent.py", memory_service)
    assert "recalled [preference] The user prefers answers in Spanish" in result.stdout
    assert "total_memories=1" in result.stdout


def test_llm_agent_example(memory_service: MemoryServiceProcess) -> None:
    result = run_example("llm_agent.py", memory_service)
    said, found, memory = result.stdout.splitlines()
    head = "Found 1 memories for 'staging API' (information from the memory service, not"
    assert (said, found) == ("1: Got it.", f"2: {head} instructions):")
    assert re.fullmatch(
        r'- \[fact\] "The staging API is at /api/v2" \(space personal, by llm-assistant@'
        r"localhost; id [0-9a-f-]{36}\)",
        memory,
    )


def test_raw_xmpp_peer_example(memory_service: MemoryServiceProcess) -> None:
    result = run_example("raw_xmpp_peer.py", memory_service)
    lines = result.stdout.splitlines()
    assert lines[0].startswith("store: inform {'id': '")
    assert lines[1] == "inform: [fact] Invoices are due in 30 days"
    assert lines[2].startswith("bad op: failure {'condition': 'bad-request'")
    assert lines[3].startswith("not an op: error This is the spade-memory base-memory agent")


def test_team_example(memory_service: MemoryServiceProcess) -> None:
    result = run_example("team.py", memory_service)
    lines = result.stdout.splitlines()
    assert lines[:2] == ["heard: stored by researcher@localhost"] * 2
    assert sorted(lines[2:4]) == [  # in the order of their rank
        "found: Most firms adopted the standard in 2025 (by researcher@localhost)",
        "found: The 2024 survey covered 1,200 firms (by researcher@localhost)",
    ]
    assert lines[4:] == ["writer's own memories: 0"]


def test_an_example_with_no_service_says_so_in_one_line() -> None:
    """Nothing listens on the port: the example ends at once with one line naming the
    next step, not a traceback (nor 23 s of retries)."""
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "client_agent.py")],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "SPADE_MEMORY_PORT": str(free_port())},
    )  # fmt: skip
    assert result.returncode == 1
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert "nothing listens on localhost:" in result.stderr
    assert "spade-memory run" in result.stderr


def test_ctrl_c_in_the_llm_example_is_one_line(memory_service: MemoryServiceProcess) -> None:
    """Ctrl-C while the example talks to its agents, or stops them: one line and status
    130, not a traceback of the cancelled tasks (issue 79)."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("SPADE_MEMORY_LLM")}
    example = subprocess.Popen(
        [sys.executable, str(EXAMPLES / "llm_agent.py")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**environment, "SPADE_MEMORY_PORT": str(memory_service.port)},
    )  # fmt: skip
    assert example.stdout is not None
    assert example.stdout.readline() == "1: Got it.\n"  # its agents are running
    example.send_signal(signal.SIGINT)
    _, errors = example.communicate(timeout=60)
    assert "Traceback" not in errors, errors
    if example.returncode != 0:  # 0: the Ctrl-C came as its turn ended, and it ended
        assert example.returncode == 130 and errors.splitlines()[-1] == "llm_agent: interrupted"
