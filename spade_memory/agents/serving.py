"""What a memory agent is: a SPADE agent with one serving behaviour around a service.

A service (the plugin-like unit, in the manner of slixmpp plugins) names
itself, says which ops it parses, and handles one op for one owner. The
agent adds one behaviour that, for every request, decodes the body,
authorises it against the sender's bare JID, lets the service handle it and
replies. Any error becomes a typed ``failure``/``refuse`` reply and the agent
keeps serving; an unexpected exception becomes ``internal-server-error``
without leaking internals.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from pydantic import TypeAdapter
from slixmpp.jid import InvalidJID
from spade.agent import Agent
from spade.behaviour import CyclicBehaviour
from spade.message import Message

from .. import protocol
from ..errors import (
    InternalServerError,
    MemoryServiceError,
    NotAuthorized,
    ResourceConstraint,
)
from ..limits import Limits
from ..ops import Op, parse_op
from ..records import Record

logger = logging.getLogger("spade_memory.agent")


class MemoryService(Protocol):
    """A memory service: the ops it parses and how it handles one of them."""

    name: str
    ops: TypeAdapter[Any]
    limits: Limits

    async def handle(self, owner: str, op: Any, request_id: str | None) -> Record: ...


class ServeRequests(CyclicBehaviour):  # type: ignore[misc]
    """Answers every memory request addressed to the agent, one at a time."""

    def __init__(self, service: MemoryService) -> None:
        super().__init__()
        self.service = service

    async def run(self) -> None:
        request = await self.receive(timeout=1.0)
        if request is not None:
            await self.send(await self.answer(request))

    async def answer(self, request: Message) -> Message:
        try:
            result = await self._serve(request)
        except MemoryServiceError as error:
            return protocol.failure(request, error)
        except Exception:
            logger.exception("%s failed on a request from %s", self.service.name, request.sender)
            return protocol.failure(request, InternalServerError("the memory agent failed"))
        return protocol.inform(request, result)

    async def _serve(self, request: Message) -> Record:
        body = request.body or ""
        if len(body.encode("utf-8", "surrogatepass")) > self.service.limits.max_body_bytes:
            raise ResourceConstraint(
                f"request body over {self.service.limits.max_body_bytes} bytes"
            )
        op = parse_op(self.service.ops, body)
        owner = protocol.bare(request.sender)
        authorize(owner, op)
        check_limits(op, self.service.limits)
        return await self.service.handle(owner, op, request.thread)


def authorize(owner: str, op: Op) -> None:
    """The owner is the sender; a body claiming another identity is refused."""
    if op.owner is None:
        return
    try:
        claimed = protocol.bare(op.owner)
    except InvalidJID:
        claimed = None
    if claimed != owner:
        raise NotAuthorized("a request may only act on the sender's own memories")


def check_limits(op: Op, limits: Limits) -> None:
    """Refuse any text field or result count above the configured limits."""
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

    async def setup(self) -> None:
        # pyjabber (SPADE's embedded server) stops routing bare-JID messages to a
        # re-started session until it announces presence again.
        self.presence.set_available()
        self.add_behaviour(ServeRequests(self.service), protocol.request_template())
