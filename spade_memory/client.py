"""MemoryClient: typed async calls to the memory agents, over XMPP.

Each call sends one op with a fresh request id in ``thread`` and waits on a
future keyed by that id; one reply-router behaviour resolves the futures, so
many calls can be in flight from one agent and late duplicate replies are
dropped. A call that gets no reply in time is sent once more with the same
request id (the agent applies a repeated write once), then raises
``MemoryTimeout``; a client built with ``degraded=True`` returns an empty
result marked ``degraded`` instead, so a memory outage never blocks an agent.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import ValidationError
from spade.agent import Agent
from spade.behaviour import CyclicBehaviour
from spade.message import Message

from . import protocol
from .batch import Batch, BatchResults
from .beads_client import BeadsClient
from .beads_ops import BEADS_SYNC_RESULTS
from .context_dir import ContextType
from .context_ops import (
    ContextEntries,
    ContextEntry,
    EndConversation,
    GetPreferences,
    Preferences,
    SaveKnowledge,
    SavePreferences,
    SearchContext,
)
from .errors import (
    InternalServerError,
    ItemNotFound,
    MemoryServiceError,
    MemoryTimeout,
    error_for,
)
from .interaction_ops import (
    INTERACTION_RESULTS,
    AddInformation,
    ClearConversation,
    Cleared,
    Confirmation,
    ContextSummary,
    ConversationInfo,
    Conversations,
    ExportConversation,
    GetAllConversations,
    GetContextSummary,
    GetInformation,
    InteractionsFile,
    Notes,
)
from .limits import Limits
from .ops import (
    DeleteMemory,
    GetMemory,
    ListMemories,
    MemoryStatsOp,
    Op,
    RecentMemories,
    SearchMemories,
    StoreMemory,
    UpdateMemory,
    describe,
)
from .reconnect import keep_connected
from .records import Category, Deleted, Failure, Memory, MemoryList, MemoryStats, Record, Stored
from .session_memory import SessionMemory

R = TypeVar("R", bound=Record)


class Memories(list[Memory]):
    """A list of memories that says whether it is a degraded (empty) answer."""

    def __init__(self, memories: list[Memory] | None = None, *, degraded: bool = False) -> None:
        super().__init__(memories or [])
        self.degraded = degraded


@dataclass
class _Pending:
    request: Message
    replier: str
    """Bare JID the reply must come from."""
    answer: asyncio.Future[Message]


class ReplyRouter(CyclicBehaviour):  # type: ignore[misc]
    """Hands each memory reply to the call waiting for its request id.

    A reply is taken only from the agent the request went to; late
    duplicates and replies nobody waits for are dropped.
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
        if protocol.bare(reply.sender) == waiting.replier:
            waiting.answer.set_result(reply)


def _from_this_connection(agent: Agent, request: Message) -> Message:
    """``request`` sent from the agent's current full JID, so the reply comes back to
    this connection: SPADE would send from the bare JID, and SPADE's embedded server
    then routes the reply to a previous, closed connection of the same agent.
    A ``sender`` naming another JID is left as it is (tests forge it on purpose)."""
    ours = request.empty_sender() or protocol.bare(request.sender) == protocol.bare(agent.jid)
    if ours and agent.client is not None:
        request.sender = str(agent.client.boundjid.full)
    return request


