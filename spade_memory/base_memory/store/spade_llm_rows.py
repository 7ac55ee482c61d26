"""A row of spade_llm's ``agent_memories`` table as a row of ours: the one-time import
of its table when a store opens on its file, and ``spade-memory import-base-memory``."""

from __future__ import annotations

from datetime import datetime


def from_spade_llm(row: tuple[object, ...]) -> tuple[object, ...]:
    memory_id, agent_id, category, content, context, confidence, created, accessed, count = row
    created_at = _epoch(created)
    return (
        str(memory_id),
        str(agent_id),
        str(category),
        str(content),
        None if context is None else str(context),
        1.0 if confidence is None else float(str(confidence)),
        created_at,
        _epoch(accessed, default=created_at),
        int(str(count or 0)),
    )


def _epoch(value: object, default: float = 0.0) -> float:
    """spade_llm writes naive local-time ISO strings; read them as local time."""
    if value is None:
        return default
    try:
        return datetime.fromisoformat(str(value)).timestamp()
    except ValueError:
        return default
