"""Conversation notes on SQLite, one row per note, beside the working memories.

spade_llm keeps every note of an agent in one JSON file and rewrites all of
it on each append. Here an append is one INSERT, so its cost does not grow
with the conversation and concurrent appends cannot overwrite each other.
Notes keep spade_llm's timestamp strings, so its files import and export
unchanged. Like every store, ``batch`` applies a list of ops in one
transaction, each through its handler in a dispatch table (working-memory
ops through ``working_store``'s).

What an owner (or a shared space) keeps here counts against its byte budget
(``usage``): a note or a working-memory change that would cross it is refused
before anything is written, with the figures.

A note may expire (``expiry``): its row keeps the moment (``expires_at``,
NULL = never), every read of notes leaves it out from then on, and a
background task started with the store (and stopped by ``close``) deletes
what has expired every ``PURGE_EVERY_SECONDS``, with the expired items of
working memories.

The store lives in a SQLite file or, given a ``postgresql://`` URL, in a PostgreSQL
database (``pg_schema``) that several interaction memory agents share: there a
working memory is read ``FOR UPDATE`` before a change, so two agents changing one
session at once apply both changes, one after the other.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from spade_memory.interaction import pg_tables as pg_schema
from spade_memory.interaction import room_notes, usage, working_store
from spade_memory.protocol.conversation_stats import InteractionStats, InteractionStatsOp
from spade_memory.protocol.errors import MemoryServiceError
from spade_memory.protocol.expiry import LIVE, PURGE_EVERY_SECONDS, expiry_of
from spade_memory.protocol.interaction_forget import ForgetInteractions, InteractionsForgotten
from spade_memory.protocol.limits import Limits
from spade_memory.protocol.notes import (
    AddInformation,
    ClearConversation,
    Cleared,
    Confirmation,
    ContextSummary,
    ConversationInfo,
    Conversations,
    ExportConversation,
    GetAllConversations,
    GetContextSummary,
    GetInformation,
    InteractionsFile,
    NoteEntry,
    Notes,
    context_summary,
)
from spade_memory.protocol.ops import AppliesOps, Op, Outcome, Place, Record, Request
from spade_memory.protocol.rooms import RoomNote
from spade_memory.storage import requests
from spade_memory.storage.answer_budget import CHUNK_ROWS, FIELDS_BYTES, AnswerBudget, over_budget
from spade_memory.storage.batches import apply_all
from spade_memory.storage.connection import Database, Migration, Synchronous, Transacting
from spade_memory.storage.engines import open_transactions
from spade_memory.storage.manifest import Manifest
from spade_memory.storage.postgres import dialect
from spade_memory.storage.purging import purge_now_and_then
from spade_memory.storage.quotas import byte_budget

_V1 = (
    """CREATE TABLE notes (
        seq INTEGER PRIMARY KEY,
        owner TEXT NOT NULL,
        conversation_id TEXT NOT NULL,
        content TEXT NOT NULL,
        timestamp TEXT NOT NULL
    )""",
    "CREATE INDEX notes_by_conversation ON notes(owner, conversation_id, seq)",
    *requests.CREATE_TABLE,
)


async def _create_v1(db: Database) -> None:
    for statement in _V1:
        await db.execute(statement)


async def _create_v2(db: Database) -> None:
    await db.execute(working_store.CREATE_TABLE)


async def _add_expiry_v3(db: Database) -> None:
    await db.execute("ALTER TABLE notes ADD COLUMN expires_at REAL")  # epoch; NULL: never
    await db.execute(
        "CREATE INDEX notes_by_expiry ON notes(expires_at) WHERE expires_at IS NOT NULL"
    )
    for statement in working_store.ADD_EXPIRY:
        await db.execute(statement)


async def _own_request_table_v4(db: Database) -> None:
    """The table of applied request ids takes the name it has on PostgreSQL, where the
    long-term store's ``applied_requests`` may sit in the same database."""
    await db.execute(f"ALTER TABLE applied_requests RENAME TO {pg_schema.REQUESTS}")
    await db.execute("DROP INDEX applied_requests_age")
    await db.execute(requests.create_table(pg_schema.REQUESTS)[1])


async def _count_usage_v5(db: Database) -> None:
    """What each owner and space keeps counts against its byte budget."""
    await db.execute(usage.CREATE)
    await usage.recount(db)


