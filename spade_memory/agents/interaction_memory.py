"""The interaction memory agent: conversation notes, working memory, context directory."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import Any

from pydantic import TypeAdapter

from ..context_dir import ContextDirectory, ContextFile
from ..context_ops import (
    CONTEXT_OPS,
    ContextEntries,
    ContextEntry,
    EndConversation,
    GetPreferences,
    Preferences,
    SaveKnowledge,
    SavePreferences,
    SearchContext,
)
from ..errors import BadRequest, ItemNotFound
from ..interaction_ops import (
    ClearConversation,
    GetInformation,
    InteractionOp,
    Notes,
    context_summary,
    interaction_ops,
)
from ..limits import Limits
from ..records import Record
from ..stores.interaction import InteractionStore
from .serving import MemoryAgent

RECENT_CONTEXT_REQUESTS = 1000


class InteractionMemoryService:
    """Serves notes and working memory from a store, and the context directory."""

    name = "interaction-memory"

    def __init__(
        self,
        store: InteractionStore,
        context: ContextDirectory | None = None,
        limits: Limits | None = None,
    ) -> None:
        self.store = store
        self.context = context
        self.limits = limits or Limits()
        self.ops: TypeAdapter[InteractionOp] = interaction_ops
        # file writes are not transactional: retries within this run are answered from here
        self._answered: OrderedDict[tuple[str, str], Record] = OrderedDict()

    async def handle(self, owner: str, op: InteractionOp, request_id: str | None) -> Record:
        archiving = isinstance(op, ClearConversation) and op.archive
        if not isinstance(op, CONTEXT_OPS) and not archiving:
            return await self.store.apply(owner, op, request_id)
        key = (owner, request_id or "")
        if request_id is not None and key in self._answered:
            return self._answered[key]
        result = await self._context_op(owner, op, request_id)
        if request_id is not None:
            self._answered[key] = result
            while len(self._answered) > RECENT_CONTEXT_REQUESTS:
                self._answered.popitem(last=False)
        return result

    async def _context_op(self, owner: str, op: Any, request_id: str | None) -> Record:
        context = self.context
        if context is None:
            raise BadRequest("this interaction memory agent has no context directory")
        if isinstance(op, EndConversation | ClearConversation):
            return await self._end(context, owner, op, request_id)
        if isinstance(op, SavePreferences):
            saved = await asyncio.to_thread(
                context.save_preferences, owner, op.user, op.preferences
            )
            return Preferences(user=op.user, preferences=saved)
        if isinstance(op, GetPreferences):
            found = await asyncio.to_thread(context.preferences, owner, op.user)
            return Preferences(user=op.user, preferences=found)
        if isinstance(op, SaveKnowledge):
            written = await asyncio.to_thread(
                context.write_knowledge, owner, op.name, op.content, op.tags
            )
            return _entry(written)
        assert isinstance(op, SearchContext)
        found_files = await asyncio.to_thread(context.search, owner, op.query, op.type, op.limit)
        return ContextEntries(entries=[_entry(file) for file in found_files])

    async def _end(
        self,
        context: ContextDirectory,
        owner: str,
        op: EndConversation | ClearConversation,
        request_id: str | None,
    ) -> Record:
        """Write the conversation's summary file; clear its notes if asked."""
        conversation = op.conversation_id
        notes = await self.store.apply(owner, GetInformation(conversation_id=conversation))
        assert isinstance(notes, Notes)
        given = op.summary if isinstance(op, EndConversation) else None
        summary = given or context_summary(notes.notes)
        written = None
        if summary is not None:
            tags = op.tags if isinstance(op, EndConversation) else []
            written = await asyncio.to_thread(
                context.write_conversation, owner, conversation, summary, tags
            )
        clear = ClearConversation(conversation_id=conversation)
        if isinstance(op, ClearConversation):
            return await self.store.apply(owner, clear, request_id)
        if written is None:
            raise ItemNotFound(f"conversation {conversation!r} has no notes to summarize")
        if op.clear:
            await self.store.apply(owner, clear)
        return _entry(written)


def _entry(file: ContextFile) -> ContextEntry:
    return ContextEntry(type=file.type, path=file.path, title=file.title, text=file.text)


class InteractionMemoryAgent(MemoryAgent):
    """A memory agent serving the interaction memory from ``store`` and ``context``."""

    def __init__(
        self,
        jid: str,
        password: str,
        store: InteractionStore,
        context: ContextDirectory | None = None,
        limits: Limits | None = None,
        **agent_options: Any,
    ) -> None:
        service = InteractionMemoryService(store, context, limits)
        super().__init__(jid, password, service, **agent_options)
