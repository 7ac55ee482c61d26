"""What an account of another XMPP server may ask of a memory agent.

With federation on (Prosody's ``PROSODY_S2S=true``), any account of any server can
message the memory agents. Such an account is served in the spaces granted to it or
to its domain (the spaces' own rules decide each request), and may read and forget
what it keeps here; it keeps nothing of its own: a write outside a named space, and
making a space, are for accounts of the agent's own domain. So opening the server to
the network does not make it everyone's storage.
"""

from __future__ import annotations

from typing import Any

from spade_memory.protocol.errors import NotAuthorized
from spade_memory.protocol.ops import PERSONAL, Op, SenderForgotten


def check_remote(owner: str, op: Op[Any], home: str) -> None:
    """Refuse ``op`` from ``owner`` when ``owner`` is an account of another domain than
    ``home`` (the agent's) and the op would write outside a named space.

    Raises ``NotAuthorized`` saying so.
    """
    if op.reads_only or owner.rpartition("@")[2] == home:
        return
    space = getattr(op, "space", None)
    if (isinstance(space, str) and space != PERSONAL) or op.in_a_space:
        return  # the space's grants decide
    if issubclass(op.result, SenderForgotten):
        return  # forgetting what it keeps here is always its own to do
    raise NotAuthorized(
        f"an account of another server than {home} writes here only in the spaces"
        " granted to it or its domain"
    )
