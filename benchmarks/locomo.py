"""LoCoMo retrieval: recall of the evidence turns for every question, four rankers.

Every dialog turn of a conversation becomes one memory of one owner (content:
the speaker and the text, with a shared photo's caption; context: the
session's date and the turn before), stored through each ranker's own write
path; every question is asked through ``search_memories``. Rankers, in the
same run on the same data: spade_llm's ``LIKE '%query%'`` search, our FTS5
BM25 alone, and our hybrid (BM25 fused with MiniLM similarity), its queries
embedded by the model itself and, as shipped, by the distilled query encoder;
BM25 and hybrid also on a store without the entity graph (``--no-entity-graph``).
Recall is printed for the whole file and for its two halves: conversations 1-3,
where settings may be tuned, and the rest, held out (the retrieval issue's rule).

    python -m benchmarks.locomo [--data FILE] [--json] [--limit-conversations N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from spade_memory.base_memory.retrieval.embeddings import load_embedder
from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.protocol.memories import MemoryList, SearchMemories, Stored, StoreMemory

DEFAULT_DATA = Path("../shared/bench/locomo-dev.json")
KS = (1, 5, 10, 25)
TUNED = 3
"""Conversations (the first ones) that settings may be chosen on; the rest are held out."""
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
SHOWN = ("overall", "multi-hop", "open-domain", "single-hop", "temporal", "adversarial")
"""The categories in the order the graph's table shows them."""


@dataclass
class Turn:
    dia_id: str
    content: str
    context: str


@dataclass
class Question:
    text: str
    category: str
    evidence: set[str]


@dataclass
class Conversation:
    owner: str
    turns: list[Turn]
    questions: list[Question]


def load(path: Path) -> list[Conversation]:
    """Read a LoCoMo-format file, skipping what cannot be scored (see bench/README.md)."""
    conversations = []
    for number, sample in enumerate(json.loads(path.read_text(encoding="utf-8"))):
        talk = sample["conversation"]
        turns: list[Turn] = []
        sessions = sorted(
            (int(key.split("_")[1]), key) for key in talk if key.startswith("session_")
            and key.split("_")[1].isdigit() and isinstance(talk[key], list)
        )  # fmt: skip
        for _, key in sessions:
            date = talk.get(f"{key}_date_time", "")
            previous = ""
            for turn in talk[key]:
                text = f"{turn['speaker']}: {turn['text']}"
                if turn.get("blip_caption"):
                    text += f" [shares a photo of {turn['blip_caption']}]"
                context = f"{date}. Before: {previous}" if previous else str(date)
                turns.append(Turn(str(turn["dia_id"]), text, context))
                previous = text
        known = {turn.dia_id for turn in turns}
        questions = []
        for qa in sample.get("qa", []):
            evidence = {
                part.strip() for item in qa.get("evidence", []) for part in str(item).split(";")
            } & known
            if evidence:
                name = CATEGORIES.get(int(qa.get("category", 0)), str(qa.get("category")))
                questions.append(Question(str(qa["question"]), name, evidence))
        owner = f"{sample.get('sample_id', number)}@locomo.bench"
        conversations.append(Conversation(owner, turns, questions))
    return conversations


@dataclass
class Score:
    hits: dict[str, dict[int, list[float]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list))
    )
    halves: dict[str, Score] = field(default_factory=dict)
    """The same figures for each half of the conversations."""
    latencies: list[float] = field(default_factory=list)

    def add(self, question: Question, found: list[str], seconds: float, half: str = "") -> None:
        self.latencies.append(seconds)
        for k in KS:
            recall = len(question.evidence & set(found[:k])) / len(question.evidence)
            self.hits[question.category][k].append(recall)
            self.hits["overall"][k].append(recall)
        if half:
            self.halves.setdefault(half, Score()).add(question, found, seconds)

    def recall(self, category: str, k: int) -> float:
        values = self.hits[category][k]
        return 100 * sum(values) / len(values) if values else 0.0

    def recalls(self, categories: list[str]) -> dict[str, dict[str, float]]:
        """Recall at every k, by category (those with questions)."""
        return {
            c: {f"@{k}": round(self.recall(c, k), 1) for k in KS}
            for c in categories
            if self.hits[c][KS[0]]
        }

    def latency_ms(self, quantile: float) -> float:
        ordered = sorted(self.latencies)
        return 1000 * ordered[min(len(ordered) - 1, int(quantile * len(ordered)))]


Search = Callable[[str, str], Awaitable[list[str]]]


async def _ours(
    path: Path,
    conversations: list[Conversation],
    dense: bool,
    model_queries: bool = False,
    graph: bool = True,
) -> tuple[Search, Any]:
    embedder = load_embedder(model_queries) if dense else None
    if dense and embedder is None:
        raise SystemExit("the hybrid ranker needs: pip install 'spade-memory[embeddings]'")
    store = await LongTermStore.open(path, embedder=embedder, entity_graph=graph)
    by_memory: dict[str, list[str]] = defaultdict(list)
    for conversation in conversations:
        for turn in conversation.turns:
            op = StoreMemory(category="fact", content=turn.content, context=turn.context)
            stored = await store.apply(conversation.owner, op)
            assert isinstance(stored, Stored)
            by_memory[stored.id].append(turn.dia_id)
    await store.embedded()  # every turn's vector, before the questions

    async def search(owner: str, query: str) -> list[str]:
        found = await store.apply(owner, SearchMemories(query=query, limit=max(KS)))
        assert isinstance(found, MemoryList)
        return [dia for memory in found.memories for dia in by_memory[memory.id]]

    return search, store


