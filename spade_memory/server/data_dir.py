"""Where a command finds the data directory when ``--data-dir`` is not given."""

from __future__ import annotations

import os
from pathlib import Path

DATA_ENV = "SPADE_MEMORY_DATA"


def default_data_dir() -> Path:
    """``$SPADE_MEMORY_DATA``, else ``$XDG_DATA_HOME/spade-memory``, else
    ``~/.local/share/spade-memory``."""
    if os.environ.get(DATA_ENV):
        return Path(os.environ[DATA_ENV])
    xdg = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(xdg) / "spade-memory"


def env_path(name: str) -> Path | None:
    """The path in the environment variable ``name``, or None when it is unset or empty."""
    value = os.environ.get(name)
    return Path(value) if value else None