MIGRATIONS: list[Migration] = [
    _create_v1, _create_v2, _add_expiry_v3, _own_request_table_v4, _count_usage_v5,
]  # fmt: skip


async def _forget_old(db: Database) -> None:
    await requests.forget_old(db, pg_schema.REQUESTS)


PagedRead = Callable[[Database, str, Op[Any], AnswerBudget], Awaitable[Record]]
"""A read of one owner, inside the store's open transaction, within the batch's budget."""


class InteractionStore(AppliesOps):
    """Conversation notes and working memories of many owners, in one SQLite file or one
    PostgreSQL database."""

    def __init__(self, tx: Transacting, limits: Limits | None = None) -> None:
        self._tx = tx
        self.limits = limits or Limits()
        """Its byte budgets (per owner and per shared space)."""
        self._requests = requests.RequestLog(pg_schema.REQUESTS)
        working = working_store.WorkingMemories(self._requests, self.limits)
        self._handlers: dict[type[Op[Any]], working_store.Handler] = {
            AddInformation: self._add,
            ClearConversation: self._clear,
            ForgetInteractions: _forget,
            InteractionStatsOp: self._stats,
            **working.handlers(),
        }
        # the reads that could answer more than one answer may carry: paged by bytes
        self._paged_reads: dict[type[Op[Any]], PagedRead] = {
            GetInformation: self._read_notes,
            GetContextSummary: self._read_notes,
            ExportConversation: self._read_notes,
            GetAllConversations: self._conversations,
        }
        self._purging: asyncio.Task[None] | None = None

    def _purge_in_background(self, every: float) -> None:
        self._purging = asyncio.create_task(
            purge_now_and_then(self._purge_while_serving, lambda: every, self._tx.path),
            name="spade-memory-purge-notes",
        )

    async def _purge_while_serving(self) -> None:
        if self._tx.out_of_service is None:
            await self.purge_expired()

    @classmethod
    async def open(
        cls,
        path: str | Path,
        synchronous: Synchronous = "NORMAL",
        manifest: Manifest | None = None,
        *,
        purge_every: float | None = PURGE_EVERY_SECONDS,
        limits: Limits | None = None,
    ) -> InteractionStore:
        """Open (creating or migrating) the store at ``path``, a SQLite file or a
        ``postgresql://`` URL (``synchronous`` and ``manifest`` are then the server's
        business), purging what expires every ``purge_every`` seconds until ``close``
        (None: only when ``purge_expired`` is called), with the byte budgets of
        ``limits``.

        Returns the open store; raises ``StoreFault`` naming the file (or the server)
        when it is damaged, lost (held more, says ``manifest``), unreachable or cannot
        be opened.
        """
        tx = await open_transactions(
            path, MIGRATIONS, pg_schema.STORE, pg_schema.MIGRATIONS, synchronous, manifest,
            _forget_old,
        )  # fmt: skip
        store = cls(tx, limits)
        if purge_every is not None:
            store._purge_in_background(purge_every)
        return store

    async def close(self) -> None:
        """Stop the background purge, record what the store holds and close the file."""
        try:
            if self._purging is not None:
                self._purging.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._purging
        finally:
            await self._tx.close()

    async def purge_expired(self) -> int:
        """Delete the expired notes and working-memory items now (reads hide them already).

        Returns how many went; raises the store's failure when it is out of service,
        or what writing to the file raised.
        """
        if self._tx.out_of_service is not None:
            raise self._tx.out_of_service
        now = time.time()
        async with self._tx.write() as db:
            gone = list(
                await db.execute_fetchall(
                    f"DELETE FROM notes WHERE expires_at <= ? RETURNING owner,"
                    f" {usage.note_bytes(dialect(db))}",
                    (now,),
                )
            )
            freed: dict[str, int] = {}
            for owner, size in gone:
                freed[str(owner)] = freed.get(str(owner), 0) - int(size)
            await usage.add(db, freed)
            return len(gone) + await working_store.purge(db, now)

    async def space_keys(self) -> set[str]:
        """The keys of the shared spaces this store holds anything of: sessions, rooms'
        notes, or bytes counted (a personal key is a bare JID; a space's is its id, which
        has no ``@``)."""
        rows = await self._tx.read(
            "SELECT owner FROM working_memories WHERE owner NOT LIKE '%@%'"
            " UNION SELECT owner FROM notes WHERE owner NOT LIKE '%@%'"
            f" UNION SELECT subject FROM {usage.TABLE} WHERE subject NOT LIKE '%@%'"
        )
        return {str(row[0]) for row in rows}

    async def purge_space(self, key: str) -> bool:
        """Delete the sessions, the rooms' notes and the byte count of the space ``key`` (a
        deleted one).

        Returns whether there was anything; raises the store's typed failure for a fault
        of its file."""
        async with self._writing() as db:
            sessions = await db.execute_fetchall(
                "DELETE FROM working_memories WHERE owner = ? RETURNING session_id", (key,)
            )
            notes = await db.execute_fetchall(
                "DELETE FROM notes WHERE owner = ? RETURNING seq", (key,)
            )
            counted = await db.execute_fetchall(
                f"DELETE FROM {usage.TABLE} WHERE subject = ? RETURNING subject", (key,)
            )
            return bool(list(sessions) or list(notes) or list(counted))

    async def record_room_notes(
        self, place: Place, room: str, said: Sequence[tuple[RoomNote, bool]]
    ) -> int:
        """Keep what was said in ``room`` (each note with whether the room replayed it) in
        its space ``place``, in one transaction (``room_notes.record``).

        Returns how many were kept (a replayed message kept before is not); raises
        ``ResourceConstraint`` for a full budget, or the store's typed failure for a
        fault of its file."""
        async with self._writing() as db:
            kept = 0
            for note, replayed in said:
                kept += await room_notes.record(db, self.limits, place, room, note, replayed)
            return kept

    async def room_last_said(self, space_key: str, room: str) -> datetime | None:
        """When the newest note of ``room`` kept in the space ``space_key`` was said."""
        return await room_notes.last_said(self._tx, space_key, room)

    async def search_room(
        self, space_key: str, room: str, query: str, limit: int
    ) -> list[RoomNote]:
        """The notes of ``room`` in the space ``space_key`` that best answer ``query``."""
        return await room_notes.search(self._tx, space_key, room, query, limit)

    async def reserve_files(self, place: Place, grown: int) -> None:
        """Count ``grown`` more bytes of files in ``place``'s folder, before they are
        written.

        Raises ``ResourceConstraint`` with the figures (nothing counted) when that would
        cross its byte budget."""
        async with self._writing() as db:
            await usage.reserve_files(db, self.limits, place, grown)

    async def set_files(self, subject: str, size: int) -> None:
        """The folder of ``subject`` (a place's key) holds ``size`` bytes, as measured.

        Raises the store's typed failure for a fault of its file (a full disk)."""
        async with self._writing() as db:
            await usage.set_files(db, subject, size)

    @contextlib.asynccontextmanager
    async def _writing(self) -> AsyncIterator[Database]:
        """A write transaction whose fault of the file (a full disk, damage) is raised as
        the typed failure the store's batches answer with."""
        try:
            async with self._tx.write() as db:
                yield db
        except MemoryServiceError:
            raise
        except Exception as error:
            failure = self._tx.fault(error)
            if failure is None:
                raise
            raise failure from None

    def applies(self, op: Op[Any]) -> bool:
        """Whether this store applies ``op`` (context-directory ops are the service's)."""
        return type(op) in self._handlers or type(op) in self._paged_reads

    async def batch(self, owner: str, requests: Sequence[Request]) -> list[Outcome]:
        """Apply the ops of ``requests`` to ``owner``'s notes and working memories,
        in one transaction; their reads' answers together carry at most
        ``Limits.max_answer_bytes``."""
        budget = AnswerBudget(self.limits.max_answer_bytes)

        async def apply(db: Database, request: Request) -> Record:
            read = self._paged_reads.get(type(request.op))
            if read is not None:
                return await read(db, owner, request.op, budget)
            return await self._handlers[type(request.op)](db, owner, request)

        # one trip to the database's thread, grouped with others' writes
        return await apply_all(self._tx, requests, apply, inline=True)

    async def _add(self, db: Database, owner: str, request: Request) -> Record:
        op = request.op
        assert isinstance(op, AddInformation)
        confirmation = Confirmation(
            text=f"Remembered information about this interaction: {op.information}"
        )
        if not await self._requests.claim(db, owner, request.id, confirmation):
            return confirmation  # applied before; the confirmation is the same
        size = usage.size_of(op.information, op.conversation_id)
        await usage.check(db, self.limits, Place(owner), size)  # raises: the claim is undone
        expires_at = expiry_of(op.ttl_seconds, op.expires_at)
        await db.execute(
            "INSERT INTO notes (owner, conversation_id, content, timestamp, expires_at)"
            " VALUES (?, ?, ?, ?, ?)",
            (owner, op.conversation_id, op.information, _now(), expires_at),
        )
        await usage.add(db, {owner: size})
        return confirmation

    async def _clear(self, db: Database, owner: str, request: Request) -> Record:
        op = request.op
        assert isinstance(op, ClearConversation)
        if earlier := await self._requests.earlier(
            db, owner, request.id, Cleared.model_validate_json
        ):
            return earlier
        ((live,),) = await db.execute_fetchall(
            f"SELECT EXISTS (SELECT 1 FROM notes WHERE owner = ? AND conversation_id = ?"
            f" AND {LIVE})",
            (owner, op.conversation_id, time.time()),
        )
        gone = await db.execute_fetchall(
            f"DELETE FROM notes WHERE owner = ? AND conversation_id = ?"
            f" RETURNING {usage.note_bytes(dialect(db))}",
            (owner, op.conversation_id),
        )
        await usage.add(db, {owner: -sum(int(size) for (size,) in gone)})
        result = Cleared(cleared=bool(live))  # expired notes were as good as gone
        await self._requests.claim(db, owner, request.id, result)
        return result

    async def _read_notes(
        self, db: Database, owner: str, op: Op[Any], budget: AnswerBudget
    ) -> Record:
        assert isinstance(op, GetInformation | GetContextSummary | ExportConversation)
        entries, next_offset = await _entries(db, owner, op.conversation_id, op.offset, budget)
        notes = [entry.content for entry in entries]
        if isinstance(op, GetInformation):
            return Notes(conversation_id=op.conversation_id, notes=notes, next_offset=next_offset)
        if isinstance(op, GetContextSummary):
            return ContextSummary(summary=context_summary(notes), next_offset=next_offset)
        exported = {op.conversation_id: entries} if entries else {}
        return InteractionsFile(agent_id=owner, interactions=exported, next_offset=next_offset)

    async def _conversations(
        self, db: Database, owner: str, op: Op[Any], budget: AnswerBudget
    ) -> Conversations:
        assert isinstance(op, GetAllConversations)
        # each conversation's count and newest note, then that note's time (both engines)
        query = (
            "SELECT n.conversation_id, c.count, n.seq, n.timestamp FROM notes n JOIN"
            " (SELECT COUNT(*) AS count, MAX(seq) AS newest FROM notes"
            f"  WHERE owner = ? AND {LIVE} GROUP BY conversation_id) c ON n.seq = c.newest"
            " ORDER BY n.seq DESC"
        )
        rows, next_offset = await _paged(db, query, (owner, time.time()), op.offset, budget)
        return Conversations(
            conversations=[
                ConversationInfo(conversation_id=cid, notes=int(count), last_note_at=str(stamp))
                for cid, count, _seq, stamp in rows
            ],
            next_offset=next_offset,
        )

    async def _stats(self, db: Database, owner: str, request: Request) -> InteractionStats:
        """The counts of what the place keeps in the store, and its usage (its files are
        counted as the service last measured them; it adds their number)."""
        (place,) = request.places_of(owner)
        notes = conversations = 0
        if place.personal:  # notes are always their owner's
            ((notes, conversations),) = await db.execute_fetchall(
                "SELECT COUNT(*), COUNT(DISTINCT conversation_id) FROM notes"
                f" WHERE owner = ? AND {LIVE}",
                (owner, time.time()),
            )
        ((sessions,),) = await db.execute_fetchall(
            "SELECT COUNT(*) FROM working_memories WHERE owner = ?", (place.key,)
        )
        stored, files = await usage.held(db, place.key)
        return InteractionStats(
            space=place.name, notes=notes, conversations=conversations, sessions=sessions,
            used_bytes=stored + files, file_bytes=files,
            max_bytes=byte_budget(place, self.limits)[1],
        )  # fmt: skip

    async def import_spade_llm(self, path: str | Path, owner: str | None = None) -> tuple[int, int]:
        """Add the notes of a spade_llm ``{agent}_interactions.json`` file that are not
        here yet (same owner, conversation, content and time, not expired): importing a
        file twice adds nothing.

        The owner is the file's ``agent_id`` (as a bare JID) unless given.
        Returns (notes added, notes already here); raises ``OSError`` or pydantic's
        ``ValidationError`` for a file that cannot be read as one.
        """
        data = InteractionsFile.model_validate_json(Path(path).read_bytes())
        owner = bare_jid(owner or data.agent_id)
        rows = [
            (owner, conversation_id, entry.content, entry.timestamp)
            for conversation_id, entries in data.interactions.items()
            for entry in entries
        ]
        added = size = 0
        async with self._tx.write() as db:
            for row in rows:
                cursor = await db.execute(
                    "INSERT INTO notes (owner, conversation_id, content, timestamp)"
                    " SELECT ?, ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM notes WHERE owner = ?"
                    f" AND conversation_id = ? AND content = ? AND timestamp = ? AND {LIVE})",
                    (*row, *row, time.time()),
                )
                added += cursor.rowcount
                size += cursor.rowcount * usage.size_of(row[2], row[1])
            await usage.add(db, {owner: size})  # counted, never refused: the operator imports
        return added, len(rows) - added


