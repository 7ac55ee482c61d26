"""What a client does with a request over XMPP, whichever library carries it: slots,
the time budget, ``Busy`` waited out, pools, and the reply read into the op's result.

Two transports carry requests: ``XmppTransport`` through a SPADE agent, and
``StanzaTransport`` through a bare slixmpp connection (the shell's, which leaves after a
request or two and should not import SPADE for it). Each says how one request travels
(``exchange``); everything else is here, so both behave alike.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import ValidationError

from spade_memory.client.failover import AgentPool
from spade_memory.protocol.batch import Batch
from spade_memory.protocol.errors import (
    Busy,
    InternalServerError,
    MemoryServiceError,
    MemoryTimeout,
    error_for,
)
from spade_memory.protocol.limits import Limits
from spade_memory.protocol.ops import Op, Record, describe
from spade_memory.xmpp.envelope import Failure, bare

R = TypeVar("R", bound=Record)
A = TypeVar("A")


@dataclass(frozen=True)
class Reply:
    """What a memory agent answered: who, its performative, and its body."""

    sender: str
    performative: str
    body: str


class RequestPolicy(ABC):
    """A ``transport.Transport`` over XMPP, less how a request travels (``exchange``)."""

    def __init__(
        self,
        jids: Mapping[str, str | Sequence[str]],
        *,
        timeout: float = 5.0,
        attempts: int = 2,
        max_in_flight: int = Limits.max_in_flight,
        degraded: bool = False,
    ) -> None:
        self.jids: dict[str, str] = {}
        """Each memory service's agent (the first of its pool), by service name."""
        self.pools: dict[str, AgentPool] = {}
        """The pool of agents serving as one, by the bare JID of each of its agents (a
        request sent again after a ``Busy`` goes on in the pool from any of them)."""
        for name, given in jids.items():
            pool = AgentPool([given] if isinstance(given, str) else list(given))
            self.jids[name] = pool.jids[0]
            if len(pool.jids) > 1:
                self.pools.update((bare(jid), pool) for jid in pool.jids)
        self.timeout = timeout
        self.attempts = attempts
        """Times a request is sent (same request id) before it times out."""
        self.degraded = degraded
        self._in_flight = asyncio.Semaphore(max_in_flight)
        """Calls beyond the memory agents' per-sender limit wait here instead of being refused."""

    def agents(self, to: str) -> tuple[str, ...]:
        """Every agent serving as ``to`` does: its pool, or ``to`` alone."""
        pool = self.pools.get(bare(to))
        return (to,) if pool is None else pool.jids

    def targets(self, to: str) -> list[str]:
        """Where a request for ``to`` goes, in the order to try: ``to`` alone, or its
        pool's agents, the next in turn first."""
        pool = self.pools.get(bare(to))
        return [to] if pool is None else pool.order()

    def heard(self, to: str, target: str, answered: bool) -> None:
        """Tell ``to``'s pool (if any) whether ``target`` answered a request."""
        pool = self.pools.get(bare(to))
        if pool is None:
            return
        if answered:
            pool.answered(bare(target))
        else:
            pool.silent(target)

    async def in_turn(
        self,
        to: str,
        targets: Sequence[str],
        send: Callable[[str], Awaitable[None]],
        answer: asyncio.Future[A],
        replier: Callable[[A], str],
    ) -> A | None:
        """Send one request (``send(target)``, the same request id each time) to
        ``targets`` (``to``'s agents, from ``targets(to)``) in turn, ``attempts`` times and
        at least once to each, until ``answer`` is set; ``replier`` names who answered.

        Returns the answer, or None when none came within ``timeout`` of any send.
        """
        for attempt in range(max(self.attempts, len(targets))):
            target = targets[attempt % len(targets)]
            await send(target)
            try:
                reply = await asyncio.wait_for(asyncio.shield(answer), self.timeout)
            except asyncio.TimeoutError:
                self.heard(to, target, answered=False)
                continue
            self.heard(to, replier(reply), answered=True)
            return reply
        return None

    @abstractmethod
    async def exchange(
        self, to: str, op: Op[Any], request_id: str, hold: asyncio.Semaphore
    ) -> Reply | None:
        """Send ``op`` for ``to`` (``attempts`` times at most, same ``request_id``) and
        return the reply, or None when none came; the transport then releases ``hold``
        (the call's in-flight slot) itself, when it is done waiting."""

    async def request(self, to: str, op: Op[R]) -> R | None:
        """Send ``op`` to the memory agent ``to`` (to its pool's next agent in turn, when
        ``to`` heads a pool).

        Returns the op's result, or None from a degraded transport that got no
        reply; raises the reply's typed error (``MemoryServiceError``), or
        ``MemoryTimeout`` when no reply came.
        """
        request_id = uuid.uuid4().hex
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout * self.attempts
        try:  # waiting for a slot is part of the call's time budget
            await asyncio.wait_for(self._in_flight.acquire(), deadline - loop.time())
        except asyncio.TimeoutError:
            if self.degraded:
                return None
            raise MemoryTimeout(f"{to}: no request slot free within the call's time") from None
        timed_out = False
        try:
            while True:
                reply = await self.exchange(to, op, request_id, self._in_flight)
                if reply is None:
                    timed_out = True  # the transport holds the slot until it stops waiting
                    break
                try:
                    return _result(to, op, reply)
                except Busy as busy:
                    pause = busy.retry_after * random.uniform(0.5, 1.5)
                    if loop.time() + pause > deadline:
                        raise
                    await asyncio.sleep(pause)  # then the same request id again
        finally:
            if not timed_out:
                self._in_flight.release()
        if self.degraded:
            return None
        raise MemoryTimeout(
            f"no reply from {to} within {self.timeout}s (sent {self.attempts} times)"
        )

    async def batch(self, to: str, ops: Sequence[Op[Any]]) -> list[Record | MemoryServiceError]:
        """Send ``ops`` to the memory agent ``to`` in one message: fewer messages, far
        more ops per second (and one transaction in the agent's store).

        Returns each op's result or typed error, in order (``MemoryTimeout`` for
        each from a degraded transport that got no reply); raises
        ``MemoryServiceError`` when the batch as a whole is refused.
        """
        batch = Batch(ops=[op.model_dump(mode="json", exclude_none=True) for op in ops])
        reply = await self.request(to, batch)
        if reply is None:
            return [MemoryTimeout(f"no reply from {to} (degraded)") for _ in ops]
        outcomes: list[Record | MemoryServiceError] = []
        for op, item in zip(ops, reply.results, strict=True):
            if item.ok:
                outcomes.append(type(op).result.model_validate(item.result))
            else:
                outcomes.append(
                    error_for(item.condition or "", item.text or "", proposal=item.proposal)
                )
        return outcomes


def _result(to: str, op: Op[R], reply: Reply) -> R:
    """The op's result in an ``inform`` reply; raises the typed error of any other."""
    try:
        if reply.performative == "inform":
            result: R = type(op).result.model_validate_json(reply.body)  # type: ignore[assignment]
            return result
        failure = Failure.model_validate_json(reply.body)
    except ValidationError as error:
        raise InternalServerError(f"malformed reply from {to}: {describe(error)}") from None
    raise error_for(failure.condition, failure.text, failure.retry_after, failure.proposal)
