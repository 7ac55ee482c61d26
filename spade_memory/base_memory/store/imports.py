"""spade_llm's base memory files (``{agent}_base_memory.db``) read into the store by
their own names, any number of them, as often as wanted: a memory keeps its id, times
and access count, and an id already in the store is left as it is, so a second import
adds nothing.

``ImportMemory`` is the store's op for one such memory. It is not part of the protocol
(no peer may set ids or times): only the ``spade-memory import-base-memory`` command,
which holds the data directory, applies it.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from pathlib import Path
from typing import Literal

from pydantic import Field

from spade_memory.base_memory.store.spade_llm_rows import from_spade_llm
from spade_memory.protocol.memories import Stored
from spade_memory.protocol.ops import MemoryId, Op

COLUMNS = (
    "id, agent_id, category, content, context, confidence, created_at, last_accessed, access_count"
)


class ImportMemory(Op[Stored]):
    """One memory as spade_llm kept it (``deduplicated`` in the reply: already there)."""

    op: Literal["import_memory"] = "import_memory"
    id: MemoryId
    category: str = Field(min_length=1)
    content: str
    context: str | None = None
    confidence: float
    created_at: float
    last_accessed: float
    access_count: int = Field(ge=0)


def read_spade_llm_file(path: Path) -> dict[str, list[ImportMemory]]:
    """The memories of a spade_llm base memory file, by owner (its ``agent_id``, as a
    bare JID).

    Raises ``sqlite3.Error`` for a file that is not an SQLite database, and
    ``ValueError`` for one without spade_llm's ``agent_memories`` table.
    """
    uri = f"{path.resolve().as_uri()}?mode=ro"
    with sqlite3.connect(uri, uri=True) as db:
        table = db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'agent_memories'"
        ).fetchone()
        if table is None:
            raise ValueError(f"{path} has no agent_memories table: not a spade_llm base memory")
        rows = db.execute(f"SELECT {COLUMNS} FROM agent_memories ORDER BY created_at").fetchall()
    by_owner: dict[str, list[ImportMemory]] = defaultdict(list)
    for row in rows:
        memory_id, owner, category, content, context, confidence, created, accessed, count = (
            from_spade_llm(tuple(row))
        )
        fields = {
            "id": memory_id, "category": category, "content": content, "context": context,
            "confidence": confidence, "created_at": created, "last_accessed": accessed,
            "access_count": count,
        }  # fmt: skip
        by_owner[str(owner).split("/", 1)[0].lower()].append(ImportMemory.model_validate(fields))
    return dict(by_owner)
