"""The resilience runs of ``benchmarks/resilience.py`` as checks.

The full-size runs (16 x 1,000 stores; 30 s of load with two server
restarts; five SIGKILLs and 10,000 acknowledged writes) are the ``slow``
tier: ``python -m pytest -m slow``, which CI runs too. One short crash run
is in the default tier.
"""

from __future__ import annotations

import pytest
from rich.console import Console

from benchmarks.resilience import (
    print_crash,
    print_load,
    print_restart,
    run_crash,
    run_load,
    run_restart,
)

console = Console(width=120)


async def test_acknowledged_writes_survive_a_sigkill_of_the_memory_agents() -> None:
    result = await run_crash(kills=1, writes=300, writers=4)
    print_crash(console, result)
    assert result.kills == 1 and result.acked_at_kill[0] >= 150 and result.total_acked >= 300
    assert result.acked["memories"] and result.acked["notes"] and result.acked["working memory"]
    assert result.ok, result.missing


@pytest.mark.slow
async def test_sixteen_clients_store_a_thousand_each() -> None:
    result = await run_load(clients=16, stores=1000)
    print_load(console, result)
    assert result.stored == 16_000 and result.errors == 0 and result.locked == 0
    assert result.embedding_seconds is not None  # and every memory got its vector


@pytest.mark.slow
async def test_two_server_restarts_under_load() -> None:
    result = await run_restart(clients=4, seconds=30, restarts=2)
    print_restart(console, result)
    assert result.sent == result.answered + result.failed_typed and result.untyped == 0
    assert result.stored_twice == 0 and result.acked_missing == 0
    assert len(result.reconnect_s) == 2 and max(result.reconnect_s) <= 10


@pytest.mark.slow
async def test_five_sigkills_and_ten_thousand_acknowledged_writes() -> None:
    result = await run_crash(kills=5, writes=10_000)
    print_crash(console, result)
    assert result.kills == 5 and result.total_acked >= 10_000
    assert sum(result.missing.values()) == 0 and result.duplicated_notes == 0
