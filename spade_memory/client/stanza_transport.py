"""Requests to memory agents over a bare slixmpp connection (``stanza_login``): the
transport of a command that sends a request or two and leaves.

The requests are the ones a SPADE agent sends (the same metadata form, the request id
in ``<thread>``), and the policy is ``request_policy``'s; only the carrying differs. A
request that got no reply frees its slot at once: the command is about to leave.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from slixmpp import ClientXMPP
from slixmpp.stanza import Message as Stanza

from spade_memory.client.request_policy import Reply, RequestPolicy
from spade_memory.protocol.ops import Op
from spade_memory.xmpp import xml_escape
from spade_memory.xmpp.envelope import ONTOLOGY, bare, metadata_form, metadata_of, request_metadata

ANSWERS = ("inform", "failure", "refuse")
"""The performatives of a reply."""


@dataclass
class _Waiting:
    repliers: tuple[str, ...]
    """Bare JIDs the reply may come from (the agent asked, or its pool)."""
    answer: asyncio.Future[Reply]


class StanzaTransport(RequestPolicy):
    """Sends ops to memory agents over ``client`` (a logged-in slixmpp client) and
    awaits their replies: a ``transport.Transport``."""

    def __init__(
        self,
        client: ClientXMPP,
        jids: Mapping[str, str | Sequence[str]],
        *,
        timeout: float = 5.0,
        attempts: int = 2,
        degraded: bool = False,
    ) -> None:
        super().__init__(jids, timeout=timeout, attempts=attempts, degraded=degraded)
        xml_escape.install()
        self.client = client
        self._waiting: dict[str, _Waiting] = {}
        client.add_event_handler("message", self._received)

    def _received(self, stanza: Stanza) -> None:
        """Hand a reply to the request waiting for it (others are dropped)."""
        waiting = self._waiting.get(stanza["thread"])
        if waiting is None or waiting.answer.done():
            return
        metadata = metadata_of(stanza.xml)
        if metadata.get("ontology") != ONTOLOGY or metadata.get("performative") not in ANSWERS:
            return
        sender = str(stanza["from"])
        if bare(sender) in waiting.repliers:
            waiting.answer.set_result(Reply(sender, metadata["performative"], stanza["body"]))

    async def exchange(
        self, to: str, op: Op[Any], request_id: str, hold: asyncio.Semaphore
    ) -> Reply | None:
        """Send ``op`` to ``to`` (its pool's agents in turn) until one replies."""
        targets = self.targets(to)
        answer: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = _Waiting(tuple(bare(t) for t in targets), answer)
        body = op.model_dump_json(exclude_none=True, by_alias=True)

        async def send(target: str) -> None:
            stanza: Stanza = self.client.make_message(mto=target, mbody=body, mtype="chat")
            stanza.xml.append(metadata_form(request_metadata(), request_id))
            stanza["thread"] = request_id
            stanza.send()

        try:
            reply = await self.in_turn(to, targets, send, answer, lambda got: got.sender)
        finally:
            del self._waiting[request_id]
        if reply is None:
            hold.release()
        return reply
