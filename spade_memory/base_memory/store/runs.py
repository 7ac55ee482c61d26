"""Plain stores, one at a time or a run of them in one pass.

A store costs a read (is the same memory here?), an insert and, in a batch, a
savepoint around both. In a batch of a hundred stores that was most of the SQL.
So a run of consecutive plain stores (into the sender's personal space, linking
no work item) is applied here in one pass, with one read per category and one
insert for the new memories. Each store still answers and notes what it would
alone (``Writes.store``):
- the same memory already here is reinforced;
- a repeat within the run is deduplicated against the first;
- a request id already applied gets its first answer.

A quota the run would cross raises ``ResourceConstraint``. The batch then applies
the run op by op, so the stores up to the quota succeed and the rest fail, as
they would alone.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from uuid_utils import uuid7

from spade_memory.base_memory.classify.classifier import Classification, classify
from spade_memory.base_memory.facts.frames import frame_of, subject_key_of
from spade_memory.base_memory.retrieval.ranking import embedding_text
from spade_memory.base_memory.store import journal, sizes
from spade_memory.base_memory.store.effects import Effects
from spade_memory.base_memory.store.tables import folded, text_key
from spade_memory.base_memory.work_items import WorkItems
from spade_memory.protocol.expiry import expiry_of
from spade_memory.protocol.limits import Limits
from spade_memory.protocol.memories import RECORDED, Stored, StoreMemory
from spade_memory.protocol.ops import Place, Record, Request
from spade_memory.protocol.tags import dumps
from spade_memory.storage.connection import Database
from spade_memory.storage.statements import parts, placeholders

INSERT = (
    "INSERT INTO memories (id, owner, category, content, context, confidence,"
    " created_at, last_accessed, access_count, content_key, space,"
    " tags, metadata, source, work_items, expires_at,"
    " valid_from, valid_to, supersedes, subject_key) VALUES "
)
"""A new memory's columns (a ``VALUES`` row of ``ROW`` each follows)."""
ROW = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
REINFORCE = (
    "UPDATE memories SET confidence = CASE WHEN confidence < ? THEN ? ELSE confidence END,"
    " access_count = access_count + 1, last_accessed = ? WHERE id = ?"
)
"""A store of a memory already here: its confidence raised to the store's (never
lowered), one access more (confidence, confidence, now, id)."""
ROWS_PER_INSERT = 200
"""New memories one statement inserts at most (SQLite binds 32,766 values at most)."""


def new_id() -> str:
    """A new memory's id: a UUIDv7, ordered by time, so the id index of a store taking
    thousands of memories a second grows at its end instead of at random pages, which
    makes its inserts cheaper than random UUIDv4s would."""
    return str(uuid7())


def category_of(op: StoreMemory) -> tuple[str, Classification | None]:
    """The store's category: the one it names, or the one ``classify`` chooses (then
    returned too, for its confidence)."""
    if op.category is not None:
        return op.category, None
    chosen = classify(op.content, op.context)
    return chosen.category, chosen


def answer(
    memory_id: str,
    deduplicated: bool,
    category: str,
    chosen: Classification | None,
    work_ids: list[str],
) -> Stored:
    """What a store answers (a reinforced memory keeps its own links: none are named)."""
    return Stored(
        id=memory_id, deduplicated=deduplicated, category=category,
        classified=chosen is not None,
        category_confidence=None if chosen is None else round(chosen.confidence, 3),
        work_items=[] if deduplicated else work_ids,
    )  # fmt: skip


class Described(NamedTuple):
    """The last five of ``INSERT``'s columns, in order (all None: an imported memory)."""

    tags: str | None = None
    metadata: str | None = None
    source: str | None = None
    work_items: str | None = None
    expires_at: float | None = None


class Validity(NamedTuple):
    """``INSERT``'s validity columns: since and until when it is true (epoch seconds;
    None: open), and the memory it supersedes."""

    valid_from: float | None = None
    valid_to: float | None = None
    supersedes: str | None = None


OPEN = Validity()
"""A memory true since ever, until replaced, replacing nothing."""


class Same(NamedTuple):
    """A memory a store reinforces instead of adding its own."""

    id: str
    author: str


def described(op: StoreMemory, work_ids: list[str], expires_at: float | None) -> Described:
    """What the store ``op`` fills of ``INSERT``'s last five columns."""
    return Described(
        dumps(op.tags) if op.tags else None,
        dumps(op.metadata) if op.metadata else None,
        op.source,
        dumps(work_ids) if work_ids else None,
        expires_at,
    )


def plain(request: Request, owner: str, work_items: WorkItems) -> bool:
    """Whether ``request`` is a store a run may take: into ``owner``'s personal space,
    linking no work item, with no validity, replacing nothing (links, shared spaces'
    events and supersedes are written op by op; so is a store that states a frame,
    which may replace a memory)."""
    op = request.op
    if not isinstance(op, StoreMemory) or work_items.ids_in(op.source):
        return False
    if op.supersedes is not None or op.valid_from is not None or op.valid_to is not None:
        return False
    if op.conflicts != "off" and frame_of(op.content) is not None:
        return False
    places = request.places_of(owner)
    return len(places) == 1 and places[0].personal


