"""Beads: the git-backed issue tracker the beads sync agent mirrors memories into.

One interface (``BeadsEngine``), two engines: the ``bd`` command line when it
is on PATH (``bd_cli``), and a native engine that reads and writes
``.beads/issues.jsonl`` the way bd does (``native``, ``jsonl``,
``timestamps``); ``engines.open_engine`` chooses. ``mapping`` says how a
memory is an issue. This package's own import loads no engine. It imports
``protocol`` and ``storage`` only.
"""

from spade_memory.beads.engine import BeadsEngine, EngineName
from spade_memory.beads.errors import BeadsError, IssueNotFound
from spade_memory.beads.issue import Dependency, Issue, IssueChanges, IssueFilter, NewIssue

__all__ = [
    "BeadsEngine",
    "BeadsError",
    "Dependency",
    "EngineName",
    "Issue",
    "IssueChanges",
    "IssueFilter",
    "IssueNotFound",
    "NewIssue",
]
