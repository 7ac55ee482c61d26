"""The client's calls to the interaction memory agent: spade_llm's
``AgentInteractionMemory`` over XMPP, working memory, and the context directory."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from spade_memory.client.calls import every_page
from spade_memory.client.rooms import RoomCalls
from spade_memory.protocol.lazy import lazy
from spade_memory.protocol.services import INTERACTION_MEMORY as NAME

if TYPE_CHECKING:
    from spade_memory.client.session import SessionMemory
    from spade_memory.client.session_notices import SessionNotices
    from spade_memory.protocol import context, conversation_stats, notes
    from spade_memory.protocol.working import SessionChanged, WorkingSessions
else:  # their models are built at the first call that sends one
    context = lazy("spade_memory.protocol.context")
    conversation_stats = lazy("spade_memory.protocol.conversation_stats")
    notes = lazy("spade_memory.protocol.notes")


class InteractionCalls(RoomCalls):
    """Conversation notes, working memory and the context directory of the sender, and
    the rooms bound to its spaces (``RoomCalls``).

    Every call raises the reply's typed error (``MemoryServiceError``) or
    ``MemoryTimeout``; a degraded client returns an empty answer instead of a timeout.
    """

    _session_notices: SessionNotices | None = None

    @property
    def interaction_memory_jid(self) -> str:
        """The interaction memory agent's JID."""
        return self.jids[NAME]

    def session(self, session_id: str, *, space: str | None = None) -> SessionMemory:
        """The working memory of one of the sender's sessions, or of a session kept in a
        shared ``space`` (one state its members read and its writers change)."""
        from spade_memory.client.session import SessionMemory  # its models, when first used

        return SessionMemory(self, self.interaction_memory_jid, session_id, space)

    async def list_sessions(
        self, *, space: str | None = None, limit: int = 25, offset: int = 0
    ) -> WorkingSessions | None:
        """A page of the sender's working sessions, or of a shared ``space``'s, by id:
        each one's user, start, focus and counts, and the next page's ``next_offset``
        (None when degraded)."""
        from spade_memory.protocol.working import ListWorkingMemories

        op = ListWorkingMemories(space=space, limit=limit, offset=offset)
        return await self.request(self.interaction_memory_jid, op)

    def on_session_change(
        self, space: str, listener: Callable[[SessionChanged], None]
    ) -> Callable[[], None]:
        """Call ``listener`` with each notice that a working session kept in ``space``
        changed (``SessionChanged``: the session, who changed it, by which op). Notices
        come while the sender is subscribed to the space (``changes(space)`` or
        ``on_change``). Returns the call that stops listening; raises ``TypeError`` for a
        client that does not speak XMPP."""
        if self._session_notices is None:
            # SPADE's, imported only here: a client that never listens loads no SPADE
            from spade_memory.client.session_notices import SessionNotices
            from spade_memory.client.xmpp_transport import XmppTransport
            from spade_memory.xmpp import wire
            from spade_memory.xmpp.notices import SESSION_EVENTS_ONTOLOGY

            transport = self.transport
            if not isinstance(transport, XmppTransport):
                raise TypeError("session notices come over XMPP: this client has no agent")
            agents = transport.agents(self.interaction_memory_jid)
            self._session_notices = SessionNotices([wire.bare(jid) for jid in agents])
            transport.agent.add_behaviour(
                self._session_notices, wire.notice_template(SESSION_EVENTS_ONTOLOGY)
            )
        return self._session_notices.listen(space, listener)

    async def add_information(
        self, conversation_id: str, information: str, *, ttl_seconds: float | None = None,
        expires_at: datetime | None = None,
    ) -> str | None:  # fmt: skip
        """Note ``information`` in a conversation, for good or until ``ttl_seconds`` or
        ``expires_at`` (timezone-aware; the sooner wins) has passed: from then on no read
        shows it.

        Returns spade_llm's confirmation sentence; raises pydantic's ``ValidationError``
        for a ttl that is not positive or a naive ``expires_at``.
        """
        op = notes.AddInformation(
            conversation_id=conversation_id, information=information,
            ttl_seconds=ttl_seconds, expires_at=expires_at,
        )  # fmt: skip
        result = await self.request(self.interaction_memory_jid, op)
        return None if result is None else result.text

    async def get_information(self, conversation_id: str) -> list[str]:
        """The conversation's notes, oldest first, every page of them (empty when
        degraded)."""

        async def page(offset: int) -> notes.Notes | None:
            op = notes.GetInformation(conversation_id=conversation_id, offset=offset)
            return await self.request(self.interaction_memory_jid, op)

        return await every_page(page, lambda answer: answer.notes)

    async def get_context_summary(self, conversation_id: str) -> str | None:
        """``Previous interactions:`` with one ``- `` line per note, every page of them;
        None if none."""

        async def page(offset: int) -> notes.ContextSummary | None:
            op = notes.GetContextSummary(conversation_id=conversation_id, offset=offset)
            return await self.request(self.interaction_memory_jid, op)

        lines = await every_page(page, lambda answer: (answer.summary or "").splitlines())
        kept = [line for line in lines if line != notes.SUMMARY_HEADING]  # one per page
        return "\n".join([notes.SUMMARY_HEADING, *kept]) if kept else None

    async def clear_conversation(self, conversation_id: str, archive: bool = False) -> bool:
        """True if there were notes; ``archive`` writes their summary file first."""
        op = notes.ClearConversation(conversation_id=conversation_id, archive=archive)
        result = await self.request(self.interaction_memory_jid, op)
        return False if result is None else result.cleared

    async def get_all_conversations(self) -> list[notes.ConversationInfo]:
        """The sender's conversations, most recently noted first, every page of them."""

        async def page(offset: int) -> notes.Conversations | None:
            op = notes.GetAllConversations(offset=offset)
            return await self.request(self.interaction_memory_jid, op)

        return await every_page(page, lambda answer: answer.conversations)

    async def export_conversation(self, conversation_id: str) -> notes.InteractionsFile | None:
        """One conversation in spade_llm's interaction-file format, every page of it
        (None when degraded)."""

        async def page(offset: int) -> notes.InteractionsFile | None:
            op = notes.ExportConversation(conversation_id=conversation_id, offset=offset)
            return await self.request(self.interaction_memory_jid, op)

        pages = await every_page(page, lambda answer: [answer])
        if not pages:
            return None
        entries = [entry for one in pages for entry in one.interactions.get(conversation_id, [])]
        interactions = {conversation_id: entries} if entries else {}
        return notes.InteractionsFile(agent_id=pages[0].agent_id, interactions=interactions)

    async def end_conversation(
        self, conversation_id: str, summary: str | None = None, tags: Sequence[str] = (),
        clear: bool = False,
    ) -> context.ContextEntry | None:  # fmt: skip
        """Write the conversation's summary file (its notes unless ``summary`` is given).

        Returns the file written; raises ``ItemNotFound`` when there is nothing to
        summarise, ``BadRequest`` when the agent has no context directory.
        """
        op = context.EndConversation(
            conversation_id=conversation_id, summary=summary, tags=list(tags), clear=clear
        )
        return await self.request(self.interaction_memory_jid, op)

    async def save_preferences(self, user: str, preferences: dict[str, Any]) -> dict[str, Any]:
        """Merge into ``user``'s preferences; all of them after the merge."""
        op = context.SavePreferences(user=user, preferences=preferences)
        result = await self.request(self.interaction_memory_jid, op)
        return {} if result is None else result.preferences

    async def get_preferences(self, user: str) -> dict[str, Any]:
        """``user``'s preferences ({} when none are saved)."""
        result = await self.request(self.interaction_memory_jid, context.GetPreferences(user=user))
        return {} if result is None else result.preferences

    async def save_knowledge(
        self, name: str, content: str, tags: Sequence[str] = (), *, space: str | None = None
    ) -> context.ContextEntry | None:
        """Write (or replace) the knowledge file ``name``, the sender's or a shared
        ``space``'s (writers); the file written."""
        op = context.SaveKnowledge(name=name, content=content, tags=list(tags), space=space)
        return await self.request(self.interaction_memory_jid, op)

    async def search_context(
        self, query: str, type: context.ContextType | None = None, limit: int = 5, *,
        space: str | None = None,
    ) -> list[context.ContextEntry]:  # fmt: skip
        """The best-matching files of the sender's context directory (or of a shared
        ``space``'s knowledge)."""
        op = context.SearchContext(query=query, type=type, limit=limit, space=space)
        result = await self.request(self.interaction_memory_jid, op)
        return [] if result is None else result.entries

    async def interaction_stats(
        self, *, space: str | None = None
    ) -> conversation_stats.InteractionStats | None:
        """What the sender keeps at the interaction memory agent (or a shared ``space``
        it reads): notes, sessions and files, and the bytes they hold against its byte
        budget."""
        return await self.request(
            self.interaction_memory_jid, conversation_stats.InteractionStatsOp(space=space)
        )
