"""Auto-classification of memories: the labelled set, held-out accuracy, the API."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from spade_memory.base_memory.classify.classifier import (
    Classification,
    Classifier,
    Example,
    classify,
    default_classifier,
    load_examples,
)
from spade_memory.protocol.memories import CATEGORIES, Category

EXAMPLES = load_examples()

CLEAR: dict[Category, tuple[str, ...]] = {
    "fact": (
        "The staging server's address is 10.0.0.12.",
        "Alice was born in Madrid in 1990.",
        "The invoice total was 320 euros.",
    ),
    "pattern": (
        "The user usually works late on Tuesdays.",
        "Bob often forgets to close his tickets.",
        "Every Friday afternoon the error rate goes up.",
    ),
    "preference": (
        "I prefer short answers.",
        "The user loves Thai food.",
        "Please use metric units.",
    ),
    "capability": (
        "I can't access the internet.",
        "The cleanup bot cannot delete files.",
        "The API accepts at most 50 items per request.",
    ),
}


@pytest.fixture(scope="module")
def tuned() -> Classifier:
    return Classifier.train((e.text, e.category) for e in EXAMPLES if e.part == "tune")


def _folded(text: str) -> str:
    return " ".join(text.casefold().split())


def test_the_labelled_set_is_large_balanced_and_split_cleanly() -> None:
    assert len(EXAMPLES) >= 300
    per_category = Counter(e.category for e in EXAMPLES)
    assert set(per_category) == set(CATEGORIES)
    assert min(per_category.values()) >= 75, per_category
    parts = {
        part: {_folded(e.text) for e in EXAMPLES if e.part == part} for part in ("tune", "held_out")
    }
    assert all(len(texts) >= 100 for texts in parts.values())
    assert not parts["tune"] & parts["held_out"]
    assert len({_folded(e.text) for e in EXAMPLES}) == len(EXAMPLES), "duplicate texts"
    for category in CATEGORIES:
        held_out = sum(e.category == category and e.part == "held_out" for e in EXAMPLES)
        assert held_out >= 40, (category, held_out)


def test_held_out_accuracy_of_a_classifier_trained_on_the_tune_part(tuned: Classifier) -> None:
    held_out = [e for e in EXAMPLES if e.part == "held_out"]
    right = [tuned.predict(e.text) == e.category for e in held_out]
    assert sum(right) / len(right) >= 0.85
    for category in CATEGORIES:
        mine = [ok for ok, e in zip(right, held_out, strict=True) if e.category == category]
        assert sum(mine) / len(mine) >= 0.75, category


@pytest.mark.parametrize(
    ("category", "text"), [(c, text) for c, texts in CLEAR.items() for text in texts]
)
def test_clear_cases_map_to_their_category(category: Category, text: str) -> None:
    assert _folded(text) not in {_folded(e.text) for e in EXAMPLES}, "not a seen example"
    result = classify(text)
    assert result.category == category
    assert result.confidence > 0.5


@pytest.mark.parametrize(
    "text", ["", "   ", "???", "42", "x" * 10_000, "Ünïcødé ✓ memory", *CLEAR["fact"]]
)
def test_confidence_is_a_probability(text: str) -> None:
    result = classify(text)
    assert isinstance(result, Classification)
    assert result.category in CATEGORIES
    assert 0.0 <= result.confidence <= 1.0


def test_text_with_nothing_known_is_a_fact_at_chance() -> None:
    assert classify("") == Classification("fact", 0.25)
    assert classify("zzqx blorf") == Classification("fact", 0.25)


def test_classification_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        classify("I like tea.").category = "fact"  # type: ignore[misc]


def test_results_are_deterministic(tuned: Classifier) -> None:
    again = Classifier.train((e.text, e.category) for e in EXAMPLES if e.part == "tune")
    for e in EXAMPLES:
        assert tuned.classify(e.text) == again.classify(e.text)
        assert classify(e.text) == classify(e.text)


def test_results_do_not_depend_on_the_hash_seed(tmp_path: Path) -> None:
    """Sets of features iterate in a per-process order: the figures must not follow it
    (each process trains: its own empty cache)."""
    script = (
        "from spade_memory.base_memory.classify.classifier import classify, load_examples\n"
        "for e in load_examples(): print(classify(e.text))\n"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, check=True,
            timeout=120,
            env={**os.environ, "PYTHONHASHSEED": seed, "SPADE_MEMORY_CACHE": str(tmp_path / seed)},
        ).stdout
        for seed in ("1", "2")
    }  # fmt: skip
    assert len(outputs) == 1
    assert all(len(list((tmp_path / seed).glob("classifier-*.json"))) == 1 for seed in "12")


@pytest.fixture
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty machine cache, and no classifier built in this process yet."""
    monkeypatch.setenv("SPADE_MEMORY_CACHE", str(tmp_path / "cache"))
    default_classifier.cache_clear()
    yield tmp_path / "cache"
    default_classifier.cache_clear()


def test_the_weights_are_trained_once_per_machine_and_read_back_alike(
    own_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trained = default_classifier()
    (kept,) = own_cache.glob("classifier-*.json")
    default_classifier.cache_clear()  # a new process

    def no_training(*_: object) -> Classifier:
        raise AssertionError("trained again")

    monkeypatch.setattr(Classifier, "train", no_training)
    read = default_classifier()
    assert read is not trained
    for e in EXAMPLES:
        assert read.classify(e.text, "a context") == trained.classify(e.text, "a context")
    assert kept.stat().st_size > 10_000


def test_a_damaged_or_unwritable_cache_costs_a_training_only(own_cache: Path) -> None:
    expected = [classify(e.text) for e in EXAMPLES]
    (kept,) = own_cache.glob("classifier-*.json")
    kept.write_text('{"weights": [1, 2')  # cut short
    default_classifier.cache_clear()
    assert [classify(e.text) for e in EXAMPLES] == expected
    assert json.loads(kept.read_text())["bias"]  # trained again and written whole
    for damaged in ('{"weights": 3, "bias": 1}', '{"weights": {}, "bias": []}', "[]", "\x00"):
        kept.write_text(damaged)
        default_classifier.cache_clear()
        assert [classify(e.text) for e in EXAMPLES] == expected
    shutil.rmtree(own_cache)
    own_cache.write_text("a file where the cache folder should be")
    default_classifier.cache_clear()
    assert [classify(e.text) for e in EXAMPLES] == expected


def test_context_is_optional_and_only_a_hint() -> None:
    for category, texts in CLEAR.items():
        for text in texts:
            for context in (None, "", "Learned in a chat with the user last Tuesday."):
                result = classify(text, context)
                assert result.category == category, (text, context)
                assert 0.0 <= result.confidence <= 1.0
    # with content that says nothing, the context decides
    assert classify("zzqx blorf", "The user prefers this").category == "preference"


def test_the_shipped_rows_are_typed() -> None:
    assert all(isinstance(e, Example) and e.part in ("tune", "held_out") for e in EXAMPLES)
