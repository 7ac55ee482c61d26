"""Approximate nearest neighbours for large spaces: faiss's inverted file, 16-bit floats.

Below ``ANN_FROM`` vectors a space is scored whole (``dense.ExactIndex``).
Above, scoring every vector costs more than the rest of a search (a million
vectors are 1.5 GB of float32 to read per query), so the space's vectors go
into an IVF index: k-means cells, of which a query scans the ``nprobe``
nearest, over vectors stored as 16-bit floats (half the memory; 8-bit
codes, trained on the space's vectors at the build, distorted memories
unlike those they were trained on too much). It was chosen over HNSW
(hnswlib, usearch, faiss's HNSW) because those took several times as long
to build as the IVF index takes to train and fill, and because it removes
and replaces vectors, which faiss's HNSW cannot.

The build runs in a background thread from the exact index's arrays; the
exact index answers meanwhile, and what changes during the build is
replayed onto the new index before it takes over.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Collection, Iterable, Mapping
from typing import Any

import numpy as np

from spade_memory.base_memory.retrieval.dense import ExactIndex, Similar, Vector
from spade_memory.base_memory.retrieval.meanwhile import BackgroundFill
from spade_memory.base_memory.retrieval.threads import lowest_priority, one_thread_per_library

logger = logging.getLogger("spade_memory.base_memory")

ANN_FROM = 20_000
"""Vectors a space needs before it gets an approximate index."""
PROBED_SHARE = 1 / 32
"""Share of the cells a query scans (chosen for its recall@10 against exact search on
the million-vector benchmark; see ``docs/performance.md``)."""
SAMPLE = 4096
"""Vectors kept aside, scored whole, for the low end of the cosine span (see ``dense``)."""


def available() -> bool:
    """Whether faiss is installed (it comes with the ``embeddings`` extra)."""
    try:
        import faiss  # noqa: F401
    except ImportError:
        return False
    return True


class ApproximateIndex:
    """One space's vectors in a faiss IVF index of 16-bit float vectors."""

    def __init__(self, index: Any, sample: Vector) -> None:
        self._index = index
        self._sample = sample
        self._seqs: set[int] = set()

    @classmethod
    def build(cls, seqs: np.ndarray, vectors: np.ndarray) -> ApproximateIndex:
        """Train and fill an index with the rows whose seq is not -1 (holes)."""
        import faiss

        one_thread_per_library()  # faiss's own OpenMP and OpenBLAS, now loaded
        live = seqs >= 0
        seqs, vectors = seqs[live], np.ascontiguousarray(vectors[live], dtype=np.float32)
        dimensions = vectors.shape[1]
        cells = max(16, min(65_536, int(4 * math.sqrt(len(seqs)))))
        index = faiss.IndexIVFScalarQuantizer(
            faiss.IndexFlatIP(dimensions), dimensions, cells,
            faiss.ScalarQuantizer.QT_fp16, faiss.METRIC_INNER_PRODUCT,
        )  # fmt: skip
        rng = np.random.default_rng(len(seqs))
        training = rng.choice(len(seqs), size=min(len(seqs), 40 * cells), replace=False)
        index.train(vectors[np.sort(training)])
        hashtable = faiss.DirectMap.Hashtable  # type: ignore[attr-defined]
        index.set_direct_map_type(hashtable)  # vectors by seq, for cosines
        index.nprobe = max(16, int(cells * PROBED_SHARE))
        sample = vectors[rng.choice(len(seqs), size=min(len(seqs), SAMPLE), replace=False)]
        built = cls(index, sample.copy())
        for start in range(0, len(seqs), 65_536):
            built._add(seqs[start : start + 65_536], vectors[start : start + 65_536])
        return built

    def __len__(self) -> int:
        return len(self._seqs)

    def put(self, vectors: Mapping[int, Vector]) -> None:
        if not vectors:
            return
        self.remove([seq for seq in vectors if seq in self._seqs])
        seqs = np.fromiter(vectors, dtype=np.int64, count=len(vectors))
        self._add(seqs, np.stack([np.asarray(v, dtype=np.float32) for v in vectors.values()]))

    def remove(self, seqs: Iterable[int]) -> None:
        import faiss

        present = np.array([seq for seq in seqs if seq in self._seqs], dtype=np.int64)
        if len(present):
            self._index.remove_ids(faiss.IDSelectorArray(len(present), faiss.swig_ptr(present)))
            self._seqs.difference_update(present.tolist())

    def similar(self, query: Vector, k: int, exclude: Collection[int]) -> Similar:
        if not self._seqs:
            return Similar({}, 0.0, 0.0)
        query = np.asarray(query, dtype=np.float32).reshape(1, -1)
        scores, found = self._index.search(query, k + len(exclude))
        best = {
            int(seq): float(score)
            for seq, score in zip(found[0], scores[0], strict=True)
            if seq >= 0 and int(seq) not in exclude
        }
        sampled = self._sample @ query[0]
        low = min(float(sampled.min()), *best.values()) if best else float(sampled.min())
        high = max(float(sampled.max()), *best.values()) if best else float(sampled.max())
        return Similar(dict(list(best.items())[:k]), low, high)

    def cosines(self, query: Vector, seqs: Iterable[int]) -> dict[int, float]:
        present = np.array([seq for seq in seqs if seq in self._seqs], dtype=np.int64)
        if not len(present):
            return {}
        vectors = self._index.reconstruct_batch(present)
        scores = vectors @ np.asarray(query, dtype=np.float32).reshape(-1)
        return dict(zip(present.tolist(), scores.tolist(), strict=True))

    def _add(self, seqs: np.ndarray, vectors: np.ndarray) -> None:
        self._index.add_with_ids(np.ascontiguousarray(vectors), np.ascontiguousarray(seqs))
        self._seqs.update(seqs.tolist())


class IndexBuild(BackgroundFill):
    """An approximate index being built in a daemon thread from an exact index's rows;
    the changes made meanwhile are noted, to be replayed before it takes over."""

    def __init__(self, exact: ExactIndex) -> None:
        self.result: ApproximateIndex | None = None
        self.error: BaseException | None = None
        super().__init__("spade-memory-index", self._build, *exact.rows())

    def finished(self) -> ApproximateIndex | None:
        """The built index with the changes replayed, or None if the build failed."""
        if self.result is None:
            logger.warning("the approximate index could not be built (%s)", self.error)
            return None
        self.replay(self.result)
        return self.result

    def _build(self, seqs: np.ndarray, vectors: np.ndarray) -> None:
        lowest_priority()
        try:
            self.result = ApproximateIndex.build(seqs, vectors)
        except Exception as error:  # the exact index goes on answering
            self.error = error
