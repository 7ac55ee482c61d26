"""Background threads that take what the agents' requests leave of the CPU."""

from __future__ import annotations

import contextlib
import os
import sys
import threading


def lowest_priority() -> None:
    """Give the calling thread the lowest CPU priority: Linux sets a nice value per
    thread; elsewhere it would apply to the whole process, so it is left alone."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
