"""The garbage collector set for a long-running service.

When ``spade-memory run`` has started, its process tracks a great many objects
(its libraries, their schemas, the agents) that live as long as it does, and
every op allocates dozens that die at once. CPython's defaults (a young
collection every 700 allocations, an older one every tenth) kept walking the
long-lived ones, which slowed every store, in the agent's process as over XMPP.
So once started the service moves what it holds to the permanent generation
(``gc.freeze``), which no collection walks, and collects the young every 10,000
allocations. Cycles made later are still collected.
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 10_000
"""Allocations between two collections of the youngest generation (CPython: 700)."""


def settle() -> None:
    """Collect once, freeze what survives (it lives as long as the process), and
    collect the young less often. Call it once start-up is done; returns nothing."""
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)
