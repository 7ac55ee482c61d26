"""What every group of calls stands on: the transport it is composed with."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from spade_memory.client.transport import Transport
from spade_memory.protocol.errors import MemoryServiceError
from spade_memory.protocol.ops import Op, Record

R = TypeVar("R", bound=Record)
T = TypeVar("T")


class Calls:
    """Typed calls over ``transport`` (itself a ``Transport``, so calls nest)."""

    def __init__(self, transport: Transport) -> None:
        self.transport = transport

    @property
    def jids(self) -> dict[str, str]:
        """Each memory service's address, by service name."""
        return self.transport.jids

    @property
    def degraded(self) -> bool:
        """Whether an unanswered call gives an empty answer instead of ``MemoryTimeout``."""
        return self.transport.degraded

    async def request(self, to: str, op: Op[R]) -> R | None:
        """``op`` applied at ``to``: see ``Transport.request``."""
        return await self.transport.request(to, op)

    async def batch(self, to: str, ops: Sequence[Op[Any]]) -> list[Record | MemoryServiceError]:
        """``ops`` applied at ``to`` together: see ``Transport.batch``."""
        return await self.transport.batch(to, ops)


async def every_page(
    read: Callable[[int], Awaitable[R | None]], items: Callable[[R], list[T]]
) -> list[T]:
    """The ``items`` of every page a paged read answers, ``read(offset)`` from 0 on
    following each page's ``next_offset``: what a paged op answers in one list. Returns
    those read so far when a degraded client gets no answer; raises what ``read``
    raises."""
    found: list[T] = []
    offset: int | None = 0
    while offset is not None:
        page = await read(offset)
        if page is None:
            return found
        found += items(page)
        offset = getattr(page, "next_offset", None)
    return found
