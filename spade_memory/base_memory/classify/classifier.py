"""Which of the four categories a memory is, guessed offline: no LLM, no network.

A store without a category needs one; asking a model would cost a round trip
and a dependency. A small softmax (multinomial logistic) regression does it in
pure Python: its features are the text's lower-cased, lightly stemmed words,
its first word, and a few cue groups (wish words, frequency words, ability
words, ...) that pool evidence a few hundred examples cannot show word by word.
It is trained once per machine, lazily, from ``labelled_memories.jsonl`` shipped
beside this module, and its weights kept in the machine's cache (see
``benchmarks/classify.py`` for its held-out accuracy).

Borderline cases in the labelled set follow one rule each: a limit or quota of
an agent, tool, system or person ("max upload size is 25 MB") is a
capability; a configured schedule or a policy ("backups run every night at
02:00") is a fact; an observed habit ("usually orders tea") is a pattern, a
stated like or wish ("likes tea", "can't stand cilantro") a preference.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.resources
import json
import math
import os
import random
import re
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from spade_memory.base_memory.machine_cache import cache_dir
from spade_memory.protocol.memories import CATEGORIES, Category

LABELLED_FILE = "labelled_memories.jsonl"
Part = Literal["tune", "held_out"]

_EPOCHS = 30
_RATE = 0.3
_L2 = 3e-3
_SEED = 0
_CONTEXT_WEIGHT = 0.25
"""How much a memory's context counts against its content: a hint, not the text."""

# -- data ----------------------------------------------------------------------


@dataclass(frozen=True)
class Classification:
    """A guessed category and the model's posterior probability for it, in [0, 1]."""

    category: Category
    confidence: float


@dataclass(frozen=True)
class Example:
    """One labelled memory; ``part`` says whether it may be tuned on or only measured."""

    text: str
    category: Category
    part: Part