async def _spade_llm(path: Path, conversations: list[Conversation]) -> tuple[Search, Any]:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from spade_llm.memory.backends.base import MemoryEntry
    from spade_llm.memory.backends.sqlite import SQLiteMemoryBackend

    backend = SQLiteMemoryBackend(str(path))
    await backend.initialize()
    by_memory: dict[str, str] = {}
    for conversation in conversations:
        for turn in conversation.turns:
            entry = MemoryEntry(conversation.owner, "fact", turn.content, turn.context)
            by_memory[await backend.store_memory(entry)] = turn.dia_id

    async def search(owner: str, query: str) -> list[str]:
        found = await backend.search_memories(owner, query, max(KS))
        return [by_memory[str(entry.id)] for entry in found]

    return search, None


async def run(data: Path, limit_conversations: int | None = None) -> dict[str, Score]:
    conversations = load(data)[:limit_conversations]
    halves = {c.owner: half_of(n, len(conversations)) for n, c in enumerate(conversations, 1)}
    scores: dict[str, Score] = {}
    with tempfile.TemporaryDirectory() as tmp, Progress(transient=True) as progress:
        builders = {
            "spade_llm LIKE": lambda: _spade_llm(Path(tmp) / "like.db", conversations),
            "BM25": lambda: _ours(Path(tmp) / "bm25.db", conversations, dense=False),
            "BM25, no graph": lambda: _ours(
                Path(tmp) / "bm25-plain.db", conversations, dense=False, graph=False
            ),
            "hybrid, model queries": lambda: _ours(
                Path(tmp) / "model.db", conversations, dense=True, model_queries=True
            ),
            "hybrid": lambda: _ours(Path(tmp) / "hybrid.db", conversations, dense=True),
            "hybrid, no graph": lambda: _ours(
                Path(tmp) / "hybrid-plain.db", conversations, dense=True, graph=False
            ),
        }
        for name, build in builders.items():
            task = progress.add_task(f"{name}: storing turns", total=None)
            search, store = await build()
            questions = [(c, q) for c in conversations for q in c.questions]
            progress.update(task, description=f"{name}: asking", total=len(questions))
            score = scores[name] = Score()
            for conversation, question in questions:
                start = time.perf_counter()
                found = await search(conversation.owner, question.text)
                score.add(question, found, time.perf_counter() - start, halves[conversation.owner])
                progress.advance(task)
            if store is not None:
                await store.close()
    return scores


def half_of(number: int, count: int) -> str:
    """The half conversation ``number`` (from 1) of ``count`` belongs to."""
    first, last = (1, min(TUNED, count)) if number <= TUNED else (TUNED + 1, count)
    return f"conversations {first}-{last}" if first < last else f"conversation {first}"


def report(scores: dict[str, Score]) -> dict[str, Any]:
    categories = ["overall", *sorted({c for s in scores.values() for c in s.hits} - {"overall"})]
    return {
        name: {
            "questions": len(score.latencies),
            "recall": score.recalls(categories),
            "halves": {half: part.recalls(categories) for half, part in score.halves.items()},
            "latency_ms": {
                "p50": round(score.latency_ms(0.5), 3),
                "p99": round(score.latency_ms(0.99), 3),
            },
        }
        for name, score in scores.items()
    }


def print_tables(result: dict[str, Any], console: Console) -> None:
    table = Table(
        "ranker", "category", *(f"R@{k}" for k in KS), "p50 ms", "p99 ms", title="LoCoMo retrieval"
    )
    for name, figures in result.items():
        for category, recall in figures["recall"].items():
            latency = figures["latency_ms"] if category == "overall" else {"p50": "", "p99": ""}
            table.add_row(
                name, category, *(f"{recall[f'@{k}']:.1f}" for k in KS),
                str(latency["p50"]), str(latency["p99"]),
            )  # fmt: skip
        table.add_section()
    console.print(table)
    halves = Table(
        "ranker", "conv.", *(f"R@{k}" for k in KS), "multi-hop R@10", "open-domain R@10",
        title="By half: settings may be chosen on conversations 1-3; the rest is held out",
    )  # fmt: skip
    for name, figures in result.items():
        for half, recall in figures["halves"].items():
            hard = [recall.get(c, {}).get("@10") for c in ("multi-hop", "open-domain")]
            halves.add_row(
                name, half.split()[-1], *(f"{recall['overall'][f'@{k}']:.1f}" for k in KS),
                *("" if r is None else f"{r:.1f}" for r in hard),
            )  # fmt: skip
    console.print(halves)
    graph = Table(
        "ranker", "conv.", *SHOWN,
        title="R@10 by category and half, with and without the entity graph",
    )  # fmt: skip
    for name in ("BM25", "BM25, no graph", "hybrid", "hybrid, no graph"):
        for half, recall in result.get(name, {}).get("halves", {}).items():
            graph.add_row(
                name, half.split()[-1],
                *(f"{recall[c]['@10']:.1f}" if c in recall else "" for c in SHOWN),
            )  # fmt: skip
    console.print(graph)
    baseline = result["spade_llm LIKE"]["latency_ms"]["p50"] or 1e-9
    ratios = ", ".join(f"{n} {f['latency_ms']['p50'] / baseline:.1f}x" for n, f in result.items())
    console.print(f"search p50 against spade_llm's LIKE in this run: {ratios}")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.locomo", description=__doc__)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help=f"default: {DEFAULT_DATA}")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--limit-conversations", type=int, default=None)
    args = parser.parse_args()
    result = report(asyncio.run(run(args.data, args.limit_conversations)))
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_tables(result, Console())


if __name__ == "__main__":
    main()
