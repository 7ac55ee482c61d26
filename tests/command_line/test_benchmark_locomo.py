"""The LoCoMo benchmark command on a tiny file of the same format (quirks included)."""

from __future__ import annotations

import json
import subprocess
import sys

from benchmarks.locomo import half_of, load
from tests.support.paths import FIXTURES, ROOT

MINI = FIXTURES / "locomo-mini.json"


def test_the_loader_keeps_what_can_be_scored() -> None:
    (conversation,) = load(MINI)
    assert [turn.dia_id for turn in conversation.turns] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2"]
    assert conversation.turns[3].content.endswith("[shares a photo of a photo of a clay bowl]")
    assert conversation.turns[1].context.startswith(
        "1:56 pm on 8 May, 2023. Before: Ana: I adopted"
    )
    assert [q.evidence for q in conversation.questions] == [{"D1:1"}, {"D1:1", "D1:3"}, {"D2:1"}]


def test_the_first_three_conversations_are_the_half_settings_are_chosen_on() -> None:
    assert [half_of(n, 5) for n in range(1, 6)] == [
        *["conversations 1-3"] * 3,
        *["conversations 4-5"] * 2,
    ]
    assert [half_of(n, 4) for n in (1, 4)] == ["conversations 1-3", "conversation 4"]
    assert half_of(1, 1) == "conversation 1"


def test_one_command_prints_every_ranker_as_json() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.locomo", "--data", str(MINI), "--json"],
        capture_output=True, text=True, timeout=240, cwd=ROOT,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)
    assert list(figures) == [
        "spade_llm LIKE", "BM25", "BM25, no graph", "hybrid, model queries", "hybrid",
        "hybrid, no graph",
    ]  # fmt: skip
    for ranker in figures.values():
        assert ranker["questions"] == 3
        assert set(ranker["recall"]) >= {"overall", "single-hop", "multi-hop", "temporal"}
        assert ranker["latency_ms"]["p50"] > 0
    assert figures["spade_llm LIKE"]["recall"]["overall"]["@25"] == 0.0
    assert figures["hybrid"]["recall"]["overall"]["@25"] == 100.0  # five turns: all of them
    assert figures["hybrid"]["recall"]["single-hop"]["@1"] == 100.0
    # one conversation: all of it in the first half, the one settings may be tuned on
    assert figures["hybrid"]["halves"] == {"conversation 1": figures["hybrid"]["recall"]}
