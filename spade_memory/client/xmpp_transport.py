"""The XMPP transport: requests to memory agents and their replies, over the wire.

Each request goes out with a fresh request id in ``thread`` and waits on a
future keyed by that id; one reply-router behaviour resolves the futures, so
many calls can be in flight from one agent and late duplicate replies are
dropped. A request that gets no reply in time is sent once more with the
same request id (the agent applies a repeated write once), then raises
``MemoryTimeout``; a transport built with ``degraded=True`` returns None
instead, so a memory outage never blocks an agent. The result type of a
request is the op's own (``Op[Stored]`` answers ``Stored``).

A service served by several agents (a pool of JIDs on one shared store, see
``failover``) gets each request at the next agent in turn; one that does not reply in
time hands the same request id to the next agent.

Back-pressure is absorbed here: a ``Busy`` refusal (too many requests in
flight) is waited out with jitter and the request sent again under the same
id, within the call's time budget; and a request that timed out keeps its
in-flight slot until its late reply comes (or ``LATE_REPLY_GRACE`` passes),
so this side's limit never lets more through than the agent's limit takes. That policy
is ``request_policy``'s, shared with the shell's transport; this module carries the
requests through a SPADE agent.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from spade.agent import Agent
from spade.message import Message

from spade_memory.client.request_policy import Reply, RequestPolicy
from spade_memory.protocol.limits import Limits
from spade_memory.protocol.ops import Op
from spade_memory.xmpp import wire, xml_escape
from spade_memory.xmpp.lifecycle import WakesWhenKilled
from spade_memory.xmpp.notices import PROPOSALS_ONTOLOGY
from spade_memory.xmpp.reconnect import keep_connected

LATE_REPLY_GRACE = 60.0
"""Seconds a timed-out request still counts as in flight, waiting for its late reply."""


@dataclass
class _Pending:
    request: Message
    repliers: tuple[str, ...]
    """Bare JIDs the reply may come from (the agent asked, or its pool)."""
    answer: asyncio.Future[Message]


class ReplyRouter(WakesWhenKilled):
    """Hands each memory reply to the call waiting for its request id.

    A reply is taken only from the agent the request went to (or its pool); late
    duplicates, replies nobody waits for and the proposals' chat messages (no request
    id) are dropped.
    """

    def __init__(self) -> None:
        super().__init__()
        self.pending: dict[str, _Pending] = {}

    async def on_start(self) -> None:
        keep_connected(self.agent, self, self.resend_pending)

    async def resend_pending(self) -> None:
        """After a reconnection, send every unanswered request again (same request id):
        what was sent while the connection was down is lost."""
        for waiting in list(self.pending.values()):
            if not waiting.answer.done():
                await self.send(_from_this_connection(self.agent, waiting.request))

    async def run(self) -> None:
        reply = await self.receive(timeout=1.0)
        if reply is None or reply.thread is None:
            return
        waiting = self.pending.get(reply.thread)
        if waiting is None or waiting.answer.done():
            return
        if wire.bare(reply.sender) in waiting.repliers:
            waiting.answer.set_result(reply)


def _from_this_connection(agent: Agent, request: Message) -> Message:
    """``request`` sent from the agent's current full JID, so the reply comes back to
    this connection: SPADE would send from the bare JID, and SPADE's embedded server
    then routes the reply to a previous, closed connection of the same agent.
    A ``sender`` naming another JID is left as it is (tests forge it on purpose)."""
    ours = request.empty_sender() or wire.bare(request.sender) == wire.bare(agent.jid)
    if ours and agent.client is not None:
        request.sender = str(agent.client.boundjid.full)
    return request


class XmppTransport(RequestPolicy):
    """Sends ops to memory agents on behalf of ``agent`` and awaits their replies
    (the ``transport.Transport`` that a ``MemoryClient`` uses unless given another)."""

    def __init__(
        self,
        agent: Agent,
        jids: Mapping[str, str | Sequence[str]],
        *,
        timeout: float = 5.0,
        attempts: int = 2,
        max_in_flight: int = Limits.max_in_flight,
        degraded: bool = False,
    ) -> None:
        super().__init__(
            jids,
            timeout=timeout,
            attempts=attempts,
            max_in_flight=max_in_flight,
            degraded=degraded,
        )
        xml_escape.install()
        self.agent = agent
        self._router = ReplyRouter()
        self._late: set[asyncio.Task[None]] = set()
        # the proposals' chat messages too: a client reads proposals with its calls, and
        # SPADE warns of a message no behaviour takes, body and all
        proposals = wire.notice_template(PROPOSALS_ONTOLOGY)
        agent.add_behaviour(self._router, wire.reply_template() | proposals)

    async def exchange(
        self, to: str, op: Op[Any], request_id: str, hold: asyncio.Semaphore
    ) -> Reply | None:
        """``op`` sent as a SPADE message (see ``round_trip``)."""
        reply = await self.round_trip(wire.request_message(to, op, request_id), hold)
        if reply is None:
            return None
        performative = reply.get_metadata("performative") or ""
        return Reply(str(reply.sender), performative, str(reply.body or ""))

    async def round_trip(
        self, request: Message, hold: asyncio.Semaphore | None = None
    ) -> Message | None:
        """Send a prepared request (its ``thread`` is the request id) and await the reply.

        Sent at most ``attempts`` times (to a pool: at least once to each of its agents,
        the next in turn first), with the same request id, and once more after each
        reconnection. Returns the reply, or None if none came; then ``hold`` (an
        in-flight slot the caller holds) is released only when the late reply comes or
        ``LATE_REPLY_GRACE`` passes.
        """
        request_id = str(request.thread)
        answer: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        targets = self.targets(str(request.to))
        repliers = tuple(wire.bare(target) for target in targets)
        self._router.pending[request_id] = _Pending(request, repliers, answer)

        async def send(target: str) -> None:
            request.to = target
            await self._router.send(_from_this_connection(self.agent, request))

        reply = await self.in_turn(targets[0], targets, send, answer, lambda got: str(got.sender))
        if reply is not None:
            self._router.pending.pop(request_id, None)
            return reply
        late = asyncio.create_task(self._late_reply(request_id, answer, hold))
        self._late.add(late)
        late.add_done_callback(self._late.discard)
        return None

    async def _late_reply(
        self, request_id: str, answer: asyncio.Future[Message], hold: asyncio.Semaphore | None
    ) -> None:
        """Wait for the reply to a request that timed out, holding its slot meanwhile."""
        deadline = asyncio.get_running_loop().time() + LATE_REPLY_GRACE
        try:
            while not answer.done() and not self._router.is_killed():
                left = deadline - asyncio.get_running_loop().time()
                if left <= 0:
                    break
                await asyncio.wait({answer}, timeout=min(left, 0.5))
        finally:
            self._router.pending.pop(request_id, None)
            if hold is not None:
                hold.release()
