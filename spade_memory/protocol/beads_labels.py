"""The words a memory leaves on its beads issue that the protocol also reads: its memory
type, the label prefixes the service reserves, and the metadata key it keeps its own data under."""

from __future__ import annotations

from typing import Literal

MemoryType = Literal["conversation", "decision", "pattern", "context", "learning", "artifact"]

MEMORY_LABEL, AGENT_LABEL, SESSION_LABEL, CATEGORY_LABEL, SPACE_LABEL = (
    "memory:",
    "agent:",
    "session:",
    "category:",
    "space:",
)
RESERVED_LABEL_PREFIXES = (MEMORY_LABEL, AGENT_LABEL, SESSION_LABEL, CATEGORY_LABEL, SPACE_LABEL)
OUR_METADATA = "spade_memory"
