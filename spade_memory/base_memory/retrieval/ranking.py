"""How the long-term store ranks: BM25 alone, or BM25 fused with dense similarity.

``Ranking`` owns the optional embedder and, per space (an owner's personal
space or a shared one), a cached index of memory vectors that follows every
committed vector (on a shared database, other agents' too: ``vector_notices``); on a
PostgreSQL with pgvector, the database searches the vectors instead (``pgvector``). A
search over several spaces fuses over all of them. Vectors
are stored with the memories (table ``embeddings``, deleted with them) and
computed off the event loop, after the write that needed them (see
``backfill``). Ranking runs inside the store's transaction, on its
connection, so no write can slip in while a space's index is built; in a large space
the dense half is searched in a thread of its own while the word search runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import logging
import sqlite3
from collections import OrderedDict
from collections.abc import Collection, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from spade_memory.base_memory.retrieval import dates, locality, query_encoder
from spade_memory.base_memory.retrieval.meanwhile import BackgroundFill
from spade_memory.base_memory.retrieval.threads import one_thread_per_library
from spade_memory.base_memory.store.filters import Selection
from spade_memory.base_memory.store.pg_tables import TEXT_SEARCH
from spade_memory.base_memory.store.tables import WORD_SCORE
from spade_memory.storage.connection import Database, InlineConnection
from spade_memory.storage.fts import fts5_expression, query_terms, tsquery_text
from spade_memory.storage.postgres import Dialect
from spade_memory.storage.statements import placeholders

if TYPE_CHECKING:
    from spade_memory.base_memory.retrieval.ann import IndexBuild
    from spade_memory.base_memory.retrieval.dense import ExactIndex, Similar, VectorIndex
    from spade_memory.base_memory.retrieval.embeddings import Embedder
    from spade_memory.base_memory.retrieval.pgvector import DatabaseVectors

T = TypeVar("T")

BM25_CANDIDATES = 200
"""How many BM25 matches enter the fusion (dense similarity covers every memory)."""


logger = logging.getLogger("spade_memory.base_memory")

LOAD_IN_BACKGROUND_FROM = 50_000
"""Memories a space needs for its vectors to be read in the background at its first
search after a start (reading a million would hold the search up), instead of within
the search."""
VECTORS_OF_SPACE = (
    "SELECT e.seq, e.vector FROM embeddings e JOIN memories m ON m.seq = e.seq"
    " WHERE m.space = ? AND e.model = ?"
)

MIN_SIMILARITY = 0.25
"""Cosine to the model's vector of a query that a memory needs to be returned on meaning
alone (12% of unrelated question and memory pairs reach it on LoCoMo's conversations
1-2); for the distilled encoder's, ``query_encoder.MIN_SIMILARITY``."""

CACHED_SPACES = 64
"""Spaces whose vector index stays in memory between searches (least recent dropped)."""


def embedding_text(content: str, context: str | None) -> str:
    """What is embedded: the context (when, why, what came before), then the content."""
    return f"{context}\n{content}" if context else content


@dataclass(frozen=True)
class QueryVector:
    """A search query's vector: the model's own (``exact``), or the distilled encoder's."""

    vector: Any
    exact: bool

    @property
    def min_similarity(self) -> float:
        """The cosine a memory needs to be returned on meaning alone."""
        return MIN_SIMILARITY if self.exact else query_encoder.MIN_SIMILARITY


@dataclass
class SharedReading:
    """How a space's index is read on a database other agents write (``vector_notices``):
    under ``lock``, which a notice being applied holds too, and cached only while
    ``listening`` (otherwise the notices that would keep it current are lost)."""

    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    listening: bool = False


