"""Dense vectors of one owner's memories, and their fusion with BM25.

Imported only when an embedder is loaded (numpy comes with the
``embeddings`` extra). The fusion is a weighted sum of min-max normalised
scores: BM25 over its candidates (0 for memories it did not find), cosine
over all the owner's memories. It was chosen on the LoCoMo development split
(see the README): reciprocal rank fusion with a MiniLM-class model hurt the
top ranks, a weighted score helped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

DENSE_WEIGHT = 0.3
"""Share of the dense score in the fused score (the rest is BM25)."""


@dataclass
class DenseIndex:
    """The owner's memory vectors: row ``i`` belongs to memory ``seqs[i]``."""

    seqs: npt.NDArray[np.int64]
    vectors: npt.NDArray[np.float32]

    @classmethod
    def from_rows(cls, rows: Sequence[tuple[int, bytes]], dimensions: int) -> DenseIndex:
        seqs = np.array([seq for seq, _ in rows], dtype=np.int64)
        if not rows:
            return cls(seqs, np.zeros((0, dimensions), dtype=np.float32))
        vectors = np.frombuffer(b"".join(blob for _, blob in rows), dtype=np.float32)
        return cls(seqs, vectors.reshape(len(rows), dimensions))

    def changed(self, moved: Mapping[int, bytes | None]) -> DenseIndex:
        """This index with the given memories' vectors replaced, added or (None) removed."""
        keep = ~np.isin(self.seqs, np.fromiter(moved, dtype=np.int64, count=len(moved)))
        added = DenseIndex.from_rows(
            [(seq, blob) for seq, blob in moved.items() if blob is not None], self.vectors.shape[1]
        )
        return DenseIndex(
            np.concatenate([self.seqs[keep], added.seqs]),
            np.concatenate([self.vectors[keep], added.vectors]),
        )

    def similarities(self, query: npt.NDArray[np.float32]) -> dict[int, float]:
        """Cosine similarity of every memory to the (unit) query vector."""
        scores = self.vectors @ query.reshape(-1)
        return dict(zip(self.seqs.tolist(), scores.tolist(), strict=True))


def fuse(
    bm25: Mapping[int, float], dense: Mapping[int, float], dense_weight: float = DENSE_WEIGHT
) -> dict[int, float]:
    """Fused score of every memory either ranking scored (higher is better)."""
    lexical, semantic = _min_max(bm25), _min_max(dense)
    return {
        seq: (1 - dense_weight) * lexical.get(seq, 0.0) + dense_weight * semantic.get(seq, 0.0)
        for seq in bm25.keys() | dense.keys()
    }


def _min_max(scores: Mapping[int, float]) -> dict[int, float]:
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    if high == low:
        return dict.fromkeys(scores, 1.0)
    return {seq: (score - low) / (high - low) for seq, score in scores.items()}


def to_blob(vector: npt.NDArray[np.float32]) -> bytes:
    return np.asarray(vector, dtype=np.float32).reshape(-1).tobytes()
