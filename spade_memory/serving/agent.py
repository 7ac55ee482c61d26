"""What a memory agent is: a SPADE agent with one serving behaviour around a service
(a ``MemoryService``, opened by its ``ServicePlugin``: see ``plugin``).

The agent adds one behaviour that, for every request, decodes the body,
authorises it against the sender's bare JID (an account of another server writes only
in the spaces granted to it: ``remote``), lets the service apply it (a
``batch`` request is one call, so one transaction in the store) and replies.
Any error becomes a typed ``failure``/``refuse`` reply and the agent keeps
serving; an unexpected exception becomes ``internal-server-error`` without
leaking internals.

Requests are served concurrently (the stores keep each transaction whole),
at most ``Limits.max_in_progress`` at once whoever sent them; the others wait
in a ``FairQueue`` that takes senders in turn, so one sender's backlog never
sits in front of everyone else's, and a sender whose ops being served reach
``Limits.max_sender_ops`` (a batch counts its ops) waits while others are served, as
does one answered more bytes lately than ``Limits.sender_answer_rate`` a second. A
sender may have at most
``Limits.max_in_flight`` requests waiting or served, and all senders together
at most ``Limits.max_waiting`` waiting: more are answered ``Busy``
(``resource-constraint`` with ``retry_after``), and when the room is full the
sender with the most waiting gives up its newest to one with fewer, so a flood
from many accounts never turns away a sender under its share. Refusals are sent
after the requests that arrived with them are under way, one at a time, so
refusing a flood does not delay the others' requests either. A request id still
being served, or a write already answered, gets its first answer before any limit
is checked: a retried write is never refused and never applied twice (a read
already answered is simply served again).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections import Counter, deque
from collections.abc import Sequence
from contextvars import ContextVar
from typing import Any, NamedTuple, TypeVar, cast

from pydantic import TypeAdapter
from pydantic_core import to_json
from slixmpp.jid import InvalidJID
from slixmpp.stanza import Message as Stanza
from spade.agent import Agent
from spade.message import Message

from spade_memory.metrics.figures import IN_PROGRESS, LATENCY, REFUSALS, REQUESTS, WAITING
from spade_memory.protocol.batch import (
    BatchItem,
    BatchResults,
    item_request_id,
    ops_in,
    parse_batch,
)
from spade_memory.protocol.errors import (
    BadRequest,
    Busy,
    InternalServerError,
    MemoryServiceError,
    NotAuthorized,
    PendingApproval,
    ResourceConstraint,
    ServiceUnavailable,
)
from spade_memory.protocol.limits import Limits
from spade_memory.protocol.ops import (
    AppliesOps,
    Op,
    Outcome,
    Record,
    Request,
    SenderForgotten,
    in_place,
    parse_op,
)
from spade_memory.protocol.xml_chars import uncarriable_in
from spade_memory.serving.fairness import AnswerRate, FairQueue
from spade_memory.serving.plugin import Behaviours, MemoryService
from spade_memory.serving.remote import check_remote
from spade_memory.storage.answers import RecentAnswers
from spade_memory.xmpp import adhoc, discovery, plain_peers, wire, xml_escape
from spade_memory.xmpp.lifecycle import WakesWhenKilled
from spade_memory.xmpp.reconnect import keep_connected

logger = logging.getLogger("spade_memory.agent")
R = TypeVar("R", Record, Outcome)
RETRY_AFTER = 0.25
"""Seconds a sender over its in-flight limit is told to wait before sending the request again."""
reply_address: ContextVar[str | None] = ContextVar("reply_address", default=None)
"""The full JID the request being served came from (its connection), for a service
that must write to it later (a space's change notices)."""


class ServeRequests(WakesWhenKilled):
    """Answers every memory request addressed to the agent."""

    def __init__(self, service: MemoryService, home: str) -> None:
        """``home``: the agent's domain (an account of another is served less: ``remote``)."""
        super().__init__()
        self.service = service
        self.home = home
        self.in_flight: Counter[str] = Counter()
        """Requests waiting or being served, per sender's bare JID."""
        self.waiting: FairQueue[Waiting] = FairQueue()
        """Requests admitted but not yet being served, with their sender, key and ops."""
        self.ops_served: Counter[str] = Counter()
        """Ops being served, per sender's bare JID (a batch counts its ops)."""
        self.working = 0
        """Requests being served."""
        self.answer_rate = AnswerRate(service.limits.sender_answer_rate)
        """Bytes answered per sender lately: one over its rate waits its turn."""
        self._wake: asyncio.TimerHandle | None = None
        """When a sender passed over for its answers' bytes may be served again."""
        self._draining = False
        self._refusals: deque[Message] = deque()
        """``Busy`` replies not sent yet (they go after the served requests)."""
        self._serving: dict[tuple[str, str], list[Message]] = {}
        """Requests waiting or being served by (sender, request id), with their repeats."""
        self._tasks: set[asyncio.Task[None]] = set()
        self.answered = RecentAnswers(max_bytes=service.limits.retry_answers_bytes)
        """Results of recent writes by (sender, request id): a retry gets the first answer
        at once, whatever the limits. Reads and failures are not kept: they are served
        again."""
        self._figures: dict[tuple[str, str], tuple[Any, Any]] = {}
        """The counter and histogram of each (op, outcome) met (``metrics``)."""
        REFUSALS.labels(service.name)  # exported as 0 from the start
        WAITING.labels(service.name).set_function(lambda: len(self.waiting))
        IN_PROGRESS.labels(service.name).set_function(lambda: self.working)

    async def on_start(self) -> None:
        # pyjabber (SPADE's embedded server) stops routing bare-JID messages to a
        # new session until it announces presence again.
        keep_connected(self.agent, self, self.agent.presence.set_available, probe=True)

    async def run(self) -> None:
        if not self._refusals:  # nothing left to do but wait for a request
            request = await self.receive(timeout=1.0)
            if request is None:
                return
            await self._admit(request)
        while (arrived := await self.receive()) is not None:  # all that came meanwhile
            await self._admit(arrived)
        self._start_waiting()
        if self._refusals:  # one at a time: what arrives meanwhile is admitted first
            await self.reply(self._refusals.popleft())

    async def _admit(self, request: Message) -> None:
        """Answer a known request id at once; queue the request within the limits, or
        refuse it."""
        sender = wire.bare(request.sender)
        key = (sender, str(request.thread))
        if request.thread is not None:  # a known request id is answered before any limit
            if key in self._serving:
                self._serving[key].append(request)
                return
            answered = self.answered.get(sender, request.thread)
            if answered is not None:
                await self.reply(wire.inform(request, answered))
                return
        limits = self.service.limits
        if self.in_flight[sender] >= limits.max_in_flight:
            why = f"more than {limits.max_in_flight} requests in flight from {sender}"
        elif len(self.waiting) >= limits.max_waiting and not self._make_room(sender):
            why = f"more than {limits.max_waiting} requests waiting"
        else:
            self.in_flight[sender] += 1
            if request.thread is not None:
                self._serving[key] = [request]
            body = request.body or ""
            ops = ops_in(body) if len(body) <= limits.max_body_bytes else 1  # refused later
            self.waiting.put(sender, Waiting(request, sender, key, ops))
            return
        self._refusals.append(wire.failure(request, Busy(why, RETRY_AFTER)))
        REFUSALS.labels(self.service.name).inc()

    def _make_room(self, sender: str) -> bool:
        """In a full waiting room, refuse the newest request of the sender with the most
        waiting when that is more than ``sender``'s one more would be; True if done."""
        longest = self.waiting.longest()
        if longest is None or longest[1] <= self.waiting.count(sender) + 1:
            return False
        request, other, key, _ops = self.waiting.drop_newest(longest[0])
        self.in_flight[other] -= 1
        why = f"more than {self.service.limits.max_waiting} requests waiting, and {other} had most"
        for copy in self._serving.pop(key, [request]):
            self._refusals.append(wire.failure(copy, Busy(why, RETRY_AFTER)))
        REFUSALS.labels(self.service.name).inc()
        return True

    def _start_waiting(self) -> None:
        """Serve waiting requests, senders in turn, up to ``max_in_progress`` at once,
        passing over a sender whose ops being served would pass ``max_sender_ops``."""
        limits = self.service.limits

        def may_start(sender: str, waiting: Waiting) -> bool:
            if not self._draining and self.answer_rate.wait(sender) > 0:
                return False
            serving = self.ops_served[sender]
            return serving == 0 or serving + waiting.ops <= limits.max_sender_ops

        while self.working < limits.max_in_progress:
            taken = self.waiting.take(may_start)
            if taken is None:
                self._wake_after_the_answers_drain()
                return
            self.working += 1
            self.ops_served[taken.sender] += taken.ops
            task = asyncio.create_task(self._serve_and_reply(taken))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _wake_after_the_answers_drain(self) -> None:
        """Serve again when the first sender passed over for its answers' bytes may be
        served (one passed over for its ops is served when one of them ends)."""
        if self._wake is not None:
            return
        waits = [
            wait for sender in self.waiting.senders() if (wait := self.answer_rate.wait(sender))
        ]
        if not waits:
            return

        def wake() -> None:
            self._wake = None
            self._start_waiting()

        self._wake = asyncio.get_running_loop().call_later(min(waits), wake)

    async def _serve_and_reply(self, waiting: Waiting) -> None:
        request, sender, key, ops = waiting
        reply_address.set(str(request.sender))
        try:
            outcome, changed = await self._answer(request)
            copies = self._serving.pop(key, [request])
            replies = [wire.reply_to(copy, outcome) for copy in copies]
            most = self.service.limits.max_reply_bytes
            if _over(replies[0].body or "", most):  # the server would drop the agent's stream
                outcome = ResourceConstraint(
                    f"this answer is over {most:,} bytes, the most one reply carries (run"
                    " --max-reply-bytes): ask for fewer, or in a batch of its own"
                    + ("; the change it answers was made" if changed else "")
                )
                replies = [wire.reply_to(copy, outcome) for copy in copies]
            if changed and request.thread is not None and isinstance(outcome, Record):
                self.answered.keep(sender, request.thread, outcome, len(replies[0].body))
            for reply in replies:
                await self.reply(reply)
            self.answer_rate.charge(sender, sum(len(reply.body or "") for reply in replies))
        finally:
            self.working -= 1
            self.in_flight[sender] -= 1
            if self.in_flight[sender] <= 0:
                del self.in_flight[sender]
            self.ops_served[sender] -= ops
            if self.ops_served[sender] <= 0:
                del self.ops_served[sender]
            self._start_waiting()

    async def reply(self, message: wire.Envelope) -> None:
        """Send a reply as its text (``Envelope.text``) on the agent's XMPP stream, in
        turn with what else it sends; to an agent of this process, through SPADE, which
        delivers it without XMPP. SPADE's own ``send`` builds slixmpp's stanza objects
        and keeps a trace of every message, which a memory agent has no use for."""
        agent = self.agent
        if agent.container.has_agent(str(message.to)):
            await self.send(message)
            return
        if message.empty_sender():
            message.sender = str(agent.jid)
        agent.client.send(message.text(agent.client))

    async def drain(self, timeout: float = 10.0) -> None:
        """Let the requests being served, and those waiting their turn, finish (before
        the stores close), for at most ``timeout`` seconds."""
        self._draining = True  # the last requests are served whatever they cost
        if self._wake is not None:
            self._wake.cancel()
            self._wake = None
        self._start_waiting()
        deadline = asyncio.get_running_loop().time() + timeout
        while self._tasks and (left := deadline - asyncio.get_running_loop().time()) > 0:
            await asyncio.wait(set(self._tasks), timeout=left)

    async def outcome(self, request: Message) -> Outcome:
        """The request's result, or the typed error to answer it with."""
        return (await self._answer(request))[0]

    async def _answer(self, request: Message) -> tuple[Outcome, bool]:
        """``outcome``, and whether it changed something (so a retry needs it kept);
        counted and timed by op and outcome (``metrics``)."""
        started, named = time.perf_counter(), ["unknown"]
        try:
            answer: tuple[Outcome, bool] = await self._serve(request, named)
        except MemoryServiceError as error:
            answer = error, False
        except Exception:
            logger.exception("%s failed on a request from %s", self.service.name, request.sender)
            answer = InternalServerError("the memory agent failed"), False
        outcome, name = answer[0], self.service.name
        condition = outcome.condition.value if isinstance(outcome, MemoryServiceError) else "ok"
        counted = self._figures.get((named[0], condition))
        if counted is None:  # once per op and outcome: labels() takes a lock each time
            counted = REQUESTS.labels(name, named[0], condition), LATENCY.labels(name, named[0])
            self._figures[(named[0], condition)] = counted
        counted[0].inc()
        counted[1].observe(time.perf_counter() - started)
        return answer

    async def _serve(self, request: Message, named: list[str]) -> tuple[Record, bool]:
        """The request's result; ``named`` gets its op's name once it parses."""
        body = request.body or ""
        limits = self.service.limits
        if len(body.encode("utf-8", "surrogatepass")) > limits.max_body_bytes:
            raise ResourceConstraint(f"request body over {limits.max_body_bytes} bytes")
        owner = wire.bare(request.sender)
        batch = parse_batch(body)
        if batch is None:
            op = self._checked(owner, body)
            named[0] = type(op).model_fields["op"].default
            result: Record = await self.service.apply(owner, op, request.thread)
            return self._forgetting(owner, result), not op.reads_only
        named[0] = "batch"
        authorize(owner, batch)
        if len(batch.ops) > limits.max_batch_ops:
            raise ResourceConstraint(f"a batch is over {limits.max_batch_ops} ops")
        return await self._serve_batch(owner, batch.ops, request.thread)

    async def _serve_batch(
        self, owner: str, bodies: list[dict[str, Any]], request_id: str | None
    ) -> tuple[BatchResults, bool]:
        """Every valid op of the batch goes to the service in one call; the invalid
        ones fail alone, in their place."""
        refused: dict[int, MemoryServiceError] = {}
        valid: list[Request] = []
        for index, body in enumerate(bodies):
            try:
                op = self._checked(owner, to_json(body).decode())
            except MemoryServiceError as error:
                refused[index] = error
                continue
            valid.append(Request(op, item_request_id(request_id, index)))
        applied: list[Outcome]
        try:
            applied = await self.service.batch(owner, valid) if valid else []
        except Exception as error:
            if not isinstance(error, MemoryServiceError):
                logger.exception("%s failed on a batch from %s", self.service.name, owner)
                error = InternalServerError("the memory agent failed")
            applied = [error] * len(valid)
        applied = [self._forgetting(owner, outcome) for outcome in applied]
        outcomes = in_place(len(bodies), refused, applied)
        changed = any(not request.op.reads_only for request in valid)
        return BatchResults(results=[_item(outcome) for outcome in outcomes]), changed

    def _forgetting(self, owner: str, outcome: R) -> R:
        """After an op that forgot everything of ``owner`` (``SenderForgotten``), the
        answers kept here for its retries go too (they carry its text), counted in the
        result's ``replies``; a dry run counts them."""
        if not isinstance(outcome, SenderForgotten):
            return outcome
        kept = self.answered.forget(owner, outcome.dry_run)
        return cast(R, outcome.model_copy(update={"replies": outcome.replies + kept}))

    def _checked(self, owner: str, body: str) -> Op[Any]:
        """The op a body carries, once parsed, authorised and within the limits."""
        uncarriable = uncarriable_in(body)
        if uncarriable is not None:  # stored, it would drop every stream it is sent on
            raise BadRequest(uncarriable)
        op: Op[Any] = parse_op(self.service.ops, body)
        authorize(owner, op)
        check_remote(owner, op, self.home)
        check_limits(op, self.service.limits)
        return op


class Waiting(NamedTuple):
    """A request admitted and not yet served: its sender's bare JID, its key (sender,
    request id), and the ops it carries (its weight for ``Limits.max_sender_ops``)."""

    request: Message
    sender: str
    key: tuple[str, str]
    ops: int


def _over(body: str, most: int) -> bool:
    """Whether ``body``, escaped as the stanza carries it, is more than ``most`` bytes of
    UTF-8: escaped only when it could be (a character takes at most six, ``&quot;``)."""
    if 6 * len(body) <= most:
        return False
    return len(xml_escape.escape(body).encode("utf-8", "surrogatepass")) > most


def op_names(ops: TypeAdapter[Any]) -> list[str]:
    """The ``op`` tags a service's union of ops accepts, sorted."""
    return sorted(ops.json_schema()["discriminator"]["mapping"])


def _item(outcome: Outcome) -> BatchItem:
    if isinstance(outcome, MemoryServiceError):
        proposal = outcome.proposal if isinstance(outcome, PendingApproval) else None
        return BatchItem(
            ok=False, condition=outcome.condition.value, text=outcome.text, proposal=proposal
        )
    return BatchItem(ok=True, result=outcome.model_dump(mode="json"))


def authorize(owner: str, op: Op[Any]) -> None:
    """The owner is the sender; a body claiming another identity is refused.

    Raises ``NotAuthorized`` when the op names an owner other than ``owner``.
    """
    if op.owner is None:
        return
    try:
        claimed = wire.bare(op.owner)
    except InvalidJID:
        claimed = None
    if claimed != owner:
        raise NotAuthorized("a request may only act on the sender's own memories")


def check_limits(op: Op[Any], limits: Limits) -> None:
    """Refuse any text field, result count or offset above the configured limits.

    Raises ``ResourceConstraint`` naming the field.
    """
    for field, value in op.__dict__.items():  # a quarter of what pydantic's iteration costs
        if isinstance(value, str) and len(value) > limits.max_content_chars:
            raise ResourceConstraint(f"{field} is over {limits.max_content_chars} characters")
        if field == "limit" and isinstance(value, int) and value > limits.max_results:
            raise ResourceConstraint(f"limit is over {limits.max_results}")
        if field == "offset" and isinstance(value, int) and value > limits.max_offset:
            raise ResourceConstraint(f"offset is over {limits.max_offset:,}")


class OutOfService(AppliesOps):
    """What an agent serves when its store could not open (``--allow-damaged``): every
    op answered ``service-unavailable`` with the reason, nothing stored."""

    def __init__(self, name: str, ops: TypeAdapter[Any], limits: Limits, reason: str) -> None:
        self.name = name
        self.ops = ops
        self.limits = limits
        self.reason = reason

    async def batch(self, owner: str, requests: Sequence[Request]) -> list[Outcome]:
        """``service-unavailable`` for each request."""
        return [ServiceUnavailable(self.reason) for _ in requests]

    def behaviours(self, agent: Agent) -> Behaviours:
        """None."""
        return []


class MemoryAgent(Agent):  # type: ignore[misc]
    """A SPADE agent that serves one memory service over XMPP."""

    def __init__(
        self, jid: str, password: str, service: MemoryService, **agent_options: Any
    ) -> None:
        super().__init__(jid, password, **agent_options)
        self.service = service
        xml_escape.install()

    @functools.cached_property
    def op_names(self) -> list[str]:
        """What a peer sending something else is told it may send (made when first told:
        the union's JSON schema costs a start about 80 ms)."""
        return op_names(self.service.ops)

    async def setup(self) -> None:
        """Serve requests, and add the service's own behaviours."""
        # pyjabber (SPADE's embedded server) stops routing bare-JID messages to a
        # re-started session until it announces presence again.
        self.presence.set_available()
        discovery.describe(self.client, self.service.name)
        self.serving = ServeRequests(self.service, str(self.jid.domain))
        commands: Sequence[adhoc.Command] = getattr(self.service, "commands", ())  # optional
        if commands:
            adhoc.offer(self.client, commands, self.serving.outcome)
        self.add_behaviour(self.serving, wire.request_template())
        for behaviour, template in self.service.behaviours(self):
            self.add_behaviour(behaviour, template)

    def dispatch(self, msg: Message) -> list[asyncio.Task[None]]:
        """Put ``msg`` in the mailbox of each behaviour whose template it matches, at once.

        SPADE's own dispatch makes two tasks per behaviour, keeps a trace of every
        message, and also delivers to behaviours added without a template: here the
        notifiers, which only send, and whose mailboxes would keep every request the
        agent ever served. Returns no tasks (nothing is left to run)."""
        delivered = False
        for behaviour in self.behaviours:
            if behaviour.template is not None and behaviour.template.match(msg):
                behaviour.queue.put_nowait(msg)
                delivered = True
        if not delivered:
            logger.debug("no behaviour takes a message from %s", msg.sender)
        return []

    def _message_received(self, stanza: Stanza) -> list[asyncio.Task[None]]:
        """SPADE's reading of the stanza and the agent's ``dispatch``, plus what peers
        without SPADE's form send (``plain_peers``): an op is served as a request,
        anything else with a body is answered with an error saying what to send; error
        stanzas are never answered."""
        if stanza["type"] == "error" or self._claimed(stanza):
            return []
        message = Message.from_node(stanza)
        if message.get_metadata("performative") is not None:  # a SPADE peer
            tasks: list[asyncio.Task[None]] = self.dispatch(message)
            return tasks
        request = plain_peers.as_request(stanza)
        if request is None:
            return []
        oversized = len(request.body) > self.service.limits.max_body_bytes  # refused unparsed
        if oversized or plain_peers.names_an_op(request.body):
            tasks = self.dispatch(request)
            return tasks
        text = plain_peers.what_to_send(self.service.name, self.op_names)
        plain_peers.refusal(stanza, text).send()
        return []

    def _claimed(self, stanza: Stanza) -> bool:
        """Whether a behaviour of the service takes ``stanza`` itself (a group chat's
        messages: ``claims``, which a service may have), so it is no request."""
        claims = getattr(self.service, "claims", None)
        return claims is not None and bool(claims(stanza))

    async def stop(self) -> None:
        """Stop, letting the requests being served finish first."""
        serving: ServeRequests | None = getattr(self, "serving", None)
        await super().stop()
        if serving is not None:
            await serving.drain()
