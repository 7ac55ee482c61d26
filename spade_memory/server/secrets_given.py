"""Secrets a command is given (a password, a bearer token): from a file or from the
environment, never from a flag, which ``ps`` shows to every user of the machine."""

from __future__ import annotations

import os
from pathlib import Path


class Refused(Exception):
    """A setting the command cannot start with; its text is the line to print."""


def secret(file: Path | None, variable: str, what: str) -> str | None:
    """A secret from ``file`` (its first line) or the environment variable; None when
    neither gives one. Raises ``Refused`` for a file that cannot be read or is empty."""
    if file is None:
        return os.environ.get(variable) or None
    try:
        lines = file.read_text().splitlines()
    except OSError as error:
        raise Refused(f"cannot read {what} from {file}: {error.strerror}") from None
    if not lines or not lines[0].strip():
        raise Refused(f"{file} is empty; write {what} on its first line")
    return lines[0].strip()