class Ranking:
    """BM25, plus dense similarity when an embedder is loaded."""

    def __init__(
        self, embedder: Embedder | None, path: Path | None = None, dialect: Dialect = "sqlite"
    ) -> None:
        self.embedder = embedder
        self.dialect = dialect
        """The engine searched, as its store chose it once: the word search and where the
        model runs inside a transaction differ."""
        self.path = None if path is None or str(path) == ":memory:" else path
        """The store's file, which large spaces' vectors are read from in the background."""
        if embedder is not None:
            one_thread_per_library()
        self._indexes: OrderedDict[str, VectorIndex] = OrderedDict()
        self._builds: dict[str, IndexBuild] = {}
        """Approximate indexes being built, by space (see ``ann``)."""
        self._unbuildable: set[str] = set()
        """Spaces whose build failed: they stay exact until the next start."""
        self._loads: dict[str, IndexLoad] = {}
        """Large spaces whose vectors are being read in the background (BM25 answers)."""
        self.shared: SharedReading | None = None
        """Set on a database other agents write (None: only this agent writes)."""
        self.in_database: DatabaseVectors | None = None
        """Set when PostgreSQL searches the vectors itself (pgvector): no index is cached."""
        self._encoder_warm = False
        """Whether the embedder's query encoder has been opened (its first call is not)."""

    @property
    def kind(self) -> str:
        """``hybrid`` with an embedder, ``bm25`` without."""
        return "bm25" if self.embedder is None else "hybrid"

    def added(self, space: str, vectors: Mapping[int, Any]) -> None:
        """Committed vectors of a space's memories reach its cached index."""
        if load := self._loads.get(space):
            load.put(vectors)
        index = self._indexes.get(space)
        if vectors and index is not None:
            index.put(vectors)
            if build := self._builds.get(space):
                build.put(vectors)
            self._build_if_large(space, index)

    def removed(self, space: str, seqs: Collection[int]) -> None:
        """Committed removals (a memory deleted, or its text changed) reach the cache."""
        if load := self._loads.get(space):
            load.remove(seqs)
        index = self._indexes.get(space)
        if seqs and index is not None:
            index.remove(seqs)
            if build := self._builds.get(space):
                build.remove(seqs)

    def removed_everywhere(self, seqs: Collection[int]) -> None:
        """Removals another agent committed (its notice names no space)."""
        for space in list(self._indexes):
            self.removed(space, seqs)

    @property
    def cached_spaces(self) -> int:
        """How many spaces have an index in memory."""
        return len(self._indexes)

    def drop_all(self) -> None:
        """Drop every cached index (they may have missed changes): read again when used."""
        self._indexes.clear()
        self._builds.clear()  # their threads end by themselves; their results are dropped
        self._loads.clear()

    @property
    def building(self) -> bool:
        """Whether a large space's vectors are being read or its approximate index built
        (either takes over at the next search)."""
        jobs: list[IndexBuild | IndexLoad] = [*self._builds.values(), *self._loads.values()]
        return any(not job.done for job in jobs)

    def kind_of(self, space: str) -> Literal["none", "exact", "approximate", "pgvector"]:
        """``exact`` or ``approximate``: how the cached index of ``space`` scores (``none``
        when it is not cached); ``pgvector`` when the database searches every space.
        A cached index means numpy is installed: ``ann`` (which needs it) is imported only
        then, so that word search alone serves without the ``embeddings`` extra."""
        if self.in_database is not None and self.embedder is not None:
            return "pgvector"
        index = self._indexes.get(space)
        if index is None:
            return "none"
        from spade_memory.base_memory.retrieval.ann import ApproximateIndex

        return "approximate" if isinstance(index, ApproximateIndex) else "exact"

    def forget(self, space: str) -> None:
        """Drop a space's cached index (the space is gone)."""
        self._indexes.pop(space, None)
        self._builds.pop(space, None)  # its thread ends by itself; its result is dropped
        self._loads.pop(space, None)

    async def embed(self, texts: Sequence[str]) -> list[Any]:
        """One vector per text, in one model call off the event loop (None without a model)."""
        if self.embedder is None or not texts:
            return [None] * len(texts)
        return list(await asyncio.to_thread(self.embedder.embed, list(texts)))

    async def embed_queries(self, queries: Sequence[str]) -> list[QueryVector | None]:
        """One vector per search query (None without a model): the embedder's cheap
        encoder's if it has one, computed on the event loop (a table lookup: no thread
        needed), else the model's, off the event loop. A query the encoder
        finds no token in gets the model's too."""
        if self.embedder is None or not queries:
            return [None] * len(queries)
        if self._encoder_warm:
            rough = self.embedder.embed_queries(queries)
        else:  # the first call opens the encoder's table: not on the event loop
            rough = await asyncio.to_thread(self.embedder.embed_queries, list(queries))
            self._encoder_warm = True
        if rough is None:
            return [QueryVector(vector, exact=True) for vector in await self.embed(queries)]
        vectors = [None if v is None else QueryVector(v, exact=False) for v in rough]
        tokenless = [row for row, vector in enumerate(vectors) if vector is None]
        exact = await self.embed([queries[row] for row in tokenless])
        for row, vector in zip(tokenless, exact, strict=True):
            vectors[row] = QueryVector(vector, exact=True)
        return vectors

    async def _model_vector(self, db: Database, query: str) -> Any:
        """The model's vector of ``query``, asked for inside a transaction: on SQLite the
        batch runs in the connection's thread, which has no event loop to hand the model
        to; PostgreSQL's runs on the event loop, which must not wait for it."""
        assert self.embedder is not None
        if self.dialect == "sqlite":
            return self.embedder.embed([query])[0]
        return (await self.embed([query]))[0]

    @staticmethod
    def blob(vector: Any) -> bytes:
        """The stored form of a vector."""
        from spade_memory.base_memory.retrieval.dense import to_blob

        return to_blob(vector)

    async def rank(
        self,
        db: Database,
        spaces: Sequence[str],
        query: str,
        selection: Selection,
        limit: int,
        query_vector: QueryVector | None,
        removed: Collection[int] = (),
    ) -> Ranked:
        """The best memories of ``spaces`` that ``selection`` lets through, for ``query``.

        ``removed`` are memories whose vectors this transaction dropped (not committed yet).
        """
        terms, candidates = query_terms(query), max(limit, BM25_CANDIDATES)
        if self.embedder is None or query_vector is None:
            bm25 = await _bm25(db, spaces, terms, selection, candidates, self.dialect)
            scores = await dates.favour_named_time(db, query, locality.lifted(bm25), limit)
            return Ranked(_best(scores, limit), scores, words=len(bm25))
        from spade_memory.base_memory.retrieval.dense import fuse

        indexes: list[VectorIndex] = []
        ahead: Future[Similar] | None = None
        if self.in_database is None:
            loaded = [await self._index(db, space) for space in spaces]
            indexes = [index for index in loaded if index is not None]  # others: still loading
            ahead = _ahead(indexes, query_vector.vector, limit, removed, selection)
        try:
            bm25 = await _bm25(db, spaces, terms, selection, candidates, self.dialect)
            if not bm25 and not query_vector.exact:  # meaning alone decides: model's vector
                if ahead is not None:  # it searched with the encoder's: done before going on
                    await _outcome(db, ahead)
                    ahead = None
                query_vector = QueryVector(await self._model_vector(db, query), exact=True)
        except BaseException:
            if ahead is not None:  # it reads the indexes, which change between transactions
                wait([ahead])
            raise
        vector = query_vector.vector
        if self.in_database is not None:  # sees this transaction's own removals
            similar, cosines = await self.in_database.similar(
                db, spaces, vector, limit, selection, list(bm25)
            )
            dense = True
        else:
            similar = await self._similar(
                db, indexes, spaces, vector, limit, removed, selection, first=ahead
            )
            cosines = {}
            for index in indexes:
                cosines.update(index.cosines(vector, bm25.keys() - set(removed)))
            dense = len(indexes) == len(spaces)
        fused = fuse(bm25, similar, cosines)
        # a memory no word of the query matched must at least be similar in meaning
        relevant = locality.lifted({
            seq: score
            for seq, score in fused.items()
            if seq in bm25 or similar.best.get(seq, 0.0) >= query_vector.min_similarity
        })  # fmt: skip
        relevant = await dates.favour_named_time(db, query, relevant, limit)
        return Ranked(
            _best(relevant, limit), relevant, words=len(bm25), meanings=len(similar.best),
            dense=dense,
        )  # fmt: skip

    async def _similar(
        self,
        db: Database,
        indexes: Sequence[VectorIndex],
        spaces: Sequence[str],
        query_vector: Any,
        limit: int,
        removed: Collection[int],
        selection: Selection,
        first: Future[Similar] | None = None,
    ) -> Similar:
        """The ``limit`` most similar memories that ``selection`` lets through, over every
        index; ``first``, the first round's answer if it was searched ahead (``_ahead``)."""
        from spade_memory.base_memory.retrieval.dense import Similar

        wanted = _first_wanted(limit, selection)
        total = sum(len(index) for index in indexes)
        while True:
            if first is not None:
                similar, first = await _outcome(db, first), None
            else:
                similar = _most_similar(indexes, query_vector, wanted, removed)
            if not selection.narrows:
                return similar
            allowed = await _seqs_in(db, spaces, selection, list(similar.best))
            best = {seq: score for seq, score in similar.best.items() if seq in allowed}
            if len(best) >= limit or wanted >= total:
                return Similar(dict(list(best.items())[:limit]), similar.low, similar.high)
            wanted *= 4

    async def _index(self, db: Database, space: str) -> VectorIndex | None:
        """The space's index: cached, read now (a small space), or None while a large
        space's vectors are read in the background (its memories are found by words)."""
        index = self._indexes.get(space)
        if index is not None:
            self._indexes.move_to_end(space)
            return self._promoted(space, index)
        if self.shared is not None:  # no notice applied while it is read
            async with self.shared.lock:
                if (index := self._indexes.get(space)) is not None:
                    return index  # read by another search meanwhile
                return await self._read_index(db, space, cache=self.shared.listening)
        return await self._read_index(db, space, cache=True)

    async def _read_index(self, db: Database, space: str, cache: bool) -> VectorIndex | None:
        """The space's index read from the database (None: being read in the background),
        kept for the next searches if ``cache``."""
        from spade_memory.base_memory.retrieval.dense import ExactIndex, from_blob

        assert self.embedder is not None
        if load := self._loads.get(space):
            if not load.done:
                return None
            del self._loads[space]
            index = load.finished()
        elif self.path is not None and await _larger_than(db, space, LOAD_IN_BACKGROUND_FROM):
            self._loads[space] = IndexLoad(
                self.path, space, self.embedder.name, self.embedder.dimensions
            )
            return None
        else:
            rows = list(await db.execute_fetchall(VECTORS_OF_SPACE, (space, self.embedder.name)))
            index = ExactIndex(self.embedder.dimensions, capacity=max(256, len(rows)))
            index.put({int(seq): from_blob(bytes(blob)) for seq, blob in rows})
        if not cache:
            return index
        self._indexes[space] = index
        while len(self._indexes) > CACHED_SPACES:
            dropped, _ = self._indexes.popitem(last=False)
            self._builds.pop(dropped, None)
        self._build_if_large(space, index)
        return index

    def _build_if_large(self, space: str, index: VectorIndex) -> None:
        """Start building an approximate index for a space that has grown large."""
        from spade_memory.base_memory.retrieval import ann
        from spade_memory.base_memory.retrieval.dense import ExactIndex

        if (
            isinstance(index, ExactIndex)
            and len(index) >= ann.ANN_FROM
            and space not in self._builds
            and space not in self._unbuildable
            and ann.available()
        ):
            self._builds[space] = ann.IndexBuild(index)

    def _promoted(self, space: str, index: VectorIndex) -> VectorIndex:
        """The space's approximate index once its build is done (the exact one until)."""
        build = self._builds.get(space)
        if build is None or not build.done:
            return index
        del self._builds[space]
        approximate = build.finished()
        if approximate is None:
            self._unbuildable.add(space)
            index.frozen = False  # type: ignore[attr-defined]
            return index
        self._indexes[space] = approximate
        return approximate


