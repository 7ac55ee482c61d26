"""Forgetting everything one agent keeps at the interaction memory agent: its conversation
notes, its working-memory sessions, its files in the context directory, and the answers
kept for its retries. What it put in a shared space (a session or knowledge there)
stays: it belongs to the space."""

from __future__ import annotations

from typing import Literal

from spade_memory.protocol.ops import Op, SenderForgotten


class InteractionsForgotten(SenderForgotten):
    """Result of ``forget_interactions``: what was (or, on a dry run, would be) deleted."""

    notes: int
    conversations: int
    sessions: int
    files: int


class ForgetInteractions(Op[InteractionsForgotten]):
    """Delete every note, working-memory session and context file of the sender's own,
    and every answer kept for its requests; ``dry_run`` counts them and deletes nothing."""

    op: Literal["forget_interactions"] = "forget_interactions"
    dry_run: bool = False
