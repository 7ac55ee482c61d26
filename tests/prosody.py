"""Prosody (Debian's package) started by the tests with the repository's configuration."""

from __future__ import annotations

import shutil
from pathlib import Path

from spade_memory.testing import ChildProcess, free_port

START = Path(__file__).parent.parent / "prosody" / "start.sh"
MISSING = (
    "Prosody is not installed; `apt-get install prosody` (Debian/Ubuntu) enables "
    "the Prosody tier (CI installs it)"
)


def installed() -> bool:
    return shutil.which("prosody") is not None


class ProsodyProcess(ChildProcess):
    """``prosody/start.sh`` on a free port with its own data directory."""

    def __init__(self, data_dir: Path):
        self.port = free_port()
        env = {"PROSODY_DATA": str(data_dir), "PROSODY_C2S_PORT": str(self.port)}
        super().__init__(["sh", str(START)], "Activated service 'c2s'", env)
