"""Vectors computed after the write that needed them, in batches, at low CPU priority.

A store (or an update of a memory's text) commits without waiting for the
model, so it costs what a SQLite transaction costs and BM25 finds the memory
at once. Its seq joins ``waiting``; a background task embeds the waiting
memories in batches, in a thread of the lowest CPU priority, so the model
takes what the agents' requests leave of the CPU, and commits their vectors
in one trip. It starts a batch only once no memory has come for a moment
(``QUIET_SECONDS``): a burst of stores is served first and embedded after it
(at the lowest priority alone, the model still slowed a burst on two cores),
but the background never waits more than ``MOST_DEFERRED_SECONDS`` for such a
pause. What waits is read from the file at start (a memory without a vector
row, or with another model's), so a crash between a commit and its embedding
loses nothing. A search first embeds the waiting memories of the spaces it
reads, at normal priority, when they are few (``ON_DEMAND``): a memory
stored just before a search is found by meaning too.

A vector is kept only for the text it was made from: the text is read again as the
vector is written, with the row held where other transactions write beside us (so a
change either waits for the vector, then deletes it, or is seen first), and a memory
noted again while its vector was being written waits for the next one.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Collection, Mapping
from typing import Any

from spade_memory.base_memory.retrieval.ranking import Ranking, embedding_text
from spade_memory.base_memory.retrieval.threads import lowest_priority
from spade_memory.metrics.figures import pending
from spade_memory.storage.connection import Database, Transacting
from spade_memory.storage.faults import store_errors
from spade_memory.storage.statements import placeholders

logger = logging.getLogger("spade_memory.base_memory")

BATCH = 64
"""Memories embedded together and committed in one transaction."""
ON_DEMAND = 64
"""A search embeds the waiting memories of its spaces first when at most this many wait."""
QUIET_SECONDS = 0.05
"""How long no memory must have come before the background starts a batch: one batch
for many single stores, and a burst of stores is not slowed by the model."""
MOST_DEFERRED_SECONDS = 60.0
"""How long the background waits for a quiet moment at most, counted from when memories
began to wait: under stores that never pause, it embeds beside them."""
RETRY_AFTER_SECONDS = 5.0
"""Pause after a batch failed to commit (a full disk, say) before trying again."""


class VectorBackfill:
    """Embeds memories committed without a vector, and keeps the ranking's cache current."""

    def __init__(self, tx: Transacting, ranking: Ranking, share_row: str = "") -> None:
        self._tx, self._ranking, self._share_row = tx, ranking, share_row
        self.waiting: dict[int, str] = {}
        """Memory seq → its space's key, for every memory that has no vector yet."""
        self._noted: dict[int, int] = {}
        """Memory seq → when it was last noted (a count): a vector written for a memory
        noted again meanwhile may be of its old text, so the memory still waits."""
        self._notes = itertools.count()
        self._texts: dict[int, str] = {}
        """The text to embed of waiting memories, when the write that noted them knew it."""
        self._by_space: dict[str, set[int]] = {}
        """The waiting memories of each space."""
        pending("embeddings", lambda: sum(len(seqs) for seqs in self._by_space.values()))
        self._last_noted = 0.0
        """When a memory last came (the event loop's clock)."""
        self._waiting_since = 0.0
        """When memories began to wait, none waiting before."""
        self._wake = asyncio.Event()
        self._drained = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._thread = _LowPriorityThread()

    async def start(self) -> None:
        """Find what has no vector yet (stored before a crash, or without the model)
        and start embedding it in the background."""
        assert self._ranking.embedder is not None
        async with self._tx.write() as db:
            rows = await db.execute_fetchall(
                "SELECT m.seq, m.space FROM memories m LEFT JOIN embeddings e ON e.seq = m.seq"
                " WHERE e.seq IS NULL OR e.model != ?",  # none yet, or another model's
                (self._ranking.embedder.name,),
            )
        self.note({int(seq): str(space) for seq, space in rows})
        if self.waiting:
            logger.info("%d memories have no vector yet: embedding them", len(self.waiting))
        self._task = asyncio.create_task(self._run(), name="spade-memory-backfill")

    def note(self, seqs: Mapping[int, str], texts: Mapping[int, str] | None = None) -> None:
        """These committed memories (seq → space key) need a vector; ``texts`` are the
        texts to embed of some of them (the others are read from the file)."""
        if seqs:
            self._last_noted = asyncio.get_running_loop().time()
            if not self.waiting:
                self._waiting_since = self._last_noted
            self.waiting.update(seqs)
            for seq, space in seqs.items():
                self._noted[seq] = next(self._notes)
                self._texts.pop(seq, None)
                self._by_space.setdefault(space, set()).add(seq)
            self._texts.update(texts or {})
            self._drained.clear()
            self._wake.set()
        elif not self.waiting:
            self._drained.set()

    def waiting_in(self, space: str) -> int:
        """How many memories of ``space`` wait for their vector."""
        return len(self._by_space.get(space, ()))

    async def embed_now(self, spaces: Collection[str]) -> None:
        """Embed the waiting memories of ``spaces`` now, at normal priority, if they are
        few; otherwise a search finds them by words until the background reaches them."""
        if not 0 < sum(self.waiting_in(space) for space in spaces) <= ON_DEMAND:
            return
        seqs = [seq for space in spaces for seq in self._by_space.get(space, ())]
        if seqs:
            try:
                await self._embed(seqs, background=False)
            except store_errors() as error:  # the search goes on without them
                logger.warning("vectors not written yet (%s)", error)

    async def drained(self) -> None:
        """Return once no memory waits for its vector (for tests and benchmarks)."""
        self.note({})
        await self._drained.wait()

    async def close(self) -> None:
        """Stop the background work; what still waits is found again at the next start."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self._thread.stop()

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self.waiting:
                await self._until_quiet()
                batch = list(itertools.islice(self.waiting, BATCH))
                try:
                    await self._embed(batch, background=True)
                except store_errors() as error:
                    logger.warning("vectors not written yet (%s); trying again later", error)
                    await asyncio.sleep(RETRY_AFTER_SECONDS)
                except Exception:
                    logger.exception("embedding failed; trying again later")
                    await asyncio.sleep(RETRY_AFTER_SECONDS)
            self._drained.set()

    async def _until_quiet(self) -> None:
        """Return once no memory has come for ``QUIET_SECONDS`` (or memories have waited
        ``MOST_DEFERRED_SECONDS``)."""
        loop = asyncio.get_running_loop()
        while (left := pause_left(loop.time(), self._last_noted, self._waiting_since)) > 0:
            await asyncio.sleep(left)

    async def _embed(self, seqs: list[int], background: bool) -> None:
        """Embed ``seqs`` as they are now and commit their vectors, unless their text
        changed meanwhile (the change noted them again). In the ``background``, the model
        runs in a thread of the lowest priority; otherwise like a search's query."""
        if self._tx.out_of_service is not None:
            raise sqlite3.DatabaseError(str(self._tx.out_of_service))
        noted = {seq: self._noted.get(seq) for seq in seqs}
        texts = {seq: (self.waiting[seq], self._texts[seq]) for seq in seqs if seq in self._texts}
        if unknown := [seq for seq in seqs if seq not in texts]:
            read = await self._tx.inline(lambda db: self._texts_in(db, unknown))
            texts.update(read)
            for seq in set(unknown) - read.keys():  # deleted meanwhile: nothing to embed
                self._forget(seq)
        if not texts:
            return
        inputs = [text for _, text in texts.values()]
        if background:
            assert self._ranking.embedder is not None
            # loaded at normal priority: a search must never wait for a starved thread
            await asyncio.to_thread(self._ranking.embedder.load)
            vectors = await self._thread.embed(self._ranking.embedder.embed, inputs)
        else:
            vectors = await self._ranking.embed(inputs)
        embedded = dict(zip(texts, vectors, strict=True))
        assert self._ranking.embedder is not None
        model = self._ranking.embedder.name

        async def write(
            db: Database, part: dict[int, Any]
        ) -> tuple[dict[int, tuple[str, str]], dict[int, Any]]:
            # held to the commit where others write beside us: a change waits, or is seen
            now = await self._texts_in(db, list(part), self._share_row)
            kept = {seq: vector for seq, vector in part.items() if now.get(seq) == texts[seq]}
            if (in_database := self._ranking.in_database) is not None:
                from spade_memory.base_memory.retrieval.pgvector import as_vector

                await db.executemany(
                    in_database.WRITE,
                    [
                        (seq, model, self._ranking.blob(vector), as_vector(vector))
                        for seq, vector in kept.items()
                    ],
                )
            else:
                await db.executemany(
                    "INSERT INTO embeddings (seq, model, vector) VALUES (?, ?, ?)"
                    " ON CONFLICT (seq) DO UPDATE SET model = excluded.model,"
                    " vector = excluded.vector",
                    [(seq, model, self._ranking.blob(vector)) for seq, vector in kept.items()],
                )
            return now, kept

        now: dict[int, tuple[str, str]] = {}
        kept: dict[int, Any] = {}
        # where others write beside us, one memory per transaction: a row held while
        # waiting for another is how two transactions deadlock
        for part in [{s: v} for s, v in embedded.items()] if self._share_row else [embedded]:
            part_now, part_kept = await self._tx.inline(functools.partial(write, part=part))
            now.update(part_now)
            kept.update(part_kept)
        # no await from here on; a change committed after ours (even one whose note came
        # before we got here: releasing the connection may take a trip) noted it again
        for seq in embedded.keys() - now.keys():
            self._forget(seq)
        for seq in now.keys() - kept.keys():  # changed meanwhile: read it again next time,
            if self._texts.get(seq) == texts[seq][1]:  # unless the change told its text
                del self._texts[seq]
        by_space: dict[str, dict[int, Any]] = {}
        for seq, vector in kept.items():
            if self._noted.get(seq) != noted[seq]:
                continue  # changed since we read it: it waits for the new text's vector
            self._forget(seq)
            by_space.setdefault(texts[seq][0], {})[seq] = vector
        for space, vectors_of_space in by_space.items():
            self._ranking.added(space, vectors_of_space)

    def _forget(self, seq: int) -> None:
        space = self.waiting.pop(seq, None)
        self._texts.pop(seq, None)
        self._noted.pop(seq, None)
        if space is not None and (of_space := self._by_space.get(space)) is not None:
            of_space.discard(seq)
            if not of_space:
                del self._by_space[space]

    @staticmethod
    async def _texts_in(
        db: Database, seqs: list[int], lock: str = ""
    ) -> dict[int, tuple[str, str]]:
        """seq → (space key, text to embed) of those of ``seqs`` that still exist (their
        rows read with ``lock``, the engine's ``share_row``, when about to be written)."""
        rows = await db.execute_fetchall(
            f"SELECT seq, space, content, context FROM memories"
            f" WHERE seq IN ({placeholders(seqs)}){lock}",
            seqs,
        )
        return {
            int(seq): (str(space), embedding_text(str(content), context))
            for seq, space, content, context in rows
        }


