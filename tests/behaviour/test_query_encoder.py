"""The distilled query encoder: made once per machine, in the model's space, and the
model's own vector where no word of the query is in any memory.

Real model, real table, real SQLite files.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest

from spade_memory.base_memory.retrieval import query_encoder
from spade_memory.base_memory.retrieval.embeddings import Embedder, MiniLMEmbedder, load_embedder
from spade_memory.base_memory.retrieval.ranking import Ranking
from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.protocol.memories import MemoryList, SearchMemories, Stored, StoreMemory

ALICE = "alice@localhost"
MEMORIES = [
    "The family dog is called Rex and loves the beach",
    "Quarterly taxes are due on the fifteenth",
    "The build server runs out of disk every Monday",
    "Carol prefers green tea over coffee",
    "The invoices are paid every Friday",
]
QUESTIONS = {  # question → the memory it is about
    "what is the name of our puppy": 0,
    "what is the deadline for the tax": 1,
    "which machine fills its storage at the start of the week": 2,
    "what drink does she like": 3,
}


@pytest.mark.slow  # the table distilled on both cores: half a minute of both here
@pytest.mark.long
def test_the_table_is_made_once_and_its_queries_find_what_the_models_find(
    tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert isinstance(embedder, MiniLMEmbedder) and embedder.model is not None
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / embedder.model.name).symlink_to(embedder.model)  # prepared: test_backfill's
    monkeypatch.setenv("SPADE_MEMORY_CACHE", str(cache))
    table = query_encoder.table_file(embedder.name)
    assert table.parent == cache and not table.exists()
    # a missing table and a damaged one are alike not readable, and made on one branch:
    # distilled once here (a minute of both cores), from a damaged table
    assert not query_encoder.readable(table, embedder.dimensions)
    table.write_bytes(b"\x93NUMPY damaged")
    assert not query_encoder.readable(table, embedder.dimensions)
    made = load_embedder()
    assert isinstance(made, MiniLMEmbedder) and made.query_table == table
    assert made.model == cache / embedder.model.name  # the linked model, not prepared again
    assert query_encoder.readable(table, made.dimensions)
    written = table.stat().st_mtime_ns
    again = load_embedder()
    assert isinstance(again, MiniLMEmbedder) and again.query_table == table
    assert table.stat().st_mtime_ns == written  # kept, not made again

    stored = made.embed(MEMORIES)
    found = made.embed_queries(list(QUESTIONS))
    assert found is not None and all(vector is not None for vector in found)
    rough, exact = np.stack(found), made.embed(list(QUESTIONS))  # type: ignore[arg-type]
    assert rough.shape == exact.shape
    assert np.allclose(np.linalg.norm(rough, axis=1), 1.0, atol=1e-4)
    for row, answer in enumerate(QUESTIONS.values()):  # each finds its memory first
        assert int(np.argmax(stored @ rough[row])) == answer
        assert int(np.argmax(stored @ exact[row])) == answer
    assert float((rough * exact).sum(axis=1).mean()) > 0.5  # the model's space, roughly


async def test_without_a_table_or_a_token_queries_run_the_model(embedder: Embedder) -> None:
    model_queries = load_embedder(model_queries=True)
    assert model_queries is not None and model_queries.embed_queries(["tea"]) is None
    rough = embedder.embed_queries(["tea", ""])
    assert rough is not None and rough[0] is not None and rough[1] is None  # "": no token
    ranking = Ranking(embedder)
    for _ in range(2):  # the encoder opened in a thread, then used on the event loop
        tea, empty = await ranking.embed_queries(["tea", ""])
        assert tea is not None and not tea.exact and np.allclose(tea.vector, rough[0])
        assert empty is not None and empty.exact  # the model's vector, and its floor
        assert np.allclose(empty.vector, embedder.embed([""])[0])
    (by_model,) = await Ranking(model_queries).embed_queries(["tea"])
    assert by_model is not None and by_model.exact
    assert np.allclose(by_model.vector, embedder.embed(["tea"])[0])


def test_stop_words_and_punctuation_do_not_move_a_query(embedder: Embedder) -> None:
    rough = embedder.embed_queries(["dog beach", "the dog, on the beach?!"])
    assert rough is not None and rough[0] is not None and rough[1] is not None
    assert float(rough[0] @ rough[1]) > 0.999


@pytest.fixture
async def store(tmp_path: Path, embedder: Embedder) -> AsyncIterator[LongTermStore]:
    opened = await LongTermStore.open(tmp_path / "memories.db", embedder=embedder)
    for content in MEMORIES:
        assert isinstance(await opened.apply(ALICE, StoreMemory(content=content)), Stored)
    await opened.embedded()
    yield opened
    await opened.close()


async def test_a_query_no_memory_shares_a_word_with_gets_the_models_vector(
    store: LongTermStore, embedder: Embedder
) -> None:
    question = "when do suppliers get their money"  # no word of it in any memory
    rough = embedder.embed_queries([question])
    stored = embedder.embed([MEMORIES[4]])
    assert rough is not None and rough[0] is not None
    assert float(rough[0] @ stored[0]) < query_encoder.MIN_SIMILARITY
    found = await store.apply(ALICE, SearchMemories(query=question, limit=1))
    assert isinstance(found, MemoryList)
    assert [m.content for m in found.memories] == [MEMORIES[4]]
