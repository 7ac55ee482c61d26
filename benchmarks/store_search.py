"""In-store search latency: spade_memory's FTS5 store vs spade_llm's SQLite backend.

Both get the same memories (one owner) and the same queries; each query is
timed on one and then the other, alternating, so machine noise hits both.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
import time
import uuid
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.base_memory.store.tables import content_key
from spade_memory.protocol.memories import SearchMemories

from .corpus import Corpus
from .stats import summary_ms

OWNER = "bench@localhost"


@dataclass
class SearchResult:
    size: int
    words: int
    ours_p50: float
    ours_p99: float
    theirs_p50: float
    theirs_p99: float
    ours_hits: float
    theirs_hits: float

    @property
    def speedup(self) -> float:
        return self.theirs_p50 / self.ours_p50


def _rows(memories: list[str]) -> list[tuple[object, ...]]:
    now = time.time()
    return [
        (str(uuid.uuid4()), OWNER, "fact", text, None, 1.0, now - i, now - i, 0)
        for i, text in enumerate(memories)
    ]


async def _ours(path: Path, rows: list[tuple[object, ...]]) -> LongTermStore:
    store = await LongTermStore.open(path)
    await store.close()  # schema made; bulk-load the rows as the benchmark's setup
    with sqlite3.connect(path) as db:  # each in its owner's personal space
        db.executemany(
            "INSERT INTO memories (id, owner, category, content, context, confidence,"
            " created_at, last_accessed, access_count, space, content_key)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(*row, row[1], content_key(str(row[3]))) for row in rows],
        )
        db.execute("INSERT INTO memories_fts (memories_fts) VALUES ('rebuild')")  # the word index
    return await LongTermStore.open(path)


async def _theirs(path: Path, rows: list[tuple[object, ...]]) -> object:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from spade_llm.memory.backends.sqlite import SQLiteMemoryBackend

    backend = SQLiteMemoryBackend(str(path))
    await backend.initialize()
    iso = [(*row[:6], _iso(row[6]), _iso(row[7]), row[8]) for row in rows]
    with sqlite3.connect(path) as db:
        db.executemany("INSERT INTO agent_memories VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", iso)
    return backend


def _iso(epoch: object) -> str:
    return datetime.fromtimestamp(float(str(epoch))).isoformat()


async def bench_search(size: int, queries: int = 200) -> list[SearchResult]:
    rows = _rows(Corpus(seed=1).memories(size))
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        ours = await _ours(Path(tmp) / "ours.db", rows)
        theirs = await _theirs(Path(tmp) / "theirs.db", rows)
        for words in (1, 3):
            samples: dict[str, list[float]] = {"ours": [], "theirs": []}
            hits: dict[str, int] = {"ours": 0, "theirs": 0}
            for query in Corpus(seed=2 + words).queries(queries, words):
                start = time.perf_counter()
                found = await ours.apply(OWNER, SearchMemories(query=query, limit=10))
                samples["ours"].append(time.perf_counter() - start)
                hits["ours"] += len(found.model_dump()["memories"])
                start = time.perf_counter()
                legacy = await theirs.search_memories(OWNER, query, 10)  # type: ignore[attr-defined]
                samples["theirs"].append(time.perf_counter() - start)
                hits["theirs"] += len(legacy)
            assert hits["ours"], "our store found nothing: its rows miss a column it reads"
            results.append(
                SearchResult(
                    size,
                    words,
                    *summary_ms(samples["ours"]),
                    *summary_ms(samples["theirs"]),
                    hits["ours"] / queries,
                    hits["theirs"] / queries,
                )
            )
        await ours.close()
    return results
