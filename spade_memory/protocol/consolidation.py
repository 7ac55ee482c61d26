"""Consolidation: near-duplicates of a space merged into one memory, in the background or
when asked (``consolidate_memories``; ``dry_run`` shows what it would do)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from spade_memory.protocol.ops import Op, Record
from spade_memory.protocol.space_names import SpaceName


class MergedMemories(Record):
    """Memories stating one fact: ``merged`` went into ``kept``."""

    kept: str
    content: str
    """What the kept memory says."""
    merged: list[str]
    """The ids merged into it: superseded by it, readable through ``as_of`` and history."""


class Consolidated(Record):
    """Result of ``consolidate_memories``: what was (or, on a dry run, would be) merged."""

    dry_run: bool
    compared: int
    """Current memories looked at (the newest ``MOST_COMPARED`` of the space)."""
    merges: list[MergedMemories] = Field(default_factory=list)
    merged: int = 0
    """Memories merged into others."""
    superseded: int = 0
    """Memories of the space replaced so far (by a supersede or a merge)."""
    longest_chain: int = 0
    """The most memories one fact went through (1: none was ever replaced)."""


class ConsolidateMemories(Op[Consolidated]):
    """Merge a space's near-duplicates (the same author and category, the same fact in
    other words) into its most used memory: their access counts add up, the kept memory
    takes a source it lacked, the merged ones are superseded by it (kept in history). In a
    shared space, admins only; ``dry_run`` (the default) only says what it would do."""

    need = "write"
    op: Literal["consolidate_memories"] = "consolidate_memories"
    space: SpaceName | None = Field(
        default=None, description="Optional: a shared space (default: the sender's own)"
    )
    dry_run: bool = Field(default=True, description="Only say what would be merged (default)")
