"""Auto-classification of memories: accuracy on the held-out part, and speed.

The classifier is trained on the labelled set's tune part only and measured on
its held-out part, which the method was never tuned on; the tune part's own
figures (data the model was fitted to) are shown for comparison, not as a
result. Then the time per classification, and of training.

    python -m benchmarks.classify
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from dataclasses import dataclass

from rich.console import Console
from rich.table import Table

from spade_memory.base_memory.classify.classifier import Classifier, Example, load_examples
from spade_memory.protocol.memories import CATEGORIES, Category

from .stats import summary_ms


@dataclass
class Scores:
    """Accuracy overall and per true category, and the confusion counts (true, guessed)."""

    examples: int
    accuracy: float
    per_category: dict[Category, float]
    confusion: Counter[tuple[Category, Category]]


def evaluate(model: Classifier, examples: list[Example]) -> Scores:
    confusion: Counter[tuple[Category, Category]] = Counter(
        (e.category, model.predict(e.text)) for e in examples
    )
    right = sum(n for (true, guess), n in confusion.items() if true == guess)
    per_category = {}
    for category in CATEGORIES:
        total = sum(n for (true, _), n in confusion.items() if true == category)
        per_category[category] = confusion[category, category] / total if total else 0.0
    return Scores(len(examples), right / len(examples), per_category, confusion)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.classify", description=__doc__)
    parser.add_argument("--calls", type=int, default=20_000, help="classifications timed")
    args = parser.parse_args()
    console = Console()
    examples = load_examples()
    tune = [e for e in examples if e.part == "tune"]
    held_out = [e for e in examples if e.part == "held_out"]

    started = time.perf_counter()
    model = Classifier.train((e.text, e.category) for e in tune)
    train_seconds = time.perf_counter() - started

    table = Table(
        "part", "memories", "accuracy", *CATEGORIES,
        title="Trained on the tune part only",
        caption="held-out: never tuned on; tune: the data it was fitted to, not a result",
    )  # fmt: skip
    for label, part in (("held-out", held_out), ("tune (fitted)", tune)):
        scores = evaluate(model, part)
        table.add_row(
            label, str(scores.examples), f"{scores.accuracy:.1%}",
            *(f"{scores.per_category[c]:.1%}" for c in CATEGORIES),
        )  # fmt: skip
    console.print(table)

    confusion = evaluate(model, held_out).confusion
    matrix = Table("true \\ guessed", *CATEGORIES, title="Held-out confusion")
    for true in CATEGORIES:
        matrix.add_row(true, *(str(confusion[true, guess]) for guess in CATEGORIES))
    console.print(matrix)

    texts = [e.text for e in held_out]
    samples = []
    for number in range(args.calls):
        text = texts[number % len(texts)]
        started = time.perf_counter()
        model.classify(text)
        samples.append(time.perf_counter() - started)
    p50, p99 = summary_ms(samples)
    timing = Table("", "ms", title="Speed")
    timing.add_row(f"one classification, p50 ({args.calls:,} calls)", f"{p50:.3f}")
    timing.add_row("one classification, p99", f"{p99:.3f}")
    timing.add_row(
        f"training on {len(tune)} memories (once, lazily)", f"{train_seconds * 1000:.0f}"
    )
    console.print(timing)


if __name__ == "__main__":
    main()
