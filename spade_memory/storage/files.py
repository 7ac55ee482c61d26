"""Files replaced whole, so a crash leaves the old version or the new one, never half."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

TEMPORARY = ".tmp-"
"""How the name of a file being written starts (it is renamed in place once whole)."""


def write_atomically(path: Path, text: str) -> None:
    """temp file → fsync → rename → fsync of the folder (so the rename is durable too)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=TEMPORARY, suffix=path.suffix)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)
