"""What one batch of a long-term store carries through its handlers.

An op's effects that reach past its own rows (vectors to compute or drop, words to
index, shared spaces' events, work-item links, bookkeeping rows) are noted here
while it runs and kept only if it succeeds: ``begin`` before it, ``succeeded``
after it; an op rolled back to its savepoint leaves nothing behind.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from spade_memory.base_memory.retrieval.ranking import QueryVector
from spade_memory.base_memory.store import words
from spade_memory.base_memory.store.journal import SpaceEvent
from spade_memory.base_memory.store.ledger import Ledger
from spade_memory.base_memory.work_items import WorkLink


@dataclass
class VectorChanges:
    """What ops did to vectors: memories that need one (new or changed text), and memories
    deleted; each seq → its space's key."""

    need: dict[int, str] = field(default_factory=dict)
    texts: dict[int, str] = field(default_factory=dict)
    """The text to embed of each memory of ``need``."""
    gone: dict[int, str] = field(default_factory=dict)

    def absorb(self, other: VectorChanges) -> None:
        self.need.update(other.need)
        self.texts.update(other.texts)
        self.gone.update(other.gone)
        for seq in other.gone:
            self.need.pop(seq, None)
            self.texts.pop(seq, None)

    def stale(self) -> set[int]:
        """Memories whose committed vector no longer holds."""
        return self.need.keys() | self.gone.keys()


@dataclass
class Effects:
    """What one batch carries through its handlers."""

    owner: str
    """The sender: the author of what it stores, the actor of what it changes."""
    queries: dict[int, QueryVector | None] = field(default_factory=dict)
    """Search queries' embeddings, computed before the transaction, by ``id(request)``."""
    vectors: VectorChanges = field(default_factory=VectorChanges)
    """What the ops that succeeded so far did to vectors (committed with the batch)."""
    current: VectorChanges = field(default_factory=VectorChanges)
    """What the op being applied does to vectors (kept only if it succeeds)."""
    events: dict[int, list[SpaceEvent]] = field(default_factory=dict)
    """Shared spaces' events of each request, by ``id(request)``."""
    unindexed: words.Unindexed = field(default_factory=list)
    """New memories of the ops that succeeded, not yet in the word index (``words``)."""
    adding: words.Unindexed = field(default_factory=list)
    """New memories of the op being applied (kept only if it succeeds)."""
    links: dict[int, list[WorkLink]] = field(default_factory=dict)
    """Work-item links each request made, by ``id(request)``."""
    ledger: Ledger | None = None
    """The stores' bookkeeping rows, written once per batch (a batch of several ops on
    SQLite; None: each op writes its own)."""
    store_ids: list[str] = field(default_factory=list)
    """The request ids of the batch's stores (read at once by the ledger)."""
    plans: dict[int, object] = field(default_factory=dict)
    """Consolidations planned before the transaction, by ``id(request)``."""
    answer_left: int = 1 << 62
    """Bytes of memories the batch's answers may still carry (``Limits.max_answer_bytes``
    at its start; ``reads.read_fitting`` spends it)."""

    def begin(self) -> None:
        """A new op (or run of ops): what the last one did was kept or dropped."""
        self.current, self.adding = VectorChanges(), []
        if self.ledger is not None:
            self.ledger.begin()

    def succeeded(self) -> None:
        """Keep what the op since ``begin`` did: it is committed with the batch."""
        self.vectors.absorb(self.current)
        self.unindexed += self.adding
        if self.ledger is not None:
            self.ledger.succeeded()
