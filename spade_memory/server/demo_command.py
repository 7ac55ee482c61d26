"""``spade-memory demo``: an LLM agent learns something, restarts and recalls it, in one
process with no network (the ``llm`` extra); ``--check`` only asks the configured model."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from pathlib import Path

from rich.console import Console


def add_arguments(demo: argparse.ArgumentParser, name: str = "demo") -> None:
    """Add ``demo``'s flags."""
    demo.add_argument(
        "--data-dir", type=Path, default=None, help="keep the demo's memories here (default: none)"
    )
    demo.add_argument(
        "--check",
        action="store_true",
        help="only check that the model of SPADE_MEMORY_LLM_MODEL answers (one line), then exit",
    )
    demo.add_argument(
        "--debug", action="store_true", help="show litellm's and spade_llm's logs and tracebacks"
    )


def run(args: argparse.Namespace) -> int:
    """Run the demo; returns 0, 1 when the model does not answer, 2 without spade_llm."""
    return _demo(args.data_dir, check=args.check, debug=args.debug)


LLM_EXTRA = "spade-memory[llm]"
"""What to install for LLM agents with memory."""


def _demo(data_dir: Path | None, *, check: bool = False, debug: bool = False) -> int:
    """The demo (or, with ``check``, only its model's check): 1 and one line on stderr
    when the configured model does not answer."""
    # spade_llm imports litellm, which otherwise fetches a price list from the network.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        from spade_memory.llm.model_check import ModelUnreachable
        from spade_memory.server.demo import check_configured_model, quiet_logs, run_demo
    except ModuleNotFoundError as missing:
        if not (missing.name or "").startswith("spade_llm"):
            raise
        print(f"spade-memory demo needs spade_llm: pip install '{LLM_EXTRA}'", file=sys.stderr)
        return 2

    quiet_logs(debug)
    console = Console()
    try:
        if check:
            asyncio.run(check_configured_model(console))
            return 0
        with tempfile.TemporaryDirectory(prefix="spade-memory-demo-") as scratch:
            asyncio.run(run_demo(data_dir or Path(scratch), console))
    except ModelUnreachable as problem:
        print(f"spade-memory demo: {problem}", file=sys.stderr)
        return 1
    return 0
