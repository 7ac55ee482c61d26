"""Where base memory keeps what it computes once per machine: the prepared model, the
query table, the classifier's weights. Shared by every data directory, so a second
service (or a test suite's hundredth) finds them made."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """``$SPADE_MEMORY_CACHE``, else ``spade-memory`` in the user's cache
    (``$XDG_CACHE_HOME``, else ``~/.cache``)."""
    if configured := os.environ.get("SPADE_MEMORY_CACHE"):
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "spade-memory"
