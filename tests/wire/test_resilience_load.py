"""The load run of ``benchmarks/resilience.py`` as a check (16 clients x 1,000 stores,
meaning search on): the ``slow`` tier, ``python -m pytest -m slow``. It asserts what was
stored, not how fast: without the benchmark's baseline (bare round trips to an echo
agent), which it would not assert."""

from __future__ import annotations

import pytest
from rich.console import Console

from benchmarks.resilience import print_load, run_load

console = Console(width=120)


@pytest.mark.slow
@pytest.mark.long
async def test_sixteen_clients_store_a_thousand_each() -> None:
    result = await run_load(clients=16, stores=1000, bare=0)
    print_load(console, result)
    assert result.stored == 16_000 and result.errors == 0 and result.locked == 0
    assert result.embedding_seconds is not None  # and every memory got its vector
