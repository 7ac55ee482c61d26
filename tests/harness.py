"""Real processes and real XMPP for the end-to-end tests.

The memory service runs as its own OS process (``python -m spade_memory run``
with the embedded XMPP server); client agents live in the test process, so
every request crosses the wire.
"""

from __future__ import annotations

import asyncio
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

from spade.agent import Agent

from spade_memory import MemoryMixin

READY_LINE = "spade-memory is ready"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class MemoryServerProcess:
    """`spade-memory run` in a child process, on free ports, with its own data directory."""

    def __init__(self, data_dir: Path, *extra_args: str) -> None:
        self.data_dir = data_dir
        self.port = free_port()
        self.s2s_port = free_port()
        self.extra_args = extra_args
        self.process: subprocess.Popen[str] | None = None
        self._drainer: threading.Thread | None = None
        self.output: list[str] = []

    def start(self, timeout: float = 30.0) -> None:
        command = [
            sys.executable, "-m", "spade_memory", "run",
            "--data-dir", str(self.data_dir),
            "--port", str(self.port), "--s2s-port", str(self.s2s_port),
            *self.extra_args,
        ]  # fmt: skip
        env = {**os.environ, "COLUMNS": "200", "PYTHONUNBUFFERED": "1"}
        self.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
        )
        lines: queue.Queue[str | None] = queue.Queue()
        self._drainer = threading.Thread(target=self._drain, args=(lines,), daemon=True)
        self._drainer.start()
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = lines.get(timeout=left)
            except queue.Empty:
                break
            if line is None:
                break
            if READY_LINE in line:
                return
        self.kill()
        raise RuntimeError("memory service did not start:\n" + "".join(self.output))

    def _drain(self, lines: queue.Queue[str | None]) -> None:
        """Read the child's output all along, or a chatty child blocks on a full pipe."""
        assert self.process is not None and self.process.stdout is not None
        for line in self.process.stdout:
            self.output.append(line)
            lines.put(line)
        lines.put(None)

    def stop(self) -> None:
        """Ctrl-C, as a user would."""
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self._reap()

    def kill(self) -> None:
        """SIGKILL: no chance to flush or close anything."""
        if self.process and self.process.poll() is None:
            self.process.kill()
        self._reap()

    def _reap(self) -> None:
        if self.process is None:
            return
        self.process.wait()
        if self._drainer is not None:
            self._drainer.join(timeout=5)
            self._drainer = None
        if self.process.stdout is not None:
            self.process.stdout.close()
        self.process = None


class ClientAgent(MemoryMixin, Agent):  # type: ignore[misc]
    """A plain SPADE agent with ``self.memory``."""


def unique_jid(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:8]}@localhost"


async def start_client(jid: str, port: int, **memory_options: object) -> ClientAgent:
    agent = ClientAgent(jid, "client-secret", port=port, **memory_options)
    await asyncio.wait_for(agent.start(auto_register=True), 20)
    return agent
