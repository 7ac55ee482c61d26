"""The service's garbage collector setting: what start-up made is frozen, later cycles
are still collected (run in a child process: freezing is for the whole process)."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import gc, weakref
from spade_memory.server import collector

class Node:
    pass

kept = [Node() for _ in range(1000)]
before = gc.get_freeze_count()
collector.settle()
assert gc.get_freeze_count() >= before + 1000, (before, gc.get_freeze_count())
assert gc.get_threshold()[0] == collector.YOUNG_THRESHOLD

cycle = Node()
cycle.me = cycle
gone = weakref.ref(cycle)
del cycle
gc.collect()
assert gone() is None, "a cycle made after settle() was not collected"
print("ok")
"""


def test_settle_freezes_what_exists_and_later_cycles_are_collected() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
