"""What a memory agent is: a SPADE agent with one serving behaviour around a service.

A memory service is a plugin in the manner of slixmpp's: a ``ServicePlugin``
names it (``name``, the JID ``node``), lists its ops, carries its
``default_config`` and its command-line flags, and opens the service object
(``MemoryService``: the ops it parses, ``batch`` to apply them, and any extra
behaviours). ``spade_memory.registry`` lists the plugins; nothing else names
a service.

The agent adds one behaviour that, for every request, decodes the body,
authorises it against the sender's bare JID, lets the service apply it (a
``batch`` request is one call, so one transaction in the store) and replies.
Any error becomes a typed ``failure``/``refuse`` reply and the agent keeps
serving; an unexpected exception becomes ``internal-server-error`` without
leaking internals.

Requests are served concurrently (the stores keep each transaction whole),
at most ``Limits.max_in_flight`` per sender: more are answered
``resource-constraint`` at once, so one flooding peer cannot queue up work
for everyone. A request repeated while its first copy is still being served
is not served twice: both copies get the first copy's answer.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

from pydantic import TypeAdapter
from pydantic_core import to_json
from slixmpp.jid import InvalidJID
from spade.agent import Agent
from spade.behaviour import CyclicBehaviour
from spade.message import Message
from spade.template import Template

from . import wire, xml_escape
from .batch import BatchItem, BatchResults, item_request_id, parse_batch
from .errors import (
    InternalServerError,
    MemoryServiceError,
    NotAuthorized,
    ResourceConstraint,
)
from .limits import Limits
from .ops import Op, Outcome, Record, Request, in_place, parse_op
from .reconnect import keep_connected
from .storage.connection import Synchronous

logger = logging.getLogger("spade_memory.agent")

Behaviours = Sequence[tuple[CyclicBehaviour, Template | None]]


class MemoryService(Protocol):
    """A memory service: the ops it parses, how it applies them, its extra behaviours."""

    name: str
    ops: TypeAdapter[Any]
    limits: Limits

    async def batch(self, owner: str, requests: Sequence[Request]) -> list[Outcome]:
        """Apply ``requests`` for ``owner``; one outcome (result or typed error) each."""
        ...

    async def apply(self, owner: str, op: Any, request_id: str | None = None) -> Any:
        """One op: its result, or its typed error raised."""
        ...

    def behaviours(self, agent: Agent) -> Behaviours:
        """Behaviours the agent runs beside serving (with their templates)."""
        ...


@dataclass(frozen=True)
class ServiceConfig:
    """Settings of one service in a run; each service subclasses it with its own."""

    jid: str | None = None
    """The agent's JID (default: ``node@domain``)."""


@dataclass
class ServiceContext:
    """Where a service opens: the run's data directory, limits and the other agents."""

    data_dir: Path
    limits: Limits
    synchronous: Synchronous
    jids: Mapping[str, str]
    """Every registered service's JID in this deployment, by service name."""
    followers: tuple[str, ...]
    """JIDs of the running services that follow this one (its mirrors)."""
    closing: AsyncExitStack
    """Where the service registers what must be closed when the run stops."""


class ServicePlugin:
    """A registered memory service: its names, ops, configuration and how it opens."""

    name: ClassVar[str]
    """The service's name (``--services``, the schema); also its default JID node."""
    title: ClassVar[str]
    """What a person calls its agent ("base memory agent")."""
    union: ClassVar[Any]
    """The discriminated union of the service's ops (its classes name their replies)."""
    ops: ClassVar[TypeAdapter[Any]]
    """The parser of that union."""
    default_config: ClassVar[ServiceConfig] = ServiceConfig()
    follows: ClassVar[str | None] = None
    """The service whose change notices this one follows, if any."""

    @property
    def node(self) -> str:
        """The local part of the agent's default JID."""
        return self.name

    async def open(self, config: Any, context: ServiceContext) -> MemoryService:
        """Open the service's stores (closed through ``context.closing``).

        Returns the service to serve; raises ``RuntimeError`` with one sentence
        when it cannot start.
        """
        raise NotImplementedError

    def add_arguments(self, parser: argparse._ActionsContainer) -> None:
        """Add the service's own flags to ``spade-memory run``."""

    def configure(self, args: argparse.Namespace) -> ServiceConfig:
        """The service's config from the parsed flags of ``spade-memory run``."""
        return self.default_config

    def from_environment(self, environ: Mapping[str, str]) -> ServiceConfig:
        """The service's config from a deployment's environment variables."""
        return self.default_config

    def places(self, config: Any, data_dir: Path) -> list[tuple[str, str]]:
        """Where the service keeps its data, for the start-up banner."""
        return []


