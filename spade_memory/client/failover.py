"""Several memory agents serving one service as one: the client's side.

On a shared PostgreSQL store, N base memory agents (each its own JID, in its own
process or machine) serve the same memories. A client given all their JIDs spreads
its requests over them in turn. When one gives no reply in time, the same request
(same request id, so a write already applied by the silent agent is not applied
again) goes to the next, and the silent one is tried last for ``PASS_OVER_SECONDS``.
A pool of JIDs works on any XMPP server; several resources of one JID would depend
on how each server routes a message sent to a bare JID (Prosody copies it to every
resource of equal priority, so two agents would both serve it).
"""

from __future__ import annotations

import itertools
import os
import re
import time
from collections.abc import Mapping, Sequence

BASE_POOL_ENV = "SPADE_MEMORY_BASE_POOL"
"""The base memory agents a client uses when its code names none: JIDs separated by
commas or spaces, so a deployment grows its pool without a change to its agents."""
INTERACTION_POOL_ENV = "SPADE_MEMORY_INTERACTION_POOL"
"""The same for the interaction memory agents."""

PASS_OVER_SECONDS = 30.0
"""How long an agent that did not answer is tried last (then it takes its turn again)."""


class AgentPool:
    """The JIDs of the agents serving one service, in the order to try them."""

    def __init__(self, jids: Sequence[str]) -> None:
        if not jids:
            raise ValueError("a pool of memory agents needs at least one JID")
        self.jids = tuple(dict.fromkeys(jids))
        self._turn = itertools.count()
        self._silent_until: dict[str, float] = {}

    def __contains__(self, jid: object) -> bool:
        return jid in self.jids

    def order(self) -> list[str]:
        """Every JID, the next in turn first; the ones passed over come last."""
        start = next(self._turn) % len(self.jids)
        turn = [*self.jids[start:], *self.jids[:start]]
        now = time.monotonic()
        answering = [jid for jid in turn if self._silent_until.get(jid, 0.0) <= now]
        return answering + [jid for jid in turn if jid not in answering]

    def silent(self, jid: str) -> None:
        """``jid`` gave no reply in time: pass it over for a while."""
        self._silent_until[jid] = time.monotonic() + PASS_OVER_SECONDS

    def answered(self, jid: str) -> None:
        """``jid`` replied: it takes requests again."""
        self._silent_until.pop(jid, None)


def pool_from_environment(
    variable: str, environ: Mapping[str, str] = os.environ
) -> list[str] | None:
    """The JIDs that ``variable`` lists (commas or spaces between them), or None when it
    is unset or empty."""
    jids = [jid for jid in re.split(r"[\s,]+", environ.get(variable, "")) if jid]
    return jids or None