async def _forget(db: Database, owner: str, request: Request) -> InteractionsForgotten:
    """Count, and unless a dry run delete, ``owner``'s notes, personal sessions and the
    answers the ledger keeps for it (files are counted as 0: the service adds them;
    expired notes are deleted, not counted)."""
    op = request.op
    assert isinstance(op, ForgetInteractions)
    ((notes, conversations),) = await db.execute_fetchall(
        f"SELECT COUNT(*), COUNT(DISTINCT conversation_id) FROM notes WHERE owner = ? AND {LIVE}",
        (owner, time.time()),
    )
    ((sessions,),) = await db.execute_fetchall(
        "SELECT COUNT(*) FROM working_memories WHERE owner = ?", (owner,)
    )
    if not op.dry_run:
        await db.execute("DELETE FROM notes WHERE owner = ?", (owner,))
        await db.execute("DELETE FROM working_memories WHERE owner = ?", (owner,))
        await usage.forget(db, owner)  # the service deletes its files next
    replies = await requests.forget_owner(db, owner, pg_schema.REQUESTS, dry_run=op.dry_run)
    return InteractionsForgotten(
        notes=notes, conversations=conversations, sessions=sessions, files=0, replies=replies,
        dry_run=op.dry_run,
    )  # fmt: skip


def bare_jid(jid: str) -> str:
    """``name@domain`` of a full or bare JID, case-folded as XMPP compares them."""
    return jid.split("/", 1)[0].lower()


