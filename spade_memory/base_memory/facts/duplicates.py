"""Near-duplicates: memories of one author and category that state the same fact in other
words, found without a model.

Two memories are the same fact when they state the same frame ("Alice lives in Paris" /
"Alice resides in Paris": ``frames``), or when their content words mostly coincide
(Jaccard ≥ ``SAME_WORDS``) with the same numbers and the same negation, and neither
replaces the other (``conflicts``: "prefers tea" / "prefers coffee" share most words and
are not the same fact). Candidates come from an index of the rarer words, so a pass over
n memories costs about n times the few it compares each with, not n²; and whatever the
words, a memory walks at most ``MOST_WALKED`` entries of the index (its rarest words
first) and is compared in full with at most ``MOST_COMPARED_EACH`` candidates (the
likeliest first), so a space's memories cannot make a pass cost more than
that per memory. A duplicate that only the skipped words would find is left unmerged:
a pass may miss a merge, never make a wrong one.
"""

from __future__ import annotations

import heapq
import math
import re
import threading
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from spade_memory.base_memory.facts.conflicts import replacement
from spade_memory.base_memory.facts.frames import Frame, frame_of

SAME_WORDS = 0.85
"""Jaccard similarity of content words from which two memories are one fact."""
COMMON = 200
"""A word in more memories than this leads to no candidates (it would compare each with
all of them); the rarer words of a memory still do."""
MOST_WALKED = 1_000
"""Index entries one memory walks for its candidates, its rarest words first; the words
beyond count as common."""
MOST_COMPARED_EACH = 20
"""Candidates one memory is compared with in full, those whose words may coincide the
most first (the size of each memory and the words they share tell how much at most)."""

_WORD = re.compile(r"[\w@.:/-]+")
_NEGATION = frozenset("not no never n't nothing none longer without".split())
_STOP = frozenset(
    "a an the and or of to in on at for by with from is are was were be been it its this"
    " that these those as into about i we you he she they them his her their our my your"
    " has have had do does did will would can could should so just also very".split()
)


class Stopped(Exception):
    """The pass was told to stop (its store is closing) before it was done."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """A current memory as the pass sees it."""

    id: str
    author: str
    category: str
    content: str
    access_count: int
    created_at: float


@dataclass(slots=True)
class Effort:
    """What a pass did: index entries walked and pairs compared in full (for tests and
    benchmarks: both are bounded per memory)."""

    walked: int = 0
    compared: int = 0


@dataclass(frozen=True, slots=True)
class Merge:
    """``merged`` state what ``kept`` states: they become one memory, ``kept``."""

    kept: Candidate
    merged: tuple[Candidate, ...]


def _words(content: str) -> frozenset[str]:
    words = _WORD.findall(content.casefold().replace("n't", " n't").replace("\u2019", "'"))
    return frozenset(
        word.removesuffix("'s").removesuffix("s") if len(word) > 3 else word
        for word in (w.strip(".:/-") for w in words)
        if word and word not in _STOP
    )


def _numbers(words: frozenset[str]) -> frozenset[str]:
    return frozenset(word for word in words if any(c.isdigit() for c in word))


def _same_words(wa: frozenset[str], wb: frozenset[str], fa: Frame | None, fb: Frame | None) -> bool:
    """Mostly the same content words, the same numbers and negation, and neither replaces
    the other."""
    union = len(wa | wb)
    if union == 0 or len(wa & wb) / union < SAME_WORDS:
        return False
    if bool(wa & _NEGATION) != bool(wb & _NEGATION) or _numbers(wa) != _numbers(wb):
        return False
    if fa is not None and fb is not None and _words(fa.value) != _words(fb.value):
        return replacement(fb, fa) is None and replacement(fa, fb) is None
    return True


def merges(
    memories: Sequence[Candidate], stop: threading.Event | None = None, effort: Effort | None = None
) -> list[Merge]:
    """The groups of ``memories`` that state one fact (same author and category), each
    kept as its most used memory (the oldest of those), the others merged into it;
    ``effort``, when given, counts the work done.

    Raises ``Stopped`` as soon as ``stop`` is set: a pass of thousands of memories must
    not keep its thread running after its store has closed."""
    words = [_words(memory.content) for memory in memories]
    frames = [frame_of(memory.content) for memory in memories]
    by_word: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    for index, memory in enumerate(memories):
        for word in words[index]:
            by_word[(memory.author, memory.category, word)].append(index)
    by_frame: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for index, memory in enumerate(memories):
        frame = frames[index]
        if frame is not None:
            value = " ".join(sorted(_words(frame.value)))
            negated = str(frame.negated)
            key = (memory.author, memory.category, frame.subject, frame.attribute, value, negated)
            by_frame[key].append(index)
    parent = list(range(len(memories)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for same in by_frame.values():
        for other in same[1:]:
            parent[root(other)] = root(same[0])
    for index, memory in enumerate(memories):
        if stop is not None and stop.is_set():
            raise Stopped
        shared: Counter[int] = Counter()
        common = walked = 0
        postings = [by_word[(memory.author, memory.category, word)] for word in words[index]]
        if sum(map(len, postings)) > MOST_WALKED:
            postings.sort(key=len)  # the rarest words first
        for sharing in postings:
            if len(sharing) > COMMON or walked + len(sharing) > MOST_WALKED:
                common += 1
                continue
            walked += len(sharing)
            shared.update(other for other in sharing if other > index)
        # shared >= SAME_WORDS * union >= SAME_WORDS * len(A): fewer rare words cannot do
        size = len(words[index])
        least = math.ceil(SAME_WORDS * size) - common
        likely = []
        for other, count in shared.items():
            if count < least or root(other) == root(index):
                continue
            most = min(len(words[other]), count + common)  # the words they may share
            similarity = most / (size + len(words[other]) - most)  # Jaccard at most
            if similarity >= SAME_WORDS:
                likely.append((similarity, -other))
        compared = 0
        for _, other in heapq.nlargest(MOST_COMPARED_EACH, likely):  # the likeliest first
            if root(-other) != root(index):
                compared += 1
                if _same_words(words[index], words[-other], frames[index], frames[-other]):
                    parent[root(-other)] = root(index)
        if effort is not None:
            effort.walked += walked
            effort.compared += compared
    groups: dict[int, list[Candidate]] = defaultdict(list)
    for index, memory in enumerate(memories):
        groups[root(index)].append(memory)
    found = []
    for group in groups.values():
        if len(group) > 1:
            kept = min(group, key=lambda m: (-m.access_count, m.created_at, m.id))
            found.append(Merge(kept, tuple(m for m in group if m is not kept)))
    return found