class IndexLoad(BackgroundFill):
    """A large space's vectors read into an exact index in a daemon thread, from a
    connection of its own (WAL lets it read beside the writer); the changes committed
    meanwhile are noted, to be replayed once it is read."""

    def __init__(self, path: Path, space: str, model: str, dimensions: int) -> None:
        from spade_memory.base_memory.retrieval.dense import ExactIndex

        self.index = ExactIndex(dimensions)
        super().__init__("spade-memory-load", self._read, path, space, model)

    def finished(self) -> ExactIndex:
        """The index read, with the changes made meanwhile replayed."""
        self.replay(self.index)
        return self.index

    def _read(self, path: Path, space: str, model: str) -> None:
        from spade_memory.base_memory.retrieval.dense import from_blob

        try:
            with contextlib.closing(sqlite3.connect(path, timeout=30.0)) as db:
                rows = db.execute(VECTORS_OF_SPACE, (space, model))
                while chunk := rows.fetchmany(10_000):
                    self.index.put({int(seq): from_blob(bytes(blob)) for seq, blob in chunk})
        except sqlite3.Error as error:  # what was read serves; the rest comes back by search
            logger.warning("%s: vectors of a space not all read (%s)", path, error)


AHEAD_FROM = 10_000
"""Vectors over the spaces searched from which their dense search runs in a thread of
its own while the word search runs in the database's: from there, exact search costs
well more than the thread's hand-over; below, there is little to gain."""


