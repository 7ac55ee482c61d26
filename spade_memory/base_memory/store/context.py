"""What the handlers of one long-term store share, passed to them once.

The store (``long_term``) opens and closes what is here; its handlers (``reads``,
``writes``) only use it, so none of them calls back into the store.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spade_memory.base_memory.retrieval.backfill import VectorBackfill
from spade_memory.base_memory.retrieval.ranking import Ranking
from spade_memory.base_memory.store import filters
from spade_memory.base_memory.store.access_counts import AccessLog
from spade_memory.base_memory.store.effects import Effects
from spade_memory.base_memory.store.engine import Engine
from spade_memory.base_memory.store.rows import Row
from spade_memory.base_memory.work_items import WorkItems
from spade_memory.protocol.limits import Limits
from spade_memory.protocol.memories import Filtered, Memory
from spade_memory.protocol.ops import Record, Request
from spade_memory.storage.connection import Database
from spade_memory.storage.requests import RequestLog

Handler = Callable[[Database, Request, Effects], Awaitable[Record]]
"""Applies one op inside the batch's transaction; returns its result or raises its
typed error (the batch rolls the op back)."""


@dataclass
class StoreContext:
    """One store's engine, limits, logs and vectors, as its handlers need them."""

    engine: Engine
    limits: Limits
    """Its quotas (memories and bytes per author and per shared space)."""
    work_items: WorkItems
    """How work-item ids are found in a memory's ``source``."""
    ranking: Ranking
    backfill: VectorBackfill | None
    """Vectors computed after the commit (None without a model)."""
    path: Path | None
    """The SQLite file (None on PostgreSQL)."""
    requests: RequestLog = field(default_factory=RequestLog)
    """Applied request ids, so a retried write gets its first answer."""
    accesses: AccessLog = field(default_factory=AccessLog)
    """Access counts noted by reads, written later."""
    expiring: bool = True
    """Whether some memory may have an expiry (reads then check it; set at open and by
    any write of one)."""
    graph: bool = True
    """Whether the entity graph is kept: links written with each memory, search's
    second round, the graph's reads (off: ``--no-entity-graph``)."""
    dated: bool = True
    """Whether some memory may have a validity or be superseded (reads then check it;
    set at open and by any write of one)."""

    def selection(
        self, op: Any, categories: Sequence[str] | None = None, *, current: bool = True
    ) -> filters.Selection:
        """Returns what ``op`` selects: live memories, of ``categories``, through its
        filters, valid at the moment it asks for (now by default; with ``current``
        false, at any moment unless it asks for one)."""
        narrowing = op if isinstance(op, Filtered) else None
        moment = filters.Moment.of(op)
        return filters.select(
            narrowing, categories, expiring=self.expiring, dialect=self.engine.name,
            moment=moment if current or not moment.now else None, dated=self.dated,
        )  # fmt: skip

    def count_access(
        self,
        found: Sequence[Row],
        names: Mapping[str, str],
        scores: Mapping[int, float] | None = None,
        *,
        counted: bool = True,
    ) -> list[Memory]:
        """Returns the memories of ``found``, each read once more (noted, written later);
        with ``counted`` false (an op's ``count_access``), as they are, nothing noted."""
        seqs = [row.seq for row in found]
        if counted:
            now, counts = self.accesses.note(seqs)
            pending = {seq: (counts[seq], now) for seq in seqs}
        else:
            pending = self.accesses.pending(seqs)
        return [
            row.memory(
                names,
                accessed_at=pending[row.seq][1] if row.seq in pending else None,
                extra_accesses=pending[row.seq][0] if row.seq in pending else 0,
                score=None if scores is None else scores[row.seq],
            )
            for row in found
        ]
