"""Conversation notes: the interaction memory agent's ops and replies for them.

They mirror spade_llm's ``AgentInteractionMemory`` (``add_information``,
``get_information``, ``get_context_summary``, ``clear_conversation``) plus
``get_all_conversations`` and an export in spade_llm's file format. Notes are
always the sender's own: the owner is the sender's bare JID.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from spade_memory.protocol.expiry import ExpiresAt, TtlSeconds
from spade_memory.protocol.ops import NextOffset, Op, PageOffset, Record

ConversationId = Annotated[str, Field(min_length=1, max_length=512)]


class Confirmation(Record):
    """Result of ``add_information``: spade_llm's confirmation sentence."""

    text: str


class Notes(Record):
    """Result of ``get_information``: the notes, oldest first."""

    conversation_id: str
    notes: list[str]
    next_offset: NextOffset = None


class ContextSummary(Record):
    """Result of ``get_context_summary``: None when there are no notes."""

    summary: str | None
    next_offset: NextOffset = None


class Cleared(Record):
    """Result of ``clear_conversation``: whether there was anything to clear."""

    cleared: bool


class ConversationInfo(Record):
    """One conversation: its id, how many notes, when the last was noted."""

    conversation_id: str
    notes: int
    last_note_at: str


class Conversations(Record):
    """Result of ``get_all_conversations``, most recently noted first."""

    conversations: list[ConversationInfo]
    next_offset: NextOffset = None


class NoteEntry(Record):
    """One note as spade_llm's interaction file keeps it."""

    content: str
    timestamp: str


class InteractionsFile(Record):
    """spade_llm's interaction file: ``{"agent_id", "interactions": {id: [entries]}}``."""

    agent_id: str
    interactions: dict[str, list[NoteEntry]]
    next_offset: NextOffset = None


class AddInformation(Op[Confirmation]):
    """Note ``information`` in one of the sender's conversations, for good or until
    ``ttl_seconds`` or ``expires_at`` (the sooner) has passed."""

    op: Literal["add_information"] = "add_information"
    conversation_id: ConversationId
    information: str = Field(
        min_length=1,
        description="Specific useful information to remember about this agent interaction "
        "(APIs, preferences, capabilities, etc.)",
    )
    ttl_seconds: TtlSeconds | None = None
    expires_at: ExpiresAt | None = None


class GetInformation(Op[Notes]):
    """The conversation's notes, oldest first."""

    op: Literal["get_information"] = "get_information"
    reads_only: ClassVar[bool] = True
    conversation_id: ConversationId
    offset: PageOffset = 0
    """Notes to skip: the reply's ``next_offset``."""


class GetContextSummary(Op[ContextSummary]):
    """``Previous interactions:`` and one ``- note`` line per note (None without notes)."""

    op: Literal["get_context_summary"] = "get_context_summary"
    reads_only: ClassVar[bool] = True
    conversation_id: ConversationId
    offset: PageOffset = 0
    """Notes to skip: the reply's ``next_offset``."""


class ClearConversation(Op[Cleared]):
    """Forget the conversation's notes (``archive``: write their summary file first)."""

    op: Literal["clear_conversation"] = "clear_conversation"
    conversation_id: ConversationId
    archive: bool = False
    """Write the conversation's summary to the context directory first."""


class GetAllConversations(Op[Conversations]):
    """The sender's conversations, most recently noted first."""

    op: Literal["get_all_conversations"] = "get_all_conversations"
    reads_only: ClassVar[bool] = True
    offset: PageOffset = 0
    """Conversations to skip: the reply's ``next_offset``."""


class ExportConversation(Op[InteractionsFile]):
    """One conversation in spade_llm's ``{agent}_interactions.json`` format."""

    op: Literal["export_conversation"] = "export_conversation"
    reads_only: ClassVar[bool] = True
    conversation_id: ConversationId
    offset: PageOffset = 0
    """Notes to skip: the reply's ``next_offset``."""


NoteOp = (
    AddInformation
    | GetInformation
    | GetContextSummary
    | ClearConversation
    | GetAllConversations
    | ExportConversation
)


SUMMARY_HEADING = "Previous interactions:"
"""The first line of a context summary (of each of its pages)."""


def context_summary(notes: list[str]) -> str | None:
    """``Previous interactions:`` and one ``- `` line per note; None without notes."""
    if not notes:
        return None
    return "\n".join([SUMMARY_HEADING, *(f"- {note}" for note in notes)])
