"""The background threads' helpers: the memory a thread frees goes back to the system
where the C library can do it (glibc's ``malloc_trim``)."""

from __future__ import annotations

import platform
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from spade_memory.base_memory.retrieval import threads


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc",
    reason="malloc_trim is glibc's",
)
def test_glibcs_trim_is_found_and_called_from_a_thread_of_its_own() -> None:
    assert threads._malloc_trim() is not None  # else the handing back silently does nothing
    with ThreadPoolExecutor(1) as thread:  # its exception, if any, is raised here

        def compare_then_give_back() -> None:
            garbage = [str(n) * 8 for n in range(200_000)]  # freed in this thread's arena
            del garbage
            threads.give_back_freed_memory()

        thread.submit(compare_then_give_back).result()