@functools.cache
def _dense_thread() -> ThreadPoolExecutor:
    """The thread dense searches run in beside the word search: one for the process, as
    a search waits for it only while its own word search runs."""
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="spade-memory-dense")


def _ahead(
    indexes: Sequence[VectorIndex],
    vector: Any,
    limit: int,
    removed: Collection[int],
    selection: Selection,
) -> Future[Similar] | None:
    """The first round of ``Ranking._similar``, searched in ``_dense_thread`` while the
    word search runs (the two halves of a hybrid search need nothing of each other until
    they are fused). Returns None for spaces too small to be worth a thread. The caller
    must wait for the answer before its transaction ends: the cached indexes change only
    between transactions."""
    if sum(len(index) for index in indexes) < AHEAD_FROM:
        return None
    wanted = _first_wanted(limit, selection)
    return _dense_thread().submit(_most_similar, indexes, vector, wanted, frozenset(removed))


def _most_similar(
    indexes: Sequence[VectorIndex], vector: Any, wanted: int, removed: Collection[int]
) -> Similar:
    """The ``wanted`` most similar memories over every index, none of ``removed``."""
    from spade_memory.base_memory.retrieval.dense import merge

    return merge((index.similar(vector, wanted, removed) for index in indexes), wanted)


def _first_wanted(limit: int, selection: Selection) -> int:
    """How many similar memories the first round asks for: more than ``limit`` when the
    selection may leave some out (they are checked in the database)."""
    return 4 * limit if selection.narrows else limit


