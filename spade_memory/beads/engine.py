"""The one interface both beads engines offer, and how one is chosen."""

from __future__ import annotations

import shutil
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Literal, Protocol

from .issue import Issue, IssueChanges, IssueFilter, NewIssue

EngineName = Literal["auto", "native", "bd"]


class BeadsError(Exception):
    """A beads operation failed (bd exited with an error, or the file is not usable)."""


class IssueNotFound(BeadsError):
    """No issue has the given id."""


class BeadsEngine(Protocol):
    """Issues in one beads project, through bd or straight from its JSONL file."""

    name: str

    async def create(self, new: NewIssue) -> Issue: ...
    async def get(self, issue_id: str) -> Issue | None: ...
    async def list_issues(self, where: IssueFilter | None = None) -> list[Issue]: ...
    async def update(self, issue_id: str, changes: IssueChanges) -> Issue: ...
    async def close(self, issue_id: str, reason: str) -> Issue: ...
    async def add_dependency(self, issue_id: str, depends_on_id: str, kind: str) -> None: ...
    async def add_label(self, issue_id: str, label: str) -> None: ...
    async def search(self, query: str, limit: int = 50) -> list[Issue]: ...
    async def ready(self, limit: int = 50) -> list[Issue]: ...

    def batch(self) -> AbstractAsyncContextManager[None]:
        """Changes made inside reach the disk together when the block ends."""
        ...


def open_engine(project: Path, engine: EngineName = "auto", prefix: str = "mem") -> BeadsEngine:
    """The engine for the beads project at ``project`` (the folder holding ``.beads``).

    ``auto`` takes bd when it is on PATH and the native engine otherwise.
    ``prefix`` names new issues only when the project has no prefix yet.
    """
    from .bd_cli import BdCliEngine
    from .native import NativeEngine

    bd = shutil.which("bd")
    if engine == "bd" or (engine == "auto" and bd is not None):
        if bd is None:
            raise BeadsError("the bd command is not on PATH")
        return BdCliEngine(project, bd)
    return NativeEngine(project / ".beads", prefix)