class ServeRequests(CyclicBehaviour):  # type: ignore[misc]
    """Answers every memory request addressed to the agent."""

    def __init__(self, service: MemoryService) -> None:
        super().__init__()
        self.service = service
        self.in_flight: Counter[str] = Counter()
        """Requests being served, per sender's bare JID."""
        self._serving: dict[tuple[str, str], list[Message]] = {}
        """Requests being served by (sender, request id), with their repeats."""
        self._tasks: set[asyncio.Task[None]] = set()

    async def on_start(self) -> None:
        # pyjabber (SPADE's embedded server) stops routing bare-JID messages to a
        # new session until it announces presence again.
        keep_connected(self.agent, self, self.agent.presence.set_available)

    async def run(self) -> None:
        request = await self.receive(timeout=1.0)
        if request is None:
            return
        sender = wire.bare(request.sender)
        key = (sender, str(request.thread))
        if request.thread is not None and key in self._serving:
            self._serving[key].append(request)
            return
        limit = self.service.limits.max_in_flight
        if self.in_flight[sender] >= limit:
            busy = ResourceConstraint(f"more than {limit} requests in flight from {sender}")
            await self.send(wire.failure(request, busy))
            return
        self.in_flight[sender] += 1
        if request.thread is not None:
            self._serving[key] = [request]
        task = asyncio.create_task(self._serve_and_reply(request, sender, key))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _serve_and_reply(self, request: Message, sender: str, key: tuple[str, str]) -> None:
        try:
            outcome = await self.outcome(request)
            for copy in self._serving.pop(key, [request]):
                await self.send(wire.reply_to(copy, outcome))
        finally:
            self.in_flight[sender] -= 1
            if self.in_flight[sender] <= 0:
                del self.in_flight[sender]

    async def drain(self, timeout: float = 10.0) -> None:
        """Let the requests being served finish (before the stores close)."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=timeout)

    async def outcome(self, request: Message) -> Outcome:
        """The request's result, or the typed error to answer it with."""
        try:
            return await self._serve(request)
        except MemoryServiceError as error:
            return error
        except Exception:
            logger.exception("%s failed on a request from %s", self.service.name, request.sender)
            return InternalServerError("the memory agent failed")

    async def _serve(self, request: Message) -> Record:
        body = request.body or ""
        limits = self.service.limits
        if len(body.encode("utf-8", "surrogatepass")) > limits.max_body_bytes:
            raise ResourceConstraint(f"request body over {limits.max_body_bytes} bytes")
        owner = wire.bare(request.sender)
        batch = parse_batch(body)
        if batch is None:
            op = self._checked(owner, body)
            result: Record = await self.service.apply(owner, op, request.thread)
            return result
        authorize(owner, batch)
        if len(batch.ops) > limits.max_batch_ops:
            raise ResourceConstraint(f"a batch is over {limits.max_batch_ops} ops")
        return await self._serve_batch(owner, batch.ops, request.thread)

    async def _serve_batch(
        self, owner: str, bodies: list[dict[str, Any]], request_id: str | None
    ) -> BatchResults:
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
        outcomes = in_place(len(bodies), refused, applied)
        return BatchResults(results=[_item(outcome) for outcome in outcomes])

    def _checked(self, owner: str, body: str) -> Op[Any]:
        """The op a body carries, once parsed, authorised and within the limits."""
        op: Op[Any] = parse_op(self.service.ops, body)
        authorize(owner, op)
        check_limits(op, self.service.limits)
        return op


def _item(outcome: Outcome) -> BatchItem:
    if isinstance(outcome, MemoryServiceError):
        return BatchItem(ok=False, condition=outcome.condition.value, text=outcome.text)
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
    """Refuse any text field or result count above the configured limits.

    Raises ``ResourceConstraint`` naming the field.
    """
    for field, value in op:
        if isinstance(value, str) and len(value) > limits.max_content_chars:
            raise ResourceConstraint(f"{field} is over {limits.max_content_chars} characters")
        if field == "limit" and isinstance(value, int) and value > limits.max_results:
            raise ResourceConstraint(f"limit is over {limits.max_results}")


class MemoryAgent(Agent):  # type: ignore[misc]
    """A SPADE agent that serves one memory service over XMPP."""

    def __init__(
        self, jid: str, password: str, service: MemoryService, **agent_options: Any
    ) -> None:
        super().__init__(jid, password, **agent_options)
        self.service = service
        xml_escape.install()

    async def setup(self) -> None:
        """Serve requests, and add the service's own behaviours."""
        # pyjabber (SPADE's embedded server) stops routing bare-JID messages to a
        # re-started session until it announces presence again.
        self.presence.set_available()
        self.serving = ServeRequests(self.service)
        self.add_behaviour(self.serving, wire.request_template())
        for behaviour, template in self.service.behaviours(self):
            self.add_behaviour(behaviour, template)

    async def stop(self) -> None:
        """Stop, letting the requests being served finish first."""
        serving: ServeRequests | None = getattr(self, "serving", None)
        await super().stop()
        if serving is not None:
            await serving.drain()
