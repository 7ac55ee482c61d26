"""Dense vectors of one space's memories, and their fusion with BM25.

Imported only when an embedder is loaded (numpy comes with the
``embeddings`` extra). The fusion is a weighted sum of min-max normalised
scores: BM25 over its candidates (0 for memories it did not find), cosine
over all the searched memories. It was chosen on the LoCoMo development split
(``benchmarks/locomo.py``): reciprocal rank fusion with a MiniLM-class model hurt the
top ranks, a weighted score helped.

Only a few memories can reach the fused top ``limit``: BM25's candidates and,
among the others (whose BM25 part is 0), the ``limit`` most similar. So an
index answers the best ``limit`` by cosine, the cosines of BM25's candidates,
and the range its cosines span; nothing else leaves numpy.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

DENSE_WEIGHT = 0.3
"""Share of the dense score in the fused score (the rest is BM25)."""

Vector = npt.NDArray[np.float32]


@dataclass(frozen=True)
class Similar:
    """What an index says about a query: its best memories, and the span of its cosines."""

    best: dict[int, float]
    """Memory seq → cosine, for the most similar (best first)."""
    low: float
    high: float
    """The lowest and highest cosine over every memory of the index."""


class VectorIndex(Protocol):
    """The vectors of one space, searchable by cosine (the vectors are unit length)."""

    def __len__(self) -> int: ...

    def put(self, vectors: Mapping[int, Vector]) -> None:
        """Add or replace the vectors of these memories."""

    def remove(self, seqs: Iterable[int]) -> None:
        """Forget these memories' vectors (unknown seqs are ignored)."""

    def similar(self, query: Vector, k: int, exclude: Collection[int]) -> Similar:
        """The ``k`` most similar memories, none of ``exclude``, and the cosine span."""

    def cosines(self, query: Vector, seqs: Iterable[int]) -> dict[int, float]:
        """The cosine of each of ``seqs`` that has a vector."""


class ExactIndex:
    """Every vector in one matrix, scored whole: exact, and fast up to some 100,000 rows.

    Rows are appended; a removed row becomes a hole (seq -1) reused by no one
    until the holes are a quarter of the rows, when the matrix is compacted.
    """

    def __init__(self, dimensions: int, capacity: int = 256) -> None:
        self._vectors = np.zeros((capacity, dimensions), dtype=np.float32)
        self._seqs = np.full(capacity, -1, dtype=np.int64)
        self._rows: dict[int, int] = {}
        self._used = 0
        self.frozen = False
        """Set while another thread reads the rows (``rows``): no compaction moves them."""

    def __len__(self) -> int:
        return len(self._rows)

    def put(self, vectors: Mapping[int, Vector]) -> None:
        for seq, vector in vectors.items():
            row = self._rows.get(seq)
            if row is None:
                row = self._append()
                self._rows[seq] = row
                self._seqs[row] = seq
            self._vectors[row] = vector

    def remove(self, seqs: Iterable[int]) -> None:
        for seq in seqs:
            row = self._rows.pop(seq, None)
            if row is not None:
                self._seqs[row] = -1
                self._vectors[row] = 0.0
        if self._used > 64 and len(self._rows) < 0.75 * self._used and not self.frozen:
            self._compact()

    def similar(self, query: Vector, k: int, exclude: Collection[int]) -> Similar:
        if not self._rows:
            return Similar({}, 0.0, 0.0)
        seqs = self._seqs[: self._used]
        scores = self._vectors[: self._used] @ query.reshape(-1)
        live = seqs >= 0
        low, high = float(scores[live].min()), float(scores[live].max())
        scores = np.where(live, scores, -np.inf)
        wanted = min(k + len(exclude), int(live.sum()))
        top = np.argpartition(-scores, wanted - 1)[:wanted] if wanted else np.array([], int)
        top = top[np.argsort(-scores[top], kind="stable")]
        best = {int(seqs[row]): float(scores[row]) for row in top if int(seqs[row]) not in exclude}
        return Similar(dict(list(best.items())[:k]), low, high)

    def cosines(self, query: Vector, seqs: Iterable[int]) -> dict[int, float]:
        found = [(seq, row) for seq in seqs if (row := self._rows.get(seq)) is not None]
        if not found:
            return {}
        scores = self._vectors[[row for _, row in found]] @ query.reshape(-1)
        return {seq: float(score) for (seq, _), score in zip(found, scores, strict=True)}

    def rows(self) -> tuple[npt.NDArray[np.int64], Vector]:
        """The seqs (-1 for a hole) and vectors of the used rows, as views; freezes the
        index (no compaction) until ``frozen`` is cleared."""
        self.frozen = True
        return self._seqs[: self._used], self._vectors[: self._used]

    def _append(self) -> int:
        if self._used == len(self._seqs):
            grown = max(256, 2 * self._used)
            vectors = np.zeros((grown, self._vectors.shape[1]), dtype=np.float32)
            vectors[: self._used] = self._vectors[: self._used]
            seqs = np.full(grown, -1, dtype=np.int64)
            seqs[: self._used] = self._seqs[: self._used]
            self._vectors, self._seqs = vectors, seqs
        self._used += 1
        return self._used - 1

    def _compact(self) -> None:
        live = np.flatnonzero(self._seqs[: self._used] >= 0)
        count = len(live)
        self._vectors[:count] = self._vectors[live]
        self._seqs[:count] = self._seqs[live]
        self._vectors[count : self._used] = 0.0
        self._seqs[count : self._used] = -1
        self._used = count
        self._rows = {int(seq): row for row, seq in enumerate(self._seqs[:count])}


def fuse(
    bm25: Mapping[int, float],
    similar: Similar,
    cosines: Mapping[int, float],
    dense_weight: float = DENSE_WEIGHT,
) -> dict[int, float]:
    """Fused score of BM25's candidates and the most similar memories (higher is better).

    ``cosines`` are those of BM25's candidates; the dense side is normalised
    over the span of every searched memory's cosine, as if all were scored.
    """
    lexical = _min_max(bm25)
    span = similar.high - similar.low
    dense = {**cosines, **similar.best}

    def semantic(seq: int) -> float:
        if seq not in dense:
            return 0.0
        return 1.0 if span == 0 else (dense[seq] - similar.low) / span

    return {
        seq: (1 - dense_weight) * lexical.get(seq, 0.0) + dense_weight * semantic(seq)
        for seq in bm25.keys() | similar.best.keys()
    }


def merge(parts: Iterable[Similar], k: int) -> Similar:
    """One answer for several indexes (a search over several spaces)."""
    parts = [part for part in parts if part.best]
    if not parts:
        return Similar({}, 0.0, 0.0)
    best: dict[int, float] = {}
    for part in parts:
        best.update(part.best)
    top = sorted(best, key=lambda seq: -best[seq])[:k]
    return Similar(
        {seq: best[seq] for seq in top},
        min(part.low for part in parts),
        max(part.high for part in parts),
    )


def _min_max(scores: Mapping[int, float]) -> dict[int, float]:
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    if high == low:
        return dict.fromkeys(scores, 1.0)
    return {seq: (score - low) / (high - low) for seq, score in scores.items()}


def to_blob(vector: Vector) -> bytes:
    return np.asarray(vector, dtype=np.float32).reshape(-1).tobytes()


def from_blob(blob: bytes) -> Vector:
    return np.frombuffer(blob, dtype=np.float32)