def pause_left(now: float, last_noted: float, waiting_since: float) -> float:
    """Seconds the background still waits before its next batch, at ``now``: until
    ``QUIET_SECONDS`` after the last memory came, but not past ``MOST_DEFERRED_SECONDS``
    after memories began to wait."""
    return max(0.0, min(last_noted + QUIET_SECONDS, waiting_since + MOST_DEFERRED_SECONDS) - now)


class _LowPriorityThread:
    """Runs the model in a daemon thread of the lowest CPU priority, a few texts at a time,
    so that a stop waits at most for a few texts (the model must not be running when the
    interpreter exits: onnxruntime aborts the process)."""

    CHUNK = 8

    def __init__(self) -> None:
        self._stopping = threading.Event()
        self._running: threading.Thread | None = None

    async def embed(self, model: Callable[[list[str]], Any], texts: list[str]) -> list[Any]:
        """One vector per text; raises ``asyncio.CancelledError`` once stopping."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[list[Any]] = loop.create_future()

        def settle(result: list[Any], error: BaseException | None) -> None:
            if done.done():
                return
            if error is not None:
                done.set_exception(error)
            else:
                done.set_result(result)

        def run() -> None:
            lowest_priority()
            vectors: list[Any] = []
            error: BaseException | None = None
            try:
                for start in range(0, len(texts), self.CHUNK):
                    if self._stopping.is_set():
                        raise asyncio.CancelledError
                    vectors.extend(model(texts[start : start + self.CHUNK]))
            except BaseException as failed:
                error = failed
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(settle, vectors, error)

        self._running = threading.Thread(target=run, name="spade-memory-embed", daemon=True)
        self._running.start()
        return await done

    async def stop(self, timeout: float = 10.0) -> None:
        """Let the running texts finish (at most ``timeout`` seconds) and start no more."""
        self._stopping.set()
        deadline = time.monotonic() + timeout
        while self._running is not None and self._running.is_alive():
            if time.monotonic() > deadline:
                logger.warning("the embedding thread did not stop within %.0fs", timeout)
                return
            await asyncio.sleep(0.01)
