"""Behaviours of the base memory agent for governed spaces: the chat messages asking
admins to decide a proposal and telling proposers the outcome, and the sweep that
expires proposals no admin decided in time (and applies approved ones whose agent stopped
before their write)."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from slixmpp.jid import InvalidJID
from spade.behaviour import CyclicBehaviour

from spade_memory.base_memory.governance import Governance, Told
from spade_memory.protocol.errors import MemoryServiceError
from spade_memory.serving.drains import Drains
from spade_memory.xmpp.notices import PROPOSALS_ONTOLOGY
from spade_memory.xmpp.wire import Envelope

logger = logging.getLogger("spade_memory.base_memory")
SWEEP_EVERY_SECONDS = 60.0
"""How often the sweep looks for proposals whose time is up (or whose write is due)."""


class TellOfProposals(Drains[Told]):
    """Sends each message of ``Governance.told`` as a plain message (a chat message, or
    a headline for an admin): any XMPP client shows it, and its requests can be sent
    back as they are."""

    work = "proposal_messages"

    def __init__(self, governance: Governance) -> None:
        super().__init__(governance.told)

    async def handle(self, told: Told) -> None:
        try:
            message = Envelope(
                to=told.to,
                body=told.body,
                metadata={"performative": "inform", "ontology": PROPOSALS_ONTOLOGY},
                stanza_type=told.stanza_type,
            )
        except InvalidJID as error:
            logger.warning("a proposal's message to %s is dropped: %s", ascii(told.to), error)
            return
        await self.send(message)


class SweepProposals(CyclicBehaviour):  # type: ignore[misc]
    """Every ``every`` seconds, expires the proposals whose time is up and applies the
    approved ones whose write was never recorded (``Governance.sweep``; their proposers
    are told through ``TellOfProposals``)."""

    def __init__(self, governance: Governance, every: float = SWEEP_EVERY_SECONDS) -> None:
        super().__init__()
        self.governance = governance
        self.every = every
        self._woken = asyncio.Event()

    def kill(self, exit_code: object | None = None) -> None:
        """Kill it, and wake its wait."""
        super().kill(exit_code)
        self._woken.set()

    async def run(self) -> None:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._woken.wait(), timeout=self.every)
        if self.is_killed():
            return
        try:
            settled = await self.governance.sweep()
        except MemoryServiceError as error:  # a full disk: tried again next time
            logger.warning("proposals not swept: %s", error)
            return
        if settled:
            logger.info("%d proposal(s) expired or applied", settled)