async def _outcome(db: Database, future: Future[T]) -> T:
    """What ``future`` returns: waited for in the database's thread when the ranking
    runs there (``InlineConnection``: no event loop to hand the wait to), else awaited."""
    if isinstance(db, InlineConnection):
        return future.result()
    return await asyncio.wrap_future(future)


async def _larger_than(db: Database, space: str, count: int) -> bool:
    rows = await db.execute_fetchall(
        "SELECT COUNT(*) FROM (SELECT 1 FROM memories WHERE space = ? LIMIT ?) AS some",
        (space, count),
    )
    return int(next(iter(rows))[0]) >= count


@dataclass
class Ranked:
    """A ranking's answer: the best seqs first, every candidate's score, and what went
    into it (for the reply's ``reasoning``)."""

    seqs: list[int]
    scores: dict[int, float]
    words: int = 0
    """Candidates the words of the query matched."""
    meanings: int = 0
    """Candidates similar in meaning."""
    dense: bool = False
    """Whether meaning search took part over every space searched."""
    expansion: str | None = None
    """Why a second round followed the graph (``graph.expansion``; None: it did not)."""
    expanded: list[str] = field(default_factory=list)
    """The entities it followed, the weightiest first."""


def _best(scores: dict[int, float], limit: int) -> list[int]:
    """Highest score first; among equal scores the newer memory (higher seq) first."""
    return sorted(scores, key=lambda seq: (-scores[seq], -seq))[:limit]


