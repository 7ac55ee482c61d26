"""A pytest plugin for SPADE's own test suite run against a server of the tests: every
``Agent`` it makes connects to ``$SPADE_E2E_PORT`` instead of SPADE's default 5222, and,
on a test Prosody (whose in-band registration is closed, as shipped), has its account
made first with ``$SPADE_E2E_PROSODYCTL`` (``prosody/prosodyctl.sh``). Nothing else of
that suite changes (``tests/interop/test_spade_e2e.py``)."""

from __future__ import annotations

import functools
import os
import subprocess
from typing import Any

import spade.agent

_made_as_spade_makes_it = spade.agent.Agent.__init__


@functools.wraps(_made_as_spade_makes_it)
def _on_the_tests_server(
    self: Any, jid: str, password: str, port: int | None = None, **kw: Any
) -> None:
    if script := os.environ.get("SPADE_E2E_PROSODYCTL"):
        user, _, domain = jid.split("/")[0].partition("@")
        subprocess.run(["sh", script, "register", user, domain, password], check=True)
    _made_as_spade_makes_it(self, jid, password, port or int(os.environ["SPADE_E2E_PORT"]), **kw)


spade.agent.Agent.__init__ = _on_the_tests_server
