"""The client's one seam: a transport takes ops for a memory service and returns the replies.

The calls (``memories``, ``conversations``, ``spaces``, ``session``, ``beads``) are
composed around a transport, never inherited from one: ``MemoryClient.transport``.
Two implement it: ``XmppTransport`` (``xmpp_transport``: the wire, with request ids,
retries, pools and back-pressure) and ``InProcessTransport`` (``in_process``: services
of this process, with no XMPP at all).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

from spade_memory.protocol.errors import MemoryServiceError
from spade_memory.protocol.ops import Op, Record

R = TypeVar("R", bound=Record)


class Transport(Protocol):
    """Where the calls send their ops."""

    @property
    def jids(self) -> dict[str, str]:
        """Each memory service's address, by service name (``protocol.services``)."""
        ...

    @property
    def degraded(self) -> bool:
        """Whether a service that does not answer gives None instead of ``MemoryTimeout``."""
        ...

    async def request(self, to: str, op: Op[R]) -> R | None:
        """Apply ``op`` at the service ``to``.

        Returns the op's result (None only when degraded and unanswered); raises its
        typed error (a ``MemoryServiceError``), or ``MemoryTimeout``.
        """
        ...

    async def batch(self, to: str, ops: Sequence[Op[Any]]) -> list[Record | MemoryServiceError]:
        """Apply ``ops`` at ``to`` together (one transaction where the store has them).

        Returns one outcome per op, its result or its typed error; raises
        ``MemoryTimeout`` when the service does not answer.
        """
        ...
