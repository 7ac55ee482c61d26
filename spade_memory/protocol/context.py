"""Context-directory ops and replies, served by the interaction memory agent's service
(the files are not the store's: see ``context_dir``)."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from spade_memory.protocol.json_object import JsonObject
from spade_memory.protocol.ops import Limit, Op, Record
from spade_memory.protocol.space_names import SpaceName

ContextType = Literal["conversation", "preferences", "knowledge"]
Name = Annotated[str, Field(min_length=1, max_length=512)]


class ContextEntry(Record):
    type: ContextType
    path: str
    """Relative to the sender's directory in the context directory."""
    title: str
    text: str


class ContextEntries(Record):
    """Result of ``search_context``, best match first."""

    entries: list[ContextEntry]


class Preferences(Record):
    user: str
    preferences: dict[str, Any]


class EndConversation(Op[ContextEntry]):
    """Write the conversation's summary file (its notes unless ``summary`` is given)."""

    op: Literal["end_conversation"] = "end_conversation"
    conversation_id: Name
    summary: str | None = None
    tags: list[str] = Field(default_factory=list)
    clear: bool = False
    """Also clear the conversation's notes."""


class SavePreferences(Op[Preferences]):
    op: Literal["save_preferences"] = "save_preferences"
    user: Name
    preferences: JsonObject


class GetPreferences(Op[Preferences]):
    op: Literal["get_preferences"] = "get_preferences"
    reads_only: ClassVar[bool] = True
    user: Name


class SaveKnowledge(Op[ContextEntry]):
    """Write (or replace) a named knowledge file, the sender's or a shared space's."""

    need = "write"
    op: Literal["save_knowledge"] = "save_knowledge"
    name: Name
    content: str = Field(min_length=1)
    tags: list[str] = Field(default_factory=list)
    space: SpaceName | None = Field(
        default=None, description="Optional: a shared space's knowledge (default: the sender's)"
    )


class SearchContext(Op[ContextEntries]):
    """Keyword search over the sender's context directory (or a shared space's knowledge),
    best first."""

    need = "read"
    op: Literal["search_context"] = "search_context"
    reads_only: ClassVar[bool] = True
    query: str
    type: ContextType | None = None
    limit: Limit = 5
    space: SpaceName | None = Field(
        default=None, description="Optional: search a shared space's knowledge instead"
    )


ContextOp = EndConversation | SavePreferences | GetPreferences | SaveKnowledge | SearchContext
