"""Which engine serves a beads project: bd when it is on PATH, else the native one."""

from __future__ import annotations

import shutil
from pathlib import Path

from spade_memory.beads.bd_cli import BdCliEngine
from spade_memory.beads.engine import BeadsEngine, EngineName
from spade_memory.beads.errors import BeadsError
from spade_memory.beads.native import NativeEngine


def open_engine(project: Path, engine: EngineName = "auto", prefix: str = "mem") -> BeadsEngine:
    """The engine for the beads project at ``project`` (the folder holding ``.beads``).

    ``auto`` takes bd when it is on PATH and the native engine otherwise.
    ``prefix`` names new issues only when the project has no prefix yet.
    """
    bd = shutil.which("bd")
    if engine == "bd" or (engine == "auto" and bd is not None):
        if bd is None:
            raise BeadsError("the bd command is not on PATH")
        return BdCliEngine(project, bd)
    return NativeEngine(project / ".beads", prefix)
