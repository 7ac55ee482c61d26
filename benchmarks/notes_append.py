"""Cost of one conversation note at growing conversation sizes, vs spade_llm.

spade_llm's ``AgentInteractionMemory.add_information`` rewrites the agent's
whole JSON file on every append; the interaction store inserts one row.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from spade_memory.interaction.store import InteractionStore
from spade_memory.protocol.notes import AddInformation

from .stats import summary_ms

OWNER = "bench@localhost"


@dataclass
class AppendResult:
    notes: int
    ours_p50: float
    theirs_p50: float


async def bench_append(sizes: list[int], appends: int = 500) -> list[AppendResult]:
    from spade_llm.memory.interaction_memory import AgentInteractionMemory

    results = []
    for size in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            store = await InteractionStore.open(Path(tmp) / "notes.db")
            legacy = AgentInteractionMemory(OWNER, memory_path=tmp)
            filler = [f"earlier note number {n} about the customer" for n in range(size)]
            legacy.interactions["interactions"]["c"] = [
                {"content": text, "timestamp": "2026-01-01T00:00:00"} for text in filler
            ]
            for text in filler:
                await store.apply(OWNER, AddInformation(conversation_id="c", information=text))
            # in separate blocks: rewriting a large JSON file churns caches and the
            # garbage collector, which would land on whatever is timed next
            ours, theirs = [], []
            for n in range(appends):
                start = time.perf_counter()
                await store.apply(OWNER, AddInformation(conversation_id="c", information=f"x{n}"))
                ours.append(time.perf_counter() - start)
            await store.close()
            for n in range(max(20, appends // 10)):
                start = time.perf_counter()
                legacy.add_information("c", f"x{n}")
                theirs.append(time.perf_counter() - start)
        results.append(AppendResult(size, summary_ms(ours)[0], summary_ms(theirs)[0]))
    return results