async def _bm25(
    db: Database,
    spaces: Sequence[str],
    terms: list[str],
    selection: Selection,
    limit: int,
    dialect: Dialect,
) -> dict[int, float]:
    if not terms:
        return {}
    if dialect == "postgresql":
        return await _pg_words(db, spaces, terms, selection, limit)
    expression = fts5_expression(terms)
    if not selection.narrows and await _holds_only(db, spaces):
        rows = await db.execute_fetchall(
            f"SELECT rowid, {WORD_SCORE} AS score FROM memories_fts"
            " WHERE memories_fts MATCH ? ORDER BY score LIMIT ?",
            (expression, limit),
        )
        return {int(seq): -float(score) for seq, score in rows}
    where = f"memories_fts MATCH ? AND m.space IN ({placeholders(spaces)})"
    if selection.narrows:
        where += f" AND {selection.sql}"
    # joined, ORDER BY rank is the faster (see WORD_SCORE); rank is the same score
    rows = await db.execute_fetchall(
        "SELECT m.seq, rank FROM memories_fts JOIN memories m ON m.seq = memories_fts.rowid"
        f" WHERE {where} ORDER BY rank LIMIT ?",
        (expression, *spaces, *selection.params, limit),
    )
    return {int(seq): -float(rank) for seq, rank in rows}


async def _holds_only(db: Database, spaces: Sequence[str]) -> bool:
    """Whether every memory of the SQLite file is in ``spaces``: then a word search can
    leave out its join with ``memories`` (at a million memories of one owner that join
    is a good part of the search). Checked in the search's own transaction by seeks on
    the space index, one for each gap between the spaces, so its cost does not grow
    with the file."""
    if not spaces:
        return False
    ordered = sorted(set(spaces))
    gaps: list[tuple[str, tuple[str, ...]]] = [
        ("space IS NULL", ()),
        ("space < ?", (ordered[0],)),
        *(("space > ? AND space < ?", pair) for pair in itertools.pairwise(ordered)),
        ("space > ?", (ordered[-1],)),
    ]
    rows = await db.execute_fetchall(
        "SELECT " + " OR ".join(f"EXISTS (SELECT 1 FROM memories WHERE {gap})" for gap, _ in gaps),
        [bound for _, bounds in gaps for bound in bounds],
    )
    return not next(iter(rows))[0]


PG_WEIGHTS = "{0, 0, 0.5, 1.0}"
"""``ts_rank``'s weights of the D, C, B and A parts: context (B) half of content (A), as
SQLite's ``bm25(1.0, 0.5)``."""


async def _pg_words(
    db: Database, spaces: Sequence[str], terms: list[str], selection: Selection, limit: int
) -> dict[int, float]:
    """``_bm25`` on PostgreSQL: the memories whose ``words`` match any term of the query,
    ranked by ``ts_rank`` (term frequency, weighted by part, normalised by length:
    PostgreSQL keeps no document frequencies, so rare terms do not weigh more as in BM25)."""
    where = f"m.words @@ q.query AND m.space IN ({placeholders(spaces)})"
    if selection.narrows:
        where += f" AND {selection.sql}"
    rows = await db.execute_fetchall(
        f"SELECT m.seq, ts_rank('{PG_WEIGHTS}', m.words, q.query, 1) AS score"
        f" FROM memories m, to_tsquery('{TEXT_SEARCH}', ?) AS q(query)"
        f" WHERE {where} ORDER BY score DESC, m.seq DESC LIMIT ?",
        (tsquery_text(terms), *spaces, *selection.params, limit),
    )
    return {int(seq): float(score) for seq, score in rows}


async def _seqs_in(
    db: Database, spaces: Sequence[str], selection: Selection, seqs: Sequence[int]
) -> set[int]:
    """Which of ``seqs`` are memories of ``spaces`` that ``selection`` lets through."""
    if not seqs:
        return set()
    rows = await db.execute_fetchall(
        f"SELECT m.seq FROM memories m WHERE m.seq IN ({placeholders(seqs)})"
        f" AND m.space IN ({placeholders(spaces)}) AND {selection.sql}",
        (*seqs, *spaces, *selection.params),
    )
    return {int(row[0]) for row in rows}
