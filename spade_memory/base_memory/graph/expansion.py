"""Search's second round: for a question that asks for several memories ("what
activities does Melanie do?", "where has she camped?") or for what may follow from them
("would she like ...?"), the entities of the first round's best memories lead to others
that share them, which no word of the question may match.

The rule that tells such questions, the weights and the number of memories followed
were chosen on LoCoMo's conversations 1-3 and reported on 4-5 (``benchmarks.locomo``).
The second round's scores, scaled to the first's, are added to them; for a list, the
memories whose subject the question names (its speaker, or the name they start with)
are favoured, and a memory naming what a better one already names is put after the
others, so the top is not one memory told several times.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace

from spade_memory.base_memory.graph.extract import mentions
from spade_memory.base_memory.graph.follow import current, keys_of, linked, reached
from spade_memory.base_memory.graph.links import space_ids
from spade_memory.base_memory.retrieval.ranking import Ranked
from spade_memory.base_memory.store.filters import Selection
from spade_memory.storage.connection import Database
from spade_memory.storage.statements import placeholders

FOLLOWED = 5
"""The first round's best memories whose entities are followed."""
WEIGHT = 0.5
"""The second round's share of a memory's score, against the first round's (both scaled
to their best)."""
SUBJECT = 2.0
"""What a memory's score is multiplied by, in a list, when the question names its
subject."""
MOST_KEYS = 24
"""Entities of the best memories looked at, in their order (a memory's names first): what
a search reads in the graph stays bounded however long the memories are."""
SUBJECT_LOOKS = 5
"""Memories, per memory asked for, whose subject is checked (the best fused)."""
REACHED = 3
"""Memories of the second round fused, per memory asked for (the best reached): what is
checked against the filters and fused stays bounded however many the entities link."""
ALIKE = 0.6
"""The share of entities two memories have in common (Jaccard) from which, in a list,
the lower one waits until the others are placed."""

LIST = "the question asks for several memories: followed what the best ones name"
INFERENCE = "the question asks what may follow: followed what the best memories name"

_ONE_OF_A_KIND = re.compile(r"\b(kind|type|sort) of\b")
_PERFECT = re.compile(r"\bha(s|ve)\b")
_LIST_WORDS = re.compile(r"\b(both|names?|activities|hobbies|ever)\b")
_PLURAL_ASKED = re.compile(r"^(what|which|who)\s+(?:\w+\s+){0,2}?(\w+[^s\W]s)\b")
_NOT_PLURALS = frozenset({"does", "has", "was", "is", "this", "his", "its", "kids"})
_MAY_FOLLOW = re.compile(r"^(would|could|might|is it likely|what might|what would)\b")


def calls_for(query: str) -> str | None:
    """Why ``query`` calls for a second round (``LIST``, ``INFERENCE``), or None."""
    asked = query.strip().lower()
    if _ONE_OF_A_KIND.search(asked):
        return None
    if (_PERFECT.search(asked) and "how long" not in asked) or _LIST_WORDS.search(asked):
        return LIST
    plural = _PLURAL_ASKED.match(asked)
    if plural and plural.group(2) not in _NOT_PLURALS:
        return LIST
    return INFERENCE if _MAY_FOLLOW.match(asked) else None


