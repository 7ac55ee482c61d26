"""Vectors that other agents of one PostgreSQL database commit, told to this agent's
cached indexes, so a memory stored through one agent is found by meaning through all.

Each agent keeps, per space, an index of vectors in its memory (``ranking``). On a
shared database the other agents' commits would pass it by: their memories would be
found by words only, until a restart. A trigger on ``embeddings`` (``pg_schema``'s
second migration) sends, with PostgreSQL's ``NOTIFY``, the numbers of the memories
whose vectors a transaction added, replaced or removed; PostgreSQL delivers them when
it commits, in commit order, to every agent listening. ``VectorNotices`` listens on a
connection of its own and applies each notice in turn: vectors added are read from
the database as they are then (a later removal wins, whichever arrives first) and put
in the index of their space, if it is cached; vectors removed leave every index.

A space's index read while a notice is applied could miss that notice's vectors, so
both take one lock (``Ranking.shared``). While the connection is lost, notices are
lost too: every cached index is dropped, none is kept until it listens again, and
searches read their spaces whole meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any

from spade_memory.base_memory.retrieval.ranking import SharedReading
from spade_memory.storage.faults import StoreFault
from spade_memory.storage.postgres import CONNECT_SECONDS, shown

if TYPE_CHECKING:
    import asyncpg

    from spade_memory.base_memory.retrieval.ranking import Ranking

logger = logging.getLogger("spade_memory.base_memory")

CHANNEL = "spade_memory_vectors"
"""The channel the trigger notifies: ``+`` or ``-``, then memory numbers, comma-separated."""
APPLICATION_NAME = "spade-memory vector notices"
"""How its connection shows in ``pg_stat_activity``."""
RECONNECT_SECONDS = 1.0
"""Pause between attempts to listen again after the connection was lost."""


class VectorNotices:
    """Listens for the vectors committed on a shared database and keeps the cached
    indexes of ``ranking`` up to date with them. Start with ``start``, end with ``close``."""

    def __init__(self, url: str, ranking: Ranking) -> None:
        self.url = url
        self.ranking = ranking
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        self._conn: asyncpg.Connection | None = None
        self._task: asyncio.Task[None] | None = None
        ranking.shared = self._shared = SharedReading()

    async def start(self) -> None:
        """Listen; raises ``StoreFault`` naming the server when it cannot be reached."""
        import asyncpg

        try:
            await self._listen()
        except (OSError, asyncio.TimeoutError, asyncpg.PostgresError) as error:
            raise StoreFault(
                shown(self.url), f"cannot be reached to listen ({error or type(error).__name__})",
                "start the PostgreSQL server, or give --database a database it serves",
            ) from None  # fmt: skip
        self._task = asyncio.create_task(self._apply_in_turn())

    async def close(self) -> None:
        """Stop listening and close the connection, at once."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._conn is not None and not self._conn.is_closed():
            self._conn.terminate()  # a LISTEN ends with its session; nothing to wait for

    async def _listen(self) -> None:
        import asyncpg

        conn = await asyncio.wait_for(
            asyncpg.connect(self.url, server_settings={"application_name": APPLICATION_NAME}),
            CONNECT_SECONDS,
        )
        conn.add_termination_listener(self._lost)
        await conn.add_listener(CHANNEL, self._heard)
        self._conn = conn
        self._shared.listening = True

    def _heard(self, conn: Any, pid: int, channel: str, payload: str) -> None:
        self._queue.put_nowait(payload)

    def _lost(self, conn: Any) -> None:
        """Notices sent from now on are lost: drop every cached index, keep none."""
        self._shared.listening = False
        self.ranking.drop_all()
        self._queue.put_nowait("")  # wakes the task, which listens again

    async def _apply_in_turn(self) -> None:
        while True:
            payload = await self._queue.get()
            if not self._shared.listening:
                await self._listen_again()
                continue
            try:
                async with self._shared.lock:
                    await self._apply(payload)
            except Exception as error:  # a notice not applied: no cache may be trusted
                logger.warning("%s: a vector notice was not applied (%s)", shown(self.url), error)
                self.ranking.drop_all()

    async def _apply(self, payload: str) -> None:
        seqs = [int(seq) for seq in payload[1:].split(",") if seq]
        if payload.startswith("-"):
            self.ranking.removed_everywhere(seqs)
            return
        embedder = self.ranking.embedder
        if embedder is None or self._conn is None or not self.ranking.cached_spaces:
            return
        from spade_memory.base_memory.retrieval.dense import from_blob

        rows = await self._conn.fetch(
            "SELECT e.seq, m.space, e.vector FROM embeddings e JOIN memories m ON m.seq = e.seq"
            " WHERE e.seq = ANY($1::bigint[]) AND e.model = $2",
            seqs,
            embedder.name,
        )
        by_space: dict[str, dict[int, Any]] = {}
        for seq, space, blob in rows:
            by_space.setdefault(str(space), {})[int(seq)] = from_blob(bytes(blob))
        for space, vectors in by_space.items():
            self.ranking.added(space, vectors)

    async def _listen_again(self) -> None:
        """Listen again, trying every ``RECONNECT_SECONDS`` until the server answers."""
        while True:
            try:
                await self._listen()
                return
            except Exception as error:  # OSError, a timeout, asyncpg's errors
                logger.warning("%s: cannot listen for vectors (%s)", shown(self.url), error)
                await asyncio.sleep(RECONNECT_SECONDS)
