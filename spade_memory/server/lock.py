"""The lock a running service holds on its data directory.

One ``spade-memory run`` per data directory: what changes a directory in place
(``restore``, ``reset-accounts``, the imports, ``migrate``) takes the lock first,
so it refuses a directory a service is using instead of changing files under it.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import IO

LOCK = "spade-memory.lock"
"""Held by ``spade-memory run`` for as long as it uses the data directory."""


class DataDirectoryInUse(RuntimeError):
    """Another ``spade-memory run`` holds the data directory."""


def lock(data_dir: Path) -> IO[str]:
    """Hold ``data_dir`` for this process until the returned file is closed.

    Raises ``DataDirectoryInUse`` naming the process that holds it.
    """
    handle = (data_dir / LOCK).open("a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        raise DataDirectoryInUse(
            f"{data_dir} is in use by a running spade-memory ({holder}); stop it first"
        ) from None
    handle.truncate(0)
    handle.write(f"pid {os.getpid()}")
    handle.flush()
    return handle