async def _entries(
    db: Database, owner: str, conversation_id: str, offset: int, budget: AnswerBudget
) -> tuple[list[NoteEntry], int | None]:
    """The conversation's notes not expired, oldest first, from ``offset`` on as far as
    ``budget`` goes, and the next page's offset (None: none left)."""
    query = (
        "SELECT content, timestamp FROM notes WHERE owner = ? AND conversation_id = ?"
        f" AND {LIVE} ORDER BY seq"
    )
    rows, next_offset = await _paged(
        db, query, (owner, conversation_id, time.time()), offset, budget
    )
    return [NoteEntry(content=content, timestamp=stamp) for content, stamp in rows], next_offset


async def _paged(
    db: Database, query: str, values: tuple[Any, ...], offset: int, budget: AnswerBudget
) -> tuple[list[tuple[Any, ...]], int | None]:
    """The rows of ``query`` from ``offset`` on, read a chunk at a time while their texts
    fit ``budget`` (which they spend), and the next page's offset (None: the last page).

    Raises ``ResourceConstraint`` when not even the first row fits."""
    kept: list[tuple[Any, ...]] = []
    while True:
        count = min(CHUNK_ROWS, budget.rows_that_could_fit(FIELDS_BYTES))
        chunk = list(
            await db.execute_fetchall(
                f"{query} LIMIT ? OFFSET ?", (*values, count, offset + len(kept))
            )
        )
        for row in chunk:
            texts = [str(value) for value in row if isinstance(value, str)]
            if not budget.spend(usage.size_of(*texts) + FIELDS_BYTES):
                if not kept:
                    raise over_budget()
                return kept, offset + len(kept)
            kept.append(tuple(row))
        if len(chunk) < count:
            return kept, None


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()
