"""Following the graph: how many memories name an entity (counted up to a bound), which
names an entity may go by in a space, and the memories reached from a set of weighted
entities. Shared by ``related_memories`` and search's second round (``expansion``).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence

from spade_memory.base_memory.graph.extract import key_of, stem
from spade_memory.storage.connection import Database

MOST_FOLLOWED = 50
"""Memories an entity may link for a search to follow it: one named by more (a speaker in
every turn, a word of every memory) tells little about any of them, and following it would
cost as much as it links."""


def _in(values: Collection[object]) -> str:
    return ", ".join("?" * len(values))


async def counts(db: Database, spaces: Sequence[str], keys: Collection[str]) -> dict[str, int]:
    """How many memories of ``spaces`` name each of ``keys``, counted up to
    ``MOST_FOLLOWED + 1`` (reading no more links than that per entity)."""
    if not keys:
        return {}
    one = (
        "SELECT ?, COUNT(*) FROM (SELECT 1 FROM memory_entities"
        f" WHERE space IN ({_in(spaces)}) AND key = ? LIMIT {MOST_FOLLOWED + 1}) AS k"
    )
    ordered = sorted(keys)
    rows = await db.execute_fetchall(
        " UNION ALL ".join([one] * len(ordered)),
        [value for key in ordered for value in (key, *spaces, key)],
    )
    return {str(key): int(count) for key, count in rows}


def weight(count: int) -> float:
    """What sharing an entity named by ``count`` memories is worth (0: too common, or
    named by one memory only)."""
    if count < 2 or count > MOST_FOLLOWED:
        return 0.0
    return math.log(1 + MOST_FOLLOWED / count)


async def keys_named(db: Database, spaces: Sequence[str], entity: str) -> list[str]:
    """The keys ``entity`` is filed under in ``spaces``: its own (and its stem), and the
    longer names it is the start of there ("Mel" for "Melanie", "Caroline" for "Caroline
    Smith"), when there are at most three."""
    key = key_of(entity)
    if not key:
        return []
    keys = {key, stem(key)}
    if len(key) >= 3:
        rows = await db.execute_fetchall(
            "SELECT DISTINCT key FROM memory_entities"
            f" WHERE space IN ({_in(spaces)}) AND kind = 'name' AND key > ? AND key < ?"
            " LIMIT 4",
            (*spaces, key, key + "\uffff"),
        )
        longer = [str(row[0]) for row in rows]
        if len(longer) <= 3:
            keys.update(longer)
    return sorted(keys)


async def reached(
    db: Database, spaces: Sequence[str], weights: Mapping[str, float], leaving: Collection[int]
) -> dict[int, float]:
    """The memories naming any of ``weights``' entities, each scored by the sum of the
    weights it names; none of ``leaving`` (where the walk starts)."""
    if not weights:
        return {}
    rows = await db.execute_fetchall(
        "SELECT seq, key FROM memory_entities"
        f" WHERE space IN ({_in(spaces)}) AND key IN ({_in(weights)})",
        (*spaces, *weights),
    )
    scores: dict[int, float] = defaultdict(float)
    for seq, key in rows:
        if int(seq) not in leaving:
            scores[int(seq)] += weights[str(key)]
    return dict(scores)


async def keys_of(db: Database, seqs: Sequence[int]) -> dict[int, set[str]]:
    """The entity keys each of ``seqs`` names."""
    if not seqs:
        return {}
    rows = await db.execute_fetchall(
        f"SELECT seq, key FROM memory_entities WHERE seq IN ({_in(seqs)})", tuple(seqs)
    )
    found: dict[int, set[str]] = defaultdict(set)
    for seq, key in rows:
        found[int(seq)].add(str(key))
    return found
