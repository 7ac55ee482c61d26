"""A pytest plugin for SPADE's own test suite run against a server of the tests: every
``Agent`` it makes connects to ``$SPADE_E2E_PORT`` instead of SPADE's default 5222, the
only change made to that suite (``tests/interop/test_spade_e2e.py``)."""

from __future__ import annotations

import functools
import os
from typing import Any

import spade.agent

_made_as_spade_makes_it = spade.agent.Agent.__init__


@functools.wraps(_made_as_spade_makes_it)
def _on_the_tests_port(
    self: Any, jid: str, password: str, port: int | None = None, **kw: Any
) -> None:
    _made_as_spade_makes_it(self, jid, password, port or int(os.environ["SPADE_E2E_PORT"]), **kw)


spade.agent.Agent.__init__ = _on_the_tests_port
