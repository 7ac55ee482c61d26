"""The restarts run of ``benchmarks/resilience.py`` as a check (30 s of load from four
clients, the XMPP server restarted twice): the ``slow`` tier, ``python -m pytest -m slow``."""

from __future__ import annotations

import pytest
from rich.console import Console

from benchmarks.resilience import print_restart, run_restart

console = Console(width=120)


@pytest.mark.slow
async def test_two_server_restarts_under_load() -> None:
    result = await run_restart(clients=4, seconds=30, restarts=2)
    print_restart(console, result)
    assert result.sent == result.answered + result.failed_typed and result.untyped == 0
    assert result.stored_twice == 0 and result.acked_missing == 0
    assert len(result.reconnect_s) == 2 and max(result.reconnect_s) <= 10