class MemoryClient:
    """Talks to the memory agents on behalf of ``agent``."""

    def __init__(
        self,
        agent: Agent,
        base_memory_jid: str | None = None,
        *,
        interaction_memory_jid: str | None = None,
        beads_sync_jid: str | None = None,
        timeout: float = 5.0,
        attempts: int = 2,
        max_in_flight: int = Limits.max_in_flight,
        degraded: bool = False,
    ) -> None:
        self.agent = agent
        domain = agent.jid.domain
        self.base_memory_jid = base_memory_jid or f"{protocol.BASE_MEMORY_NODE}@{domain}"
        self.interaction_memory_jid = (
            interaction_memory_jid or f"{protocol.INTERACTION_MEMORY_NODE}@{domain}"
        )
        self.beads = BeadsClient(self, beads_sync_jid or f"{protocol.BEADS_SYNC_NODE}@{domain}")
        """The beads sync agent's ops (memories kept as beads issues)."""
        self.timeout = timeout
        self.attempts = attempts
        """Times a request is sent (same request id) before it times out."""
        self.degraded = degraded
        self._in_flight = asyncio.Semaphore(max_in_flight)
        """Calls beyond the memory agents' per-sender limit wait here instead of being refused."""
        self._router = ReplyRouter()
        agent.add_behaviour(self._router, protocol.reply_template())

    async def request(self, to: str, op: Op, result_type: type[R]) -> R | None:
        """Send ``op`` to ``to``; its result, None if degraded and unanswered."""
        async with self._in_flight:
            reply = await self.round_trip(protocol.request_message(to, op, uuid.uuid4().hex))
        if reply is None:
            if self.degraded:
                return None
            raise MemoryTimeout(
                f"no reply from {to} within {self.timeout}s (sent {self.attempts} times)"
            )
        try:
            if reply.get_metadata("performative") == "inform":
                return result_type.model_validate_json(reply.body)
            failure = Failure.model_validate_json(reply.body)
        except ValidationError as error:
            raise InternalServerError(f"malformed reply from {to}: {describe(error)}") from None
        raise error_for(failure.condition, failure.text)

    async def round_trip(self, request: Message) -> Message | None:
        """Send a prepared request (its ``thread`` is the request id) and await the reply.

        Sent at most ``attempts`` times, with the same request id, and once more
        after each reconnection; None if no reply came.
        """
        request_id = str(request.thread)
        answer: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        self._router.pending[request_id] = _Pending(request, protocol.bare(request.to), answer)
        try:
            for _attempt in range(self.attempts):
                await self._router.send(_from_this_connection(self.agent, request))
                try:
                    return await asyncio.wait_for(asyncio.shield(answer), self.timeout)
                except asyncio.TimeoutError:
                    continue
            return None
        finally:
            self._router.pending.pop(request_id, None)

    async def _memories(self, op: Op) -> Memories:
        result = await self.request(self.base_memory_jid, op, MemoryList)
        return Memories(degraded=True) if result is None else Memories(result.memories)

    # The calls below mirror spade_llm's AgentBaseMemory.

    async def store_memory(
        self,
        category: Category,
        content: str,
        context: str | None = None,
        confidence: float = 1.0,
    ) -> str | None:
        """Store a memory; its id (None when degraded and unanswered)."""
        op = StoreMemory(category=category, content=content, context=context, confidence=confidence)
        result = await self.request(self.base_memory_jid, op, Stored)
        return None if result is None else result.id

    async def search_memories(
        self,
        query: str,
        limit: int = 10,
        category: Category | None = None,
        mode: str = "semantic",
    ) -> Memories:
        """Memories ranked by relevance to ``query`` (see ``SearchMemories.mode``)."""
        op = SearchMemories(query=query, limit=limit, category=category, mode=mode)
        return await self._memories(op)

    async def get_memories_by_category(self, category: Category, limit: int = 50) -> Memories:
        return await self._memories(ListMemories(category=category, limit=limit))

    async def get_recent_memories(self, limit: int = 10) -> Memories:
        return await self._memories(RecentMemories(limit=limit))

    async def get_memory(self, memory_id: str) -> Memory | None:
        return await self.request(self.base_memory_jid, GetMemory(id=memory_id), Memory)

    async def update_memory(self, memory_id: str, **changes: Any) -> Memory | None:
        """Change any of ``content``, ``category``, ``context``, ``confidence``."""
        op = UpdateMemory(id=memory_id, **changes)
        return await self.request(self.base_memory_jid, op, Memory)

    async def delete_memory(self, memory_id: str) -> bool:
        """True if deleted; False if there was no such memory (or degraded)."""
        try:
            result = await self.request(self.base_memory_jid, DeleteMemory(id=memory_id), Deleted)
        except ItemNotFound:
            return False
        return result is not None

    async def get_memory_stats(self) -> MemoryStats | None:
        return await self.request(self.base_memory_jid, MemoryStatsOp(), MemoryStats)

    def session(self, session_id: str) -> SessionMemory:
        """The working memory of one of the sender's sessions."""
        return SessionMemory(self, session_id)

    # The calls below mirror spade_llm's AgentInteractionMemory, over XMPP.

    async def add_information(self, conversation_id: str, information: str) -> str | None:
        """Note ``information`` in a conversation; spade_llm's confirmation sentence."""
        op = AddInformation(conversation_id=conversation_id, information=information)
        result = await self.request(self.interaction_memory_jid, op, Confirmation)
        return None if result is None else result.text

    async def get_information(self, conversation_id: str) -> list[str]:
        """The conversation's notes, oldest first (empty when degraded)."""
        op = GetInformation(conversation_id=conversation_id)
        result = await self.request(self.interaction_memory_jid, op, Notes)
        return [] if result is None else result.notes

    async def get_context_summary(self, conversation_id: str) -> str | None:
        """``Previous interactions:`` with one ``- `` line per note; None if none."""
        op = GetContextSummary(conversation_id=conversation_id)
        result = await self.request(self.interaction_memory_jid, op, ContextSummary)
        return None if result is None else result.summary

    async def clear_conversation(self, conversation_id: str, archive: bool = False) -> bool:
        """True if there were notes; ``archive`` writes their summary file first."""
        op = ClearConversation(conversation_id=conversation_id, archive=archive)
        result = await self.request(self.interaction_memory_jid, op, Cleared)
        return False if result is None else result.cleared

    async def get_all_conversations(self) -> list[ConversationInfo]:
        """The sender's conversations, most recently noted first."""
        result = await self.request(
            self.interaction_memory_jid, GetAllConversations(), Conversations
        )
        return [] if result is None else result.conversations

    async def export_conversation(self, conversation_id: str) -> InteractionsFile | None:
        """One conversation in spade_llm's interaction-file format."""
        op = ExportConversation(conversation_id=conversation_id)
        return await self.request(self.interaction_memory_jid, op, InteractionsFile)

    # The context directory (human-readable files that outlive sessions).

    async def end_conversation(
        self, conversation_id: str, summary: str | None = None, tags: Sequence[str] = (),
        clear: bool = False,
    ) -> ContextEntry | None:  # fmt: skip
        """Write the conversation's summary file (its notes unless ``summary`` is given)."""
        op = EndConversation(
            conversation_id=conversation_id, summary=summary, tags=list(tags), clear=clear
        )
        return await self.request(self.interaction_memory_jid, op, ContextEntry)

    async def save_preferences(self, user: str, preferences: dict[str, Any]) -> dict[str, Any]:
        """Merge into ``user``'s preferences; all of them after the merge."""
        op = SavePreferences(user=user, preferences=preferences)
        result = await self.request(self.interaction_memory_jid, op, Preferences)
        return {} if result is None else result.preferences

    async def get_preferences(self, user: str) -> dict[str, Any]:
        result = await self.request(
            self.interaction_memory_jid, GetPreferences(user=user), Preferences
        )
        return {} if result is None else result.preferences

    async def save_knowledge(
        self, name: str, content: str, tags: Sequence[str] = ()
    ) -> ContextEntry | None:
        op = SaveKnowledge(name=name, content=content, tags=list(tags))
        return await self.request(self.interaction_memory_jid, op, ContextEntry)

    async def search_context(
        self, query: str, type: ContextType | None = None, limit: int = 5
    ) -> list[ContextEntry]:
        """The best-matching files of the sender's context directory."""
        op = SearchContext(query=query, type=type, limit=limit)
        result = await self.request(self.interaction_memory_jid, op, ContextEntries)
        return [] if result is None else result.entries

    # Several ops in one message.

    async def batch(self, to: str, ops: Sequence[Op]) -> list[Record | MemoryServiceError]:
        """Send ``ops`` to the memory agent ``to`` in one message; a result or the typed
        error of each, in order. Fewer messages, far more ops per second."""
        results = {
            self.base_memory_jid: protocol.BASE_MEMORY_RESULTS,
            self.interaction_memory_jid: INTERACTION_RESULTS,
            self.beads.jid: BEADS_SYNC_RESULTS,
        }.get(to, {})
        batch = Batch(ops=[op.model_dump(mode="json", exclude_none=True) for op in ops])
        reply = await self.request(to, batch, BatchResults)
        if reply is None:
            return [MemoryTimeout(f"no reply from {to} (degraded)") for _ in ops]
        outcomes: list[Record | MemoryServiceError] = []
        for op, item in zip(ops, reply.results, strict=True):
            if not item.ok:
                outcomes.append(error_for(item.condition or "", item.text or ""))
                continue
            model = results.get(str(getattr(op, "op", "")))
            if model is None:
                raise InternalServerError(f"no result model for {op!r}")
            outcomes.append(model.model_validate(item.result))
        return outcomes
