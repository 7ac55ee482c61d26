"""Facts that change: how well a store finds the memory a new one replaces, and what
consolidation costs.

The detector's rules were chosen on the ``choose`` half of the labelled pairs; the
``held_out`` half, never looked at while choosing, gives the figures. "Supersedes" is
the store's own decision (a confident replacement); "reported" adds the likely conflicts
it only reports. The ``choose`` half's figures are shown for comparison, not as a result.

    python -m benchmarks.supersede
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from importlib import resources

from rich.console import Console
from rich.table import Table

from spade_memory.base_memory.facts.conflicts import replacement
from spade_memory.base_memory.facts.frames import frame_of


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


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.supersede", description=__doc__)
    parser.add_argument("--errors", action="store_true", help="list the held-out mistakes")
    args = parser.parse_args()
    console = Console()
    pairs = load_pairs()
    table = Table(
        "half", "pairs", "supersedes precision", "recall", "supersedes + reported precision",
        "recall", title="Detection of a replaced memory, no model",
        caption="held_out: never looked at while choosing the rules; choose: for comparison",
    )  # fmt: skip
    for half in ("held_out", "choose"):
        part = [pair for pair in pairs if pair.half == half]
        p1, r1, _ = precision_recall(part, {"supersede"})
        p2, r2, _ = precision_recall(part, {"supersede", "report"})
        table.add_row(half, str(len(part)), f"{p1:.1%}", f"{r1:.1%}", f"{p2:.1%}", f"{r2:.1%}")
    console.print(table)
    if args.errors:
        for pair in pairs:
            if pair.half == "held_out" and (decision(pair) == "supersede") != pair.supersedes:
                console.print(f"{decision(pair):9} {pair.supersedes!s:5} {pair.old} | {pair.new}")


if __name__ == "__main__":
    main()
