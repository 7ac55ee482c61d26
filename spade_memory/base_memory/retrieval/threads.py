"""Threads: the background ones take what the agents' requests leave of the CPU, and the
numeric libraries compute on the calling thread."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import sys
import threading
from collections.abc import Callable


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


def give_back_freed_memory() -> None:
    """Hand the C heap's free pages back to the system (glibc's ``malloc_trim``): what a
    thread of its own frees stays in that thread's arena otherwise, and the process's
    resident memory with it. Does nothing where the C library has no such call."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    with contextlib.suppress(OSError, AttributeError):
        trim: Callable[[int], int] = ctypes.CDLL(None).malloc_trim
        return trim
    return None