async def expand(
    db: Database,
    spaces: Sequence[str],
    query: str,
    ranked: Ranked,
    selection: Selection,
    limit: int,
) -> Ranked:
    """``ranked`` (its best ``limit``) with a second round fused in, when ``query`` calls
    for one and the best memories name something to follow; otherwise ``ranked`` itself."""
    why = calls_for(query)
    if why is None or not ranked.seqs:
        return ranked
    followed = ranked.seqs[:FOLLOWED]
    named_by = await keys_of(db, followed)
    mentioned = mentions(query)
    asked = {mention.key for mention in mentioned}
    in_order = (key for seq in followed for key in named_by.get(seq, ()) if key not in asked)
    shared = set(list(dict.fromkeys(in_order))[:MOST_KEYS])
    numbers = await space_ids(db, spaces)
    links = await linked(db, numbers, shared)
    weights: dict[str, float] = {}
    for rank, seq in enumerate(followed):  # in the order read: the same sums every time
        for key in (key for key in named_by.get(seq, ()) if key in shared):
            if worth := links.weight(key):
                weights[key] = weights.get(key, 0.0) + worth / (1 + rank)
    reached_all = reached(links, weights, leaving=())
    best_reached = sorted(reached_all, key=lambda seq: -reached_all[seq])[: REACHED * limit]
    second = {seq: reached_all[seq] for seq in best_reached}
    new = [seq for seq in second if seq not in ranked.scores]
    if new:  # the second round reaches memories no filter has seen yet
        allowed = await current(db, set(spaces), selection, new)
        second = {seq: s for seq, s in second.items() if seq in ranked.scores or seq in allowed}
    best_first = max(ranked.scores.values(), default=0.0) or 1.0
    best_second = max(second.values(), default=0.0) or 1.0
    fused = {seq: score / best_first for seq, score in ranked.scores.items()}
    for seq, score in second.items():
        fused[seq] = fused.get(seq, 0.0) + WEIGHT * score / best_second
    if why == LIST:  # those that doubled could reach the top: no further down
        contenders = heapq.nlargest(SUBJECT_LOOKS * limit, fused, key=fused.__getitem__)
        named = {mention.key for mention in mentioned if mention.kind == "name"}
        for seq in await _about_named(db, numbers, named, contenders):
            fused[seq] *= SUBJECT
    looked_at = 2 * limit if why == LIST else limit
    order = heapq.nlargest(looked_at, fused, key=lambda seq: (fused[seq], seq))
    if why == LIST:
        order = await _varied(db, order, named_by, limit)
    expanded = sorted(weights, key=lambda key: (-weights[key], key))[:8]
    return replace(ranked, seqs=order[:limit], scores=fused, expansion=why, expanded=expanded)


async def _about_named(
    db: Database, spaces: Sequence[int], keys: Collection[str], seqs: Sequence[int]
) -> set[int]:
    """Which of ``seqs`` have for subject one of the names ``keys`` (the question's), in
    ``spaces`` (their numbers)."""
    if not keys or not seqs or not spaces:
        return set()
    rows = await db.execute_fetchall(
        "SELECT DISTINCT seq FROM memory_entities"
        f" WHERE space_id IN ({placeholders(spaces)})"
        f" AND key IN ({placeholders(keys)}) AND subject = 1"
        f" AND seq IN ({placeholders(seqs)})",
        (*spaces, *sorted(keys), *seqs),
    )
    return {int(row[0]) for row in rows}


async def _varied(
    db: Database, order: list[int], known: Mapping[int, Sequence[str]], wanted: int
) -> list[int]:
    """``order`` with each memory much like a better one (``ALIKE``) moved after the
    others, as far as its first ``wanted`` are concerned (what follows them is left in
    order); ``known``: the entities of memories already read. What each shares with
    those placed before it is counted through the entities it names (not pair by pair:
    a list of 20 is looked at in every list question); the entities of the others are
    read only as far as they may be placed among the first ``wanted``."""
    read = dict(known)
    sizes: list[int] = []  # of the memories placed first, in order
    holders: dict[str, list[int]] = {}  # an entity: which of them name it
    first: list[int] = []
    later: list[int] = []
    for position, seq in enumerate(order):
        if len(first) == wanted:
            return first + later + order[position:]
        if seq not in read:  # no more than could still be placed among the first
            unread = [other for other in order[position:] if other not in read]
            batch = unread[: wanted - len(first)]
            read.update(await keys_of(db, batch))
            read.update((other, []) for other in batch if other not in read)
        keys = set(read[seq])
        common: dict[int, int] = {}
        for key in keys:
            for placed in holders.get(key, ()):
                common[placed] = common.get(placed, 0) + 1
        if any(_alike(len(keys), sizes[placed], n) for placed, n in common.items()):
            later.append(seq)
            continue
        first.append(seq)
        for key in keys:
            holders.setdefault(key, []).append(len(sizes))
        sizes.append(len(keys))
    return first + later


def _alike(size: int, other: int, common: int) -> bool:
    """Whether two memories naming ``size`` and ``other`` entities, ``common`` of them
    the same, have ``ALIKE`` of them in common (Jaccard)."""
    return common >= ALIKE * (size + other - common)
