"""Beads: the git-backed issue tracker the beads sync agent mirrors memories into.

One interface (``BeadsEngine``), two engines: the ``bd`` command line when it
is on PATH, and a native engine that reads and writes ``.beads/issues.jsonl``
the way bd does.
"""

import shutil
from pathlib import Path

from .bd_cli import BdCliEngine
from .engine import BeadsEngine, EngineName
from .errors import BeadsError, IssueNotFound
from .issue import Dependency, Issue, IssueChanges, IssueFilter, NewIssue
from .native import NativeEngine


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


__all__ = [
    "BdCliEngine",
    "BeadsEngine",
    "BeadsError",
    "Dependency",
    "EngineName",
    "Issue",
    "IssueChanges",
    "IssueFilter",
    "IssueNotFound",
    "NativeEngine",
    "NewIssue",
    "open_engine",
]
