"""What goes wrong in a beads project, for both engines."""

from __future__ import annotations

from pathlib import Path


class BeadsError(Exception):
    """A beads operation failed (bd exited with an error, or the file is not usable)."""


class IssueNotFound(BeadsError):
    """No issue has the given id."""


class BeadsFileError(BeadsError):
    """The beads file could not be written (``cause``: the OS's error, a full disk among
    them). The changes it would have held are dropped, never written by a later write."""

    def __init__(self, path: Path, cause: OSError) -> None:
        super().__init__(f"could not write {path.name}: {cause.strerror or cause}")
        self.path = path
        self.cause = cause
