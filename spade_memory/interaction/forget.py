"""Forgetting everything one agent keeps at the interaction memory agent: its conversation
notes, its working-memory sessions and its files in the context directory. What it put
in a shared space (a session or knowledge there) stays: it belongs to the space."""

from __future__ import annotations

from typing import Literal

from ..ops import Op, Record, Request
from ..storage.connection import Database


class Forgotten(Record):
    """Result of ``forget_interactions``: what was (or, on a dry run, would be) deleted."""

    notes: int
    conversations: int
    sessions: int
    files: int
    dry_run: bool


class ForgetInteractions(Op[Forgotten]):
    """Delete every note, working-memory session and context file of the sender's own;
    ``dry_run`` counts them and deletes nothing."""

    op: Literal["forget_interactions"] = "forget_interactions"
    dry_run: bool = False


async def forget_in_store(db: Database, owner: str, request: Request) -> Forgotten:
    """Count, and unless a dry run delete, ``owner``'s notes and personal sessions (files
    are counted as 0: the service adds them)."""
    op = request.op
    assert isinstance(op, ForgetInteractions)
    ((notes, conversations),) = await db.execute_fetchall(
        "SELECT COUNT(*), COUNT(DISTINCT conversation_id) FROM notes WHERE owner = ?", (owner,)
    )
    ((sessions,),) = await db.execute_fetchall(
        "SELECT COUNT(*) FROM working_memories WHERE owner = ?", (owner,)
    )
    if not op.dry_run:
        await db.execute("DELETE FROM notes WHERE owner = ?", (owner,))
        await db.execute("DELETE FROM working_memories WHERE owner = ?", (owner,))
    return Forgotten(
        notes=notes, conversations=conversations, sessions=sessions, files=0, dry_run=op.dry_run
    )
