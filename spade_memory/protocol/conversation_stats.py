"""What the sender (or a shared space) keeps at the interaction memory agent, and its
byte budget: the interaction memory's ``memory_stats``."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from spade_memory.protocol.ops import PERSONAL, Op, Record
from spade_memory.protocol.space_names import SpaceName


class InteractionStats(Record):
    """Result of ``interaction_stats``."""

    space: str = PERSONAL
    notes: int = 0
    """Notes not expired (a shared space keeps none)."""
    conversations: int = 0
    sessions: int = 0
    """Working-memory sessions."""
    files: int = 0
    """Files of the context directory (a shared space's knowledge)."""
    used_bytes: int = 0
    """Bytes held against the budget: notes, working memories and files together."""
    file_bytes: int = 0
    """Of ``used_bytes``, those of the files."""
    max_bytes: int = 0
    """The budget: the owner's (``--max-bytes-per-owner``) or the space's."""


class InteractionStatsOp(Op[InteractionStats]):
    """What the sender keeps here (or a shared space it reads), against its byte budget."""

    need = "read"
    op: Literal["interaction_stats"] = "interaction_stats"
    reads_only: ClassVar[bool] = True
    space: SpaceName | None = Field(
        default=None, description="Optional: a shared space's instead of the sender's"
    )
