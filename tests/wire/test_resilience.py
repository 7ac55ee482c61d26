"""The crash runs of ``benchmarks/resilience.py`` as checks.

The full-size run (five SIGKILLs and 10,000 acknowledged writes) is in the ``slow``
tier: ``python -m pytest -m slow``, which CI runs too; one short crash run is in the
default tier. The load run and the restarts run are in ``test_resilience_load`` and
``test_resilience_restarts``: a file each, so the slow tier's workers run them side by
side.
"""

from __future__ import annotations

import pytest
from rich.console import Console

from benchmarks.resilience import print_crash, run_crash

console = Console(width=120)


async def test_acknowledged_writes_survive_a_sigkill_of_the_memory_agents() -> None:
    result = await run_crash(kills=1, writes=300, writers=4)
    print_crash(console, result)
    assert result.kills == 1 and result.acked_at_kill[0] >= 150 and result.total_acked >= 300
    assert result.acked["memories"] and result.acked["notes"] and result.acked["working memory"]
    assert result.ok, result.missing


@pytest.mark.slow
async def test_five_sigkills_and_ten_thousand_acknowledged_writes() -> None:
    result = await run_crash(kills=5, writes=10_000)
    print_crash(console, result)
    assert result.kills == 5 and result.total_acked >= 10_000
    assert sum(result.missing.values()) == 0 and result.duplicated_notes == 0