@dataclass(frozen=True, slots=True)
class _Planned:
    """One store of a run, before anything is written."""

    request: Request
    op: StoreMemory
    category: str
    chosen: Classification | None
    text: str
    """Its content ``folded``."""
    key: str
    """Its ``content_key``."""

    @classmethod
    def of(cls, request: Request) -> _Planned:
        op = request.op
        assert isinstance(op, StoreMemory)
        text = folded(op.content)
        return cls(request, op, *category_of(op), text, text_key(text))


async def store_run(
    db: Database, run: Sequence[Request], work: Effects, limits: Limits
) -> list[Record]:
    """Apply ``run`` (plain stores of ``work.owner``, two or more, in a batch with a
    ledger) in one pass, noting its effects in ``work`` as one op would (between the
    caller's ``work.begin`` and ``work.succeeded``).

    Returns one answer per store, in order; raises ``ResourceConstraint`` when the
    run's new memories would take the owner over its quota.
    """
    ledger, owner = work.ledger, work.owner
    assert ledger is not None, "a run of stores needs the batch's ledger"
    place = Place(owner)
    planned = [_Planned.of(request) for request in run]
    now = time.time()
    same = await _same_memories(db, place, owner, planned, now)
    answers: list[Record] = []
    new: list[tuple[_Planned, str]] = []  # with the new memory's id
    reinforced: list[tuple[float, float, float, str]] = []
    size = 0
    for store in planned:
        request, op = store.request, store.op
        if earlier := await ledger.earlier(db, owner, request.id, work.store_ids):
            answers.append(RECORDED.validate_json(earlier))
            continue
        found = same.get((store.category, store.text))
        memory_id = found.id if found else new_id()
        stored = answer(memory_id, found is not None, store.category, store.chosen, [])
        ledger.claim(owner, request.id, stored)
        if found is not None:
            reinforced.append((op.confidence, op.confidence, now, memory_id))
            ledger.change("updated", memory_id, owner, found.author)
        else:
            same[(store.category, store.text)] = Same(memory_id, owner)
            new.append((store, memory_id))
            size += sizes.new_memory_bytes(op)
            ledger.change("stored", memory_id, owner, owner)
        answers.append(stored)
    await journal.check_quota(db, limits, owner, place, len(new), size, ledger.held)
    if new:
        ledger.use(owner, place, len(new), size)
        await _insert(db, new, work, place, now)
    if reinforced:
        await db.executemany(REINFORCE, reinforced)
    return answers


async def _same_memories(
    db: Database, place: Place, owner: str, planned: Sequence[_Planned], now: float
) -> dict[tuple[str, str], Same]:
    """(category, folded text) → the memories of ``place`` the run's
    stores would reinforce (the sender's own, as ``Writes.store``): one read per
    category, each match confirmed on the text."""
    keys: dict[str, set[str]] = {}
    for store in planned:
        keys.setdefault(store.category, set()).add(store.key)
    same: dict[tuple[str, str], Same] = {}
    for category, of_category in keys.items():
        rows = await db.execute_fetchall(
            "SELECT id, owner, content FROM memories WHERE space = ? AND category = ?"
            f" AND owner = ? AND content_key IN ({placeholders(of_category)})"
            " AND superseded_by IS NULL AND (valid_to IS NULL OR valid_to > ?)"
            " AND (expires_at IS NULL OR expires_at > ?)",
            (place.key, category, owner, *of_category, now, now),
        )
        for memory_id, author, content in rows:
            same.setdefault((category, folded(str(content))), Same(str(memory_id), str(author)))
    return same


async def _insert(
    db: Database, new: Sequence[tuple[_Planned, str]], work: Effects, place: Place, now: float
) -> None:
    """Insert the run's new memories, ``ROWS_PER_INSERT`` a statement, and note what each
    needs once committed: its words indexed, its vector computed."""
    for chunk in parts(new, ROWS_PER_INSERT):
        values: list[object] = []
        for store, memory_id in chunk:
            op = store.op
            values += (
                memory_id, work.owner, store.category, op.content, op.context, op.confidence,
                now, now, 0, store.key, place.key,
                *described(op, [], expiry_of(op.ttl_seconds, op.expires_at)),
                *OPEN, subject_key_of(op.content),
            )  # fmt: skip
        rows = await db.execute_fetchall(
            INSERT + ", ".join([ROW] * len(chunk)) + " RETURNING id, seq", values
        )
        seqs = {str(memory_id): int(seq) for memory_id, seq in rows}
        for store, memory_id in chunk:
            seq, op = seqs[memory_id], store.op
            work.current.need[seq] = place.key  # embedded once committed
            work.current.texts[seq] = embedding_text(op.content, op.context)
            work.adding.append((seq, op.content, op.context, place.key))
