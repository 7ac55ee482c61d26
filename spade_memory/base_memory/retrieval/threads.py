"""Threads: the background ones take what the agents' requests leave of the CPU, and the
numeric libraries compute on the calling thread."""

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


def one_thread_per_library() -> None:
    """Make the numeric libraries loaded so far (OpenBLAS under numpy, faiss's OpenMP and
    OpenBLAS) compute on the calling thread. Their own thread pools cost more than they
    save on a memory agent's small products: handing one to OpenBLAS's threads costs
    far more than computing it on one. It applies to the whole process."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1)