def load_examples() -> list[Example]:
    """The shipped labelled memories, in file order.

    Raises ``ValueError`` on a row with an unknown category or part.
    """
    source = importlib.resources.files(__package__) / LABELLED_FILE
    examples = []
    for number, line in enumerate(source.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        if row["category"] not in CATEGORIES or row["part"] not in ("tune", "held_out"):
            raise ValueError(f"{LABELLED_FILE}:{number}: bad category or part")
        examples.append(Example(row["text"], row["category"], row["part"]))
    return examples


# -- features --------------------------------------------------------------------

_CONTRACTIONS = (
    (re.compile(r"\bcan't\b|\bcannot\b"), "can not"),
    (re.compile(r"\bwon't\b"), "will not"),
    (re.compile(r"n't\b"), " not"),
    (re.compile(r"'d\b"), " would"),
    (re.compile(r"'m\b"), " am"),
    (re.compile(r"'re\b"), " are"),
    (re.compile(r"'ll\b"), " will"),
    (re.compile(r"'ve\b"), " have"),
)
_WORD = re.compile(r"[a-z]+|\d+(?:[.,]\d+)*")

_CUE_WORDS: dict[str, frozenset[str]] = {
    "wish": frozenset(
        "prefer prefers preferred preference rather like likes liked love loves loved enjoy "
        "enjoys hate hates dislike dislikes favourite favorite fan keen fond want wants wish "
        "wishes please appreciate appreciates must avoid annoying annoy annoys expect expects "
        "never ideally".split()
    ),
    "frequency": frozenset(
        "usually often always tend tends typically mostly frequently rarely seldom sometimes "
        "occasionally habitually generally normally whenever repeatedly every each average "
        "roughly again keeps routinely regularly daily weekly nightly monthly mondays tuesdays "
        "wednesdays thursdays fridays saturdays sundays mornings evenings nights weekends "
        "afternoons weekdays".split()
    ),
    "ability": frozenset(
        "can able unable supports support max maximum limit limited capacity access fluent "
        "fluently certified qualified licence license knows know struggles experience handles "
        "handle range allowed reach speaks skilled capable good great only".split()
    ),
    "change": frozenset(
        "increase increases rise rises drop drops dip dips spike spikes jump jumps grow grows "
        "goes gets get higher lower faster slower longer shorter more less earlier later "
        "late".split()
    ),
    "condition": frozenset("when whenever after once twice until as before".split()),
}
_CUE_PHRASES: dict[str, tuple[str, ...]] = {
    "wish": (
        "can not stand", "would like", "would love", "would rather", "for me", "not keen",
        "not a fan", "a must", "if possible",
    ),
    "frequency": ("every time", "more often", "now and then", "first thing", "on average"),
    "ability": (
        "can not", "not able", "at most", "up to", "no access", "does not", "has no",
        "no experience", "know how", "never used", "not allowed", "only covers",
    ),
}  # fmt: skip
_IMPERATIVE = frozenset(
    "use keep give send show avoid please no schedule reply write make stop let tell remind "
    "call book add prefer do never always".split()
)
"""First words of a request ("Use British spelling"): wishes often come as orders."""
_FIRST_PERSON = frozenset(("i", "me", "my"))


def _words(text: str) -> list[str]:
    text = text.replace("\u2019", "'").lower()
    for pattern, replacement in _CONTRACTIONS:
        text = pattern.sub(replacement, text)
    return ["<num>" if word[0].isdigit() else word for word in _WORD.findall(text)]


def _stem(word: str) -> str:
    """A crude suffix stripper: enough to pool "likes"/"like", "spikes"/"spike"."""
    if len(word) <= 4:
        return word
    if word.endswith(("ies", "ied")):
        return word[:-3] + "y"
    if word.endswith("sses"):
        return word[:-2]
    if (word.endswith("es") and word[-3] in "sxz") or word.endswith(("ches", "shes")):
        return word[:-2]
    if word.endswith("ing") and len(word) > 5:
        return word[:-3]
    if word.endswith("ed"):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def features(text: str) -> frozenset[str]:
    """The features of a text: its stemmed words, its first word, and its cue groups."""
    words = _words(text)
    found = {_stem(word) for word in words}
    if not words:
        return frozenset()
    found.add("^" + _stem(words[0]))
    present = set(words)
    padded = f" {' '.join(words)} "
    for group, cues in _CUE_WORDS.items():
        phrases = _CUE_PHRASES.get(group, ())
        if present & cues or any(f" {phrase} " in padded for phrase in phrases):
            found.add("cue:" + group)
    if words[0] in _IMPERATIVE:
        found.add("cue:imperative")
    if present & _FIRST_PERSON:
        found.add("cue:first-person")
    if "<num>" in present:
        found.add("cue:number")
    return frozenset(found)


# -- the model -------------------------------------------------------------------


class Classifier:
    """A softmax regression over ``features``: one weight per feature and category."""

    def __init__(self, weights: dict[str, list[float]], bias: list[float]) -> None:
        self._weights = weights
        self._bias = bias

    @classmethod
    def train(cls, examples: Iterable[tuple[str, Category]]) -> Classifier:
        """A classifier fitted to ``(text, category)`` pairs, deterministically.

        Plain stochastic gradient descent with L2 decay, a fixed seed and a
        decaying rate. Raises
        ``ValueError`` if there are no examples.
        """
        data = [(sorted(features(text)), CATEGORIES.index(category)) for text, category in examples]
        if not data:
            raise ValueError("nothing to train on")
        weights: dict[str, list[float]] = {}
        bias = [0.0] * len(CATEGORIES)
        shuffle = random.Random(_SEED).shuffle
        for epoch in range(_EPOCHS):
            shuffle(data)
            rate = _RATE / (1 + 0.1 * epoch)
            for found, label in data:
                rows = [weights.setdefault(name, [0.0] * len(CATEGORIES)) for name in found]
                probabilities = _softmax(
                    [bias[k] + sum(row[k] for row in rows) for k in range(len(CATEGORIES))]
                )
                for k, probability in enumerate(probabilities):
                    gradient = probability - (k == label)
                    bias[k] -= rate * gradient
                    for row in rows:
                        row[k] -= rate * (gradient + _L2 * row[k])
        return cls(weights, bias)

    def classify(self, content: str, context: str | None = None) -> Classification:
        """The likeliest category of ``content``, ``context`` counting a quarter as much.

        Text with no feature the model knows is a ``fact`` (the broadest
        category) at confidence 0.25: a shrug, not a guess.
        """
        scores = list(self._bias)
        known = self._add(scores, features(content), 1.0)
        if context:
            known += self._add(scores, features(context) - features(content), _CONTEXT_WEIGHT)
        if not known:
            return Classification("fact", 1 / len(CATEGORIES))
        probabilities = _softmax(scores)
        best = max(range(len(CATEGORIES)), key=probabilities.__getitem__)
        return Classification(CATEGORIES[best], probabilities[best])

    def predict(self, content: str, context: str | None = None) -> Category:
        """The likeliest category of ``content`` (as ``classify``, without the confidence)."""
        return self.classify(content, context).category

    def _add(self, scores: list[float], found: Iterable[str], weight: float) -> int:
        """Add the weights of the known features in ``found``; return how many were known."""
        known = 0
        for name in sorted(found):  # a fixed order: the same sums in every process
            row = self._weights.get(name)
            if row is not None:
                known += 1
                for k, value in enumerate(row):
                    scores[k] += weight * value
        return known


def _softmax(scores: Sequence[float]) -> list[float]:
    top = max(scores)
    exps = [math.exp(score - top) for score in scores]
    total = sum(exps)
    return [value / total for value in exps]


WEIGHTS_NAME = "classifier-{key}.json"
"""The file in the machine's cache holding the weights trained on these examples by this
code (``key``: a digest of both, so a changed file or module trains again)."""


@functools.cache
def default_classifier() -> Classifier:
    """The classifier trained on every shipped labelled memory, built on first use: read
    from the machine's cache (``machine_cache``), else trained (half a second of CPU,
    which every service start would spend) and kept there for the next process. A cache
    that cannot be read or written costs the training, nothing else."""
    weights = cache_dir() / WEIGHTS_NAME.format(key=_training_key())
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        kept = json.loads(weights.read_text(encoding="utf-8"))
        rows, bias = dict(kept["weights"]), [float(b) for b in kept["bias"]]
        if len(bias) == len(CATEGORIES) and all(
            len(row) == len(CATEGORIES) for row in rows.values()
        ):
            return Classifier(rows, bias)
    trained = Classifier.train((e.text, e.category) for e in load_examples())
    with contextlib.suppress(OSError):
        _write_whole(weights, json.dumps({"weights": trained._weights, "bias": trained._bias}))
    return trained


def _training_key() -> str:
    """A digest of the labelled memories and of this module's code."""
    digest = hashlib.sha256()
    digest.update((importlib.resources.files(__package__) / LABELLED_FILE).read_bytes())
    digest.update(Path(__file__).read_bytes())
    return digest.hexdigest()[:16]


def _write_whole(target: Path, text: str) -> None:
    """Write ``text`` to ``target`` whole or not at all (a rival process's is as good).
    Raises ``OSError`` when it cannot."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(
        "w", encoding="utf-8", dir=target.parent, suffix=".json", delete=False
    ) as out:
        try:
            out.write(text)
        except OSError:
            os.unlink(out.name)
            raise
    os.replace(out.name, target)


def classify(content: str, context: str | None = None) -> Classification:
    """The category a memory most likely belongs to, and the model's confidence in it.

    The first call trains the model, so it takes longer than the later ones. Raises
    nothing for any string, empty ones included.
    """
    return default_classifier().classify(content, context)
