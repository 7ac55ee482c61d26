"""Following the graph: the memories naming an entity (read up to a bound), which names
an entity may go by in a space, and the memories reached from a set of weighted
entities. Shared by ``related_memories`` and search's second round (``expansion``).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from spade_memory.base_memory.graph.extract import key_of, stem
from spade_memory.base_memory.store.filters import Selection
from spade_memory.storage.connection import Database
from spade_memory.storage.statements import MOST_VALUES, parts, placeholders

MOST_FOLLOWED = 50
"""Memories an entity may link for a search to follow it: one named by more (a speaker in
every turn, a word of every memory) tells little about any of them, and following it would
cost as much as it links."""

LAST_CHARACTER = "\U0010ffff"
"""The keys that start with a prefix sort below the prefix followed by this, the last
code point: it sorts after every other in UTF-8's bytes (``"\\uffff"`` does not: a
character beyond it, as in some CJK names, begins with a greater byte)."""


MOST_SELECTS = 400
"""Counts one statement asks for at most (SQLite refuses a compound of more than 500)."""


@dataclass
class Links:
    """What ``linked`` read: how many memories name each entity (counted up to
    ``MOST_FOLLOWED + 1``), and the memories of those few enough to follow."""

    counts: dict[str, int] = field(default_factory=dict)
    memories: dict[str, list[int]] = field(default_factory=dict)

    def weight(self, key: str) -> float:
        """What sharing the entity ``key`` is worth (``weight`` of its count)."""
        return weight(self.counts.get(key, 0))


async def linked(db: Database, spaces: Sequence[int], keys: Collection[str]) -> Links:
    """How many memories of ``spaces`` (their numbers: ``links.space_ids``) name each of
    ``keys``, and which, for those named by at most ``MOST_FOLLOWED`` (the others are too
    common to follow). Counting reads the index up to that bound per entity; only the
    entities worth following are then read in full."""
    if not keys or not spaces:
        return Links()
    one = (
        "SELECT ?, COUNT(*) FROM (SELECT 1 FROM memory_entities"
        f" WHERE space_id IN ({placeholders(spaces)}) AND key = ? LIMIT {MOST_FOLLOWED + 1}) AS k"
    )
    found = Links()
    per_count = min(MOST_SELECTS, MOST_VALUES // (2 + len(spaces)))
    for asked in parts(sorted(keys), per_count):  # one statement but for a long memory
        counted = await db.execute_fetchall(
            " UNION ALL ".join([one] * len(asked)),
            [value for key in asked for value in (key, *spaces, key)],
        )
        found.counts.update((str(key), int(count)) for key, count in counted)
    followed = [key for key, count in found.counts.items() if 0 < count <= MOST_FOLLOWED]
    for asked in parts(followed, MOST_VALUES - len(spaces)):
        rows = await db.execute_fetchall(
            "SELECT key, seq FROM memory_entities"
            f" WHERE space_id IN ({placeholders(spaces)}) AND key IN ({placeholders(asked)})"
            " ORDER BY key, seq",  # each key's memories in one order on either engine
            (*spaces, *asked),
        )
        for key, seq in rows:  # a str and an int on either engine
            found.memories.setdefault(key, []).append(seq)
    return found


def weight(count: int) -> float:
    """What sharing an entity named by ``count`` memories is worth (0: too common, or
    named by one memory only)."""
    if count < 2 or count > MOST_FOLLOWED:
        return 0.0
    return math.log(1 + MOST_FOLLOWED / count)


async def keys_named(db: Database, spaces: Sequence[int], entity: str) -> list[str]:
    """The keys ``entity`` is filed under in ``spaces`` (their numbers): its own (and its
    stem), and the longer names it is the start of there ("Mel" for "Melanie", "Caroline"
    for "Caroline Smith"), when there are at most three."""
    key = key_of(entity)
    if not key:
        return []
    keys = {key, stem(key)}
    if len(key) >= 3 and spaces:
        rows = await db.execute_fetchall(
            "SELECT DISTINCT key FROM memory_entities"
            f" WHERE space_id IN ({placeholders(spaces)}) AND kind = 'name'"
            " AND key > ? AND key < ?"
            " LIMIT 4",
            (*spaces, key, key + LAST_CHARACTER),
        )
        longer = [str(row[0]) for row in rows]
        if len(longer) <= 3:
            keys.update(longer)
    return sorted(keys)


def reached(
    links: Links, weights: Mapping[str, float], leaving: Collection[int]
) -> dict[int, float]:
    """The memories ``links`` reach through the entities of ``weights``, each scored by
    the sum of the weights it names; none of ``leaving`` (where the walk starts)."""
    scores: dict[int, float] = defaultdict(float)
    for key, worth in weights.items():
        for seq in links.memories.get(key, ()):
            if seq not in leaving:
                scores[seq] += worth
    return dict(scores)


async def current(
    db: Database, spaces: Collection[str], selection: Selection, seqs: Sequence[int]
) -> set[int]:
    """Which of ``seqs`` are memories of ``spaces`` that ``selection`` lets through, found
    by their numbers (the space is checked here: in the statement, the planner would
    read the whole space through its index instead)."""
    allowed: set[int] = set()
    for asked in parts(seqs, MOST_VALUES - len(selection.params)):
        rows = await db.execute_fetchall(
            f"SELECT m.seq, m.space FROM memories m WHERE m.seq IN ({placeholders(asked)})"
            f" AND {selection.sql}",
            (*asked, *selection.params),
        )
        allowed.update(int(seq) for seq, space in rows if space in spaces)
    return allowed


async def keys_of(db: Database, seqs: Sequence[int]) -> dict[int, list[str]]:
    """The entity keys each of ``seqs`` names, its names, titles and days first, then
    by kind and key (sorted here, by code point: which are followed depends on the order,
    and a PostgreSQL server's collation would sort keys its own way)."""
    if not seqs:
        return {}
    rows = await db.execute_fetchall(
        f"SELECT seq, key, kind FROM memory_entities WHERE seq IN ({placeholders(seqs)})",
        tuple(seqs),
    )
    found: dict[int, list[str]] = defaultdict(list)
    for seq, key, _ in sorted(rows, key=lambda row: (row[0], row[2] == "term", row[2], row[1])):
        found[seq].append(key)
    return found
