"""A search query's vector without running the model: a static table distilled from it.

A search must embed its query before it can score vectors, and running MiniLM on
a question cost more than the whole XMPP round trip of a reply of ten memories.
So, once per machine, every token of the model's vocabulary is run through the
model alone (``[CLS] token [SEP]``, the token's own output kept) and the 30,522
rows are kept in a cache file (float16, 23 MB, mapped, not read whole). A query
is then the mean of its tokens' rows, stop-words and punctuation left out,
shifted by the difference between the model's mean vector and this mean's over
the shipped labelled memories (which brings it nearer the model's own and keeps
nearest-neighbour indexes accurate): a vector in the model's own space, compared
with the stored vectors the model made, for the cost of a table lookup (the
table's last row is that shift). On LoCoMo the hybrid ranking finds about as
much with these query vectors as with the model's, and sooner (see
``docs/performance.md``). Stored memories are always embedded by the model
itself.
"""

from __future__ import annotations

import logging
import os
import string
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spade_memory.base_memory.classify.classifier import load_examples
from spade_memory.base_memory.machine_cache import cache_dir
from spade_memory.storage.fts import STOP_WORDS

if TYPE_CHECKING:
    from collections.abc import Callable

    import numpy as np
    import numpy.typing as npt

    Vectors = npt.NDArray[np.float32]
    Embed = Callable[[list[str]], Vectors]

logger = logging.getLogger("spade_memory.embeddings")

MIN_SIMILARITY = 0.20
"""``ranking.MIN_SIMILARITY`` for this encoder's query vectors, whose cosines run lower
than the model's: about the same share of unrelated question and memory pairs reaches
it (11% on LoCoMo's conversations 1-2, against 12% at the model's 0.25)."""

BATCH = 512
"""Vocabulary tokens run through the model at once while distilling."""


def table_file(model_name: str) -> Path:
    """Where the table distilled from ``model_name`` is kept."""
    return cache_dir() / f"{model_name}-query-table.npy"


def distil(session: Any, tokenizer: Any, embed: Embed, target: Path) -> None:
    """Run every vocabulary token through the model (``session``, ``tokenizer``), learn
    the shift from the shipped labelled memories (``embed`` is the model's encoder), and
    write the table to ``target`` (whole or not at all). Takes some seconds.

    Raises OSError when ``target`` cannot be written.
    """
    import numpy as np

    size = tokenizer.get_vocab_size()
    start, end = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    rows = np.zeros((size, 0), dtype=np.float32)
    for first in range(0, size, BATCH):
        tokens = np.arange(first, min(size, first + BATCH), dtype=np.int64)
        ids = np.stack([np.full_like(tokens, start), tokens, np.full_like(tokens, end)], axis=1)
        inputs = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        inputs["token_type_ids"] = np.zeros_like(ids)
        hidden = session.run(None, inputs)[0][:, 1]  # the token's own output
        if not rows.shape[1]:
            rows = np.zeros((size, hidden.shape[1]), dtype=np.float32)
        rows[tokens] = hidden
    texts = [example.text for example in load_examples()]
    unshifted = StaticQueries(rows, np.zeros(rows.shape[1], dtype=np.float32), tokenizer)
    ours = np.stack([vector for text in texts if (vector := unshifted.embed(text)) is not None])
    shift = embed(texts).mean(axis=0) - ours.mean(axis=0)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=target.parent, suffix=".npy", delete=False) as out:
        try:
            np.save(out, np.vstack([rows, shift]).astype(np.float16))
        except OSError:
            os.unlink(out.name)  # a full disk leaves no half table behind
            raise
    os.replace(out.name, target)  # a rival process's table is as good as ours


def readable(table: Path, dimensions: int) -> bool:
    """Whether ``table`` is a table ``distil`` wrote for vectors of ``dimensions``
    (a missing, damaged or foreign file is not, and is made again)."""
    import numpy as np

    try:
        mapped = np.load(table, mmap_mode="r")
    except (OSError, ValueError):
        return False
    return bool(mapped.ndim == 2 and mapped.shape[0] > 1 and mapped.shape[1] == dimensions)


class StaticQueries:
    """Query vectors from a distilled table (see the module's text): ``rows`` one per
    vocabulary token, ``shift`` added to every query's unit mean."""

    def __init__(self, rows: Any, shift: Any, tokenizer: Any) -> None:
        import numpy as np

        self._rows, self._shift, self._tokenizer = rows, np.asarray(shift, np.float32), tokenizer
        vocabulary: dict[str, int] = tokenizer.get_vocab()
        self._kept = np.ones(len(rows), dtype=bool)
        for token, number in vocabulary.items():
            if (
                token in STOP_WORDS
                or (token.startswith("[") and token.endswith("]"))
                or all(character in string.punctuation for character in token)
            ):
                self._kept[number] = False

    @classmethod
    def open(cls, table: Path, tokenizer: Any) -> StaticQueries:
        """The encoder of a table file ``distil`` wrote: mapped, pages read as used."""
        import numpy as np

        mapped = np.load(table, mmap_mode="r")
        return cls(mapped[:-1], mapped[-1], tokenizer)

    def embed(self, query: str) -> Vectors | None:
        """The unit vector of ``query``; None when it has no token at all (the caller
        asks the model then)."""
        import numpy as np

        tokens = self._tokenizer.encode(query, add_special_tokens=False).ids
        if not tokens:
            return None
        kept = [token for token in tokens if self._kept[token]] or tokens
        mean = np.asarray(self._rows[kept], dtype=np.float32).mean(axis=0)
        shifted = mean / max(float(np.linalg.norm(mean)), 1e-12) + self._shift
        unit: Vectors = shifted / max(float(np.linalg.norm(shifted)), 1e-12)
        return unit
