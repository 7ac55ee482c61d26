"""Facts that change: how well a store finds the memory a new one replaces, and what
consolidation costs.

The detector's rules were chosen on the ``choose`` half of the labelled pairs; the
``held_out`` half, never looked at while choosing, gives the figures. "Supersedes" is
the store's own decision (a confident replacement); "reported" adds the likely conflicts
it only reports. The ``choose`` half's figures are shown for comparison, not as a result.

Then consolidation on a SQLite store of ``--memories`` memories (one in ten a reworded
copy of another), against a baseline measured in the same run: reading the same rows
the pass reads; and a dry run over ``--hostile`` memories whose every word is in about
``COMMON`` of them, the duplicate index's worst case, against the same baseline.

    python -m benchmarks.supersede
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import tempfile
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from rich.console import Console
from rich.table import Table

from spade_memory.base_memory.facts.conflicts import replacement
from spade_memory.base_memory.facts.duplicates import COMMON
from spade_memory.base_memory.facts.frames import frame_of
from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.base_memory.store.rows import COLUMNS
from spade_memory.protocol.consolidation import Consolidated, ConsolidateMemories
from spade_memory.protocol.memories import StoreMemory
from spade_memory.protocol.ops import Request

from .corpus import Corpus


@dataclass(frozen=True)
class Pair:
    old: str
    new: str
    supersedes: bool
    half: str


def load_pairs() -> list[Pair]:
    text = resources.files("spade_memory.base_memory.facts").joinpath("labelled_pairs.jsonl")
    return [Pair(**json.loads(line)) for line in text.read_text().splitlines() if line]


def decision(pair: Pair) -> str:
    """``supersede``, ``report`` or ``none``: what a store of ``pair.new`` does about
    ``pair.old``."""
    old, new = frame_of(pair.old), frame_of(pair.new)
    if old is None or new is None:
        return "none"
    found = replacement(new, old)
    if found is None:
        return "none"
    return "supersede" if found.confident else "report"


def precision_recall(pairs: list[Pair], counted: set[str]) -> tuple[float, float, int]:
    said = [decision(pair) in counted for pair in pairs]
    hits = sum(1 for pair, yes in zip(pairs, said, strict=True) if yes and pair.supersedes)
    positive = sum(said)
    relevant = sum(pair.supersedes for pair in pairs)
    return hits / positive if positive else 1.0, hits / relevant if relevant else 1.0, positive


OWNER = "bench@localhost"


def reworded(text: str, rng: random.Random) -> str:
    """The same words, one more and in another order: what consolidation should merge."""
    words = text.split()
    rng.shuffle(words)
    return " ".join([*words, words[0]])


def ordinary_texts(count: int) -> list[str]:
    """``count`` memories of the corpus, one in ten a reworded copy of another."""
    rng = random.Random(3)
    texts = Corpus(seed=5).memories(count * 9 // 10)
    return texts + [reworded(rng.choice(texts), rng) for _ in range(count - len(texts))]


def hostile_texts(count: int, words_each: int = 200) -> list[str]:
    """``count`` memories of ``words_each`` made-up words, each word in ``COMMON`` of them
    at most: every word is under the index's limit, so each memory finds the most
    candidates the index lets it."""
    rng = random.Random(7)
    letters = "bcdfghjklmnpqrtvwxz"
    distinct = max(words_each, count * words_each // COMMON)
    vocabulary: set[str] = set()
    while len(vocabulary) < distinct:
        vocabulary.add("".join(rng.choices(letters, k=8)))
    slots = sorted(vocabulary) * COMMON
    rng.shuffle(slots)
    return [" ".join(slots[n * words_each : (n + 1) * words_each]) for n in range(count)]


async def consolidation_cost(texts: list[str], rounds: int, merge: bool = True) -> dict[str, float]:
    """Seconds (median of ``rounds``) of the baseline read, a dry run and (``merge``) an
    applying run over ``texts`` as memories, and how many the applying run merged."""
    count = len(texts)
    with tempfile.TemporaryDirectory() as folder:
        store = await LongTermStore.open(Path(folder) / "memory.db", consolidate_after=None)
        try:
            for start in range(0, count, 500):
                ops = [
                    StoreMemory(category="fact", content=text, conflicts="off")
                    for text in texts[start : start + 500]
                ]
                await store.batch(OWNER, [Request(op) for op in ops])
            read, dry = [], []
            for _ in range(rounds):
                started = time.perf_counter()
                await store._tx.read(  # what a pass reads first
                    f"SELECT {COLUMNS} FROM memories m WHERE m.space = ?"
                    " ORDER BY m.created_at DESC LIMIT ?",
                    (OWNER, count),
                )
                read.append(time.perf_counter() - started)
                started = time.perf_counter()
                await store.apply(OWNER, ConsolidateMemories())
                dry.append(time.perf_counter() - started)
            cost = {"read": statistics.median(read), "dry": statistics.median(dry)}
            if merge:
                started = time.perf_counter()
                done = await store.apply(OWNER, ConsolidateMemories(dry_run=False))
                cost["applied"] = time.perf_counter() - started
                assert isinstance(done, Consolidated)
                cost["merged"] = float(done.merged)
        finally:
            await store.close()
    return cost


def _cost_table(title: str, cost: dict[str, float], memories: int) -> Table:
    """The passes ``consolidation_cost`` timed, against its baseline read."""
    table = Table("pass", "seconds", "µs per memory", "vs reading the rows", title=title)
    passes = (("read the rows (baseline)", "read"), ("dry run", "dry"), ("merge", "applied"))
    for name, key in passes:
        if key in cost:
            table.add_row(
                name, f"{cost[key]:.3f}", f"{cost[key] * 1e6 / memories:.0f}",
                f"{cost[key] / cost['read']:.1f}x",
            )  # fmt: skip
    return table


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.supersede", description=__doc__)
    parser.add_argument("--errors", action="store_true", help="list the held-out mistakes")
    parser.add_argument("--memories", type=int, default=10_000, help="in the store (10,000)")
    parser.add_argument("--rounds", type=int, default=3, help="timed dry runs (3)")
    parser.add_argument(
        "--hostile", type=int, default=3_000, help="memories of the worst case (3,000)"
    )
    args = parser.parse_args()
    console = Console()
    pairs = load_pairs()
    table = Table(
        "half", "pairs", "supersedes precision", "recall", "supersedes + reported precision",
        "recall", "compatible pairs superseded", title="Detection of a replaced memory, no model",
        caption="held_out: never looked at while choosing the rules; choose: for comparison",
    )  # fmt: skip
    for half in ("held_out", "choose"):
        part = [pair for pair in pairs if pair.half == half]
        p1, r1, _ = precision_recall(part, {"supersede"})
        p2, r2, _ = precision_recall(part, {"supersede", "report"})
        compatible = [pair for pair in part if not pair.supersedes]
        hidden = sum(decision(pair) == "supersede" for pair in compatible)
        table.add_row(
            half, str(len(part)), f"{p1:.1%}", f"{r1:.1%}", f"{p2:.1%}", f"{r2:.1%}",
            f"{hidden} of {len(compatible)}",
        )  # fmt: skip
    console.print(table)
    cost = asyncio.run(consolidation_cost(ordinary_texts(args.memories), args.rounds))
    title = f"Consolidation of {args.memories:,} memories ({cost['merged']:.0f} merged)"
    console.print(_cost_table(title, cost, args.memories))
    worst = asyncio.run(consolidation_cost(hostile_texts(args.hostile), 1, merge=False))
    title = f"The worst case: {args.hostile:,} memories, each word in {COMMON} of them"
    console.print(_cost_table(title, worst, args.hostile))
    if args.errors:
        for pair in pairs:
            if pair.half == "held_out" and (decision(pair) == "supersede") != pair.supersedes:
                console.print(f"{decision(pair):9} {pair.supersedes!s:5} {pair.old} | {pair.new}")


if __name__ == "__main__":
    main()
