"""A synthetic, reproducible corpus of memories and queries.

Words follow a Zipf-like distribution over a fixed vocabulary, so a few
words are common and most are rare, as in real notes. The same seed gives
the same memories and queries, so every backend sees identical data.
"""

from __future__ import annotations

import random
from itertools import accumulate

VOCABULARY_SIZE = 5_000


def vocabulary(size: int = VOCABULARY_SIZE) -> list[str]:
    rng = random.Random(7)
    letters = "abcdefghijklmnopqrstuvwxyz"
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(4, 9))))
    return sorted(words)


class Corpus:
    def __init__(self, seed: int = 1) -> None:
        self.words = vocabulary()
        self._weights = list(accumulate(1.0 / rank for rank in range(1, len(self.words) + 1)))
        self._rng = random.Random(seed)

    def sentence(self, length: int = 12) -> str:
        return " ".join(self._rng.choices(self.words, cum_weights=self._weights, k=length))

    def memories(self, count: int) -> list[str]:
        return [self.sentence(self._rng.randint(6, 20)) for _ in range(count)]

    def queries(self, count: int, words: int) -> list[str]:
        """Queries of mid-frequency words (ranks 50-2000), as people ask."""
        middle = self.words[50:2000]
        return [" ".join(self._rng.sample(middle, words)) for _ in range(count)]
