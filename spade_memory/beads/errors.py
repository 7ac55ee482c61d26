"""What goes wrong in a beads project, for both engines."""

from __future__ import annotations


class BeadsError(Exception):
    """A beads operation failed (bd exited with an error, or the file is not usable)."""


class IssueNotFound(BeadsError):
    """No issue has the given id."""
