"""Beads: the git-backed issue tracker the beads sync agent mirrors memories into.

One interface (``BeadsEngine``), two engines: the ``bd`` command line when it
is on PATH, and a native engine that reads and writes ``.beads/issues.jsonl``
the way bd does.
"""

from .engine import BeadsEngine, open_engine
from .issue import Dependency, Issue, IssueChanges, IssueFilter, NewIssue

__all__ = [
    "BeadsEngine",
    "Dependency",
    "Issue",
    "IssueChanges",
    "IssueFilter",
    "NewIssue",
    "open_engine",
]
