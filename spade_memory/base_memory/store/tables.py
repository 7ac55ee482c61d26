"""Schema of the long-term store, and the one-time import of spade_llm's table.

Our table has an ``INTEGER PRIMARY KEY`` (``seq``) so the external-content
FTS5 index can point at stable rowids (``VACUUM`` may renumber the implicit
rowids of spade_llm's ``agent_memories``, which would silently break an index
built on them). When the file already holds spade_llm's ``agent_memories``,
its rows are copied once, with ids, counts and timestamps kept; the original
table is left untouched so spade_llm can still open the file.
"""

from __future__ import annotations

from hashlib import blake2b

from spade_memory.base_memory.facts.frames import subject_key_of
from spade_memory.base_memory.graph import links as graph_links
from spade_memory.base_memory.store import history, journal, sizes, words
from spade_memory.base_memory.store.spade_llm_rows import from_spade_llm
from spade_memory.storage import requests
from spade_memory.storage.connection import Database, Migration

WORD_SCORE = "bm25(memories_fts, 1.0, 0.5)"
"""A memory's word score (lower is better), content weighing twice its context: the
``rank`` the file is configured with, named in full. Ordering by it rather than by
``rank`` returns the same memories in the same order and, on its own, sooner (FTS5 sorts
``rank`` through a second statement); joined with ``memories``, ``rank`` is the faster
one."""

_V1 = (
    """CREATE TABLE memories (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        owner TEXT NOT NULL,
        category TEXT NOT NULL,
        content TEXT NOT NULL,
        context TEXT,
        confidence REAL NOT NULL DEFAULT 1.0,
        created_at REAL NOT NULL,
        last_accessed REAL NOT NULL,
        access_count INTEGER NOT NULL DEFAULT 0
    )""",
    "CREATE INDEX memories_owner_recent ON memories(owner, last_accessed DESC)",
    "CREATE INDEX memories_owner_category ON memories(owner, category, last_accessed DESC)",
    """CREATE VIRTUAL TABLE memories_fts USING fts5(
        content, context,
        content='memories', content_rowid='seq',
        tokenize='porter unicode61 remove_diacritics 2'
    )""",
    # rank = bm25 with content weighing twice context (see WORD_SCORE)
    "INSERT INTO memories_fts(memories_fts, rank) VALUES ('rank', 'bm25(1.0, 0.5)')",
    """CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
        INSERT INTO memories_fts(rowid, content, context)
        VALUES (new.seq, new.content, new.context);
    END""",
    """CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
        INSERT INTO memories_fts(memories_fts, rowid, content, context)
        VALUES ('delete', old.seq, old.content, old.context);
    END""",
    """CREATE TRIGGER memories_au AFTER UPDATE OF content, context ON memories BEGIN
        INSERT INTO memories_fts(memories_fts, rowid, content, context)
        VALUES ('delete', old.seq, old.content, old.context);
        INSERT INTO memories_fts(rowid, content, context)
        VALUES (new.seq, new.content, new.context);
    END""",
    *requests.CREATE_TABLE,
)


async def _create_v1(db: Database) -> None:
    for statement in _V1:
        await db.execute(statement)
    await import_spade_llm_rows(db)


async def import_spade_llm_rows(db: Database) -> int:
    """Copy every row of spade_llm's ``agent_memories`` table, if there is one."""
    if not await db.execute_fetchall(
        "SELECT 1 FROM sqlite_master WHERE type='table' AND name='agent_memories'"
    ):
        return 0
    rows = list(
        await db.execute_fetchall(
            "SELECT id, agent_id, category, content, context, confidence,"
            " created_at, last_accessed, access_count FROM agent_memories"
        )
    )
    await db.executemany(
        "INSERT OR IGNORE INTO memories (id, owner, category, content, context,"
        " confidence, created_at, last_accessed, access_count)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [from_spade_llm(tuple(row)) for row in rows],
    )
    return len(rows)


_V2 = (
    # AUTOINCREMENT: a change number is never reused, even after the mirror's
    # confirmation lets older changes be forgotten.
    """CREATE TABLE changes (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        kind TEXT NOT NULL,
        memory_id TEXT NOT NULL,
        owner TEXT NOT NULL
    )""",
    # memories stored before the feed existed reach the mirror too
    "INSERT INTO changes (kind, memory_id, owner) SELECT 'stored', id, owner FROM memories"
    " ORDER BY seq",
)


async def _add_change_feed(db: Database) -> None:
    for statement in _V2:
        await db.execute(statement)


def folded(content: str) -> str:
    """What makes two contents "the same" for de-duplication: whitespace and case folded."""
    return " ".join(content.split()).casefold()


def content_key(content: str) -> str:
    """The key ``memories_same`` finds the same content by: 16 hex digits of the BLAKE2b
    hash of its folded text. The whole folded text made the index hold a third copy of
    every memory's text, which slowed every insert; two texts may share a key, so a
    match is confirmed on the text."""
    return text_key(folded(content))


def text_key(text: str) -> str:
    """``content_key`` of a text already ``folded``."""
    return blake2b(text.encode(), digest_size=8).hexdigest()


async def hash_content_keys(db: Database) -> None:
    """Every memory's ``content_key`` as ``content_key`` now makes it, 10,000 rows at a
    time (on either engine: the keys were once the folded texts)."""
    after = -1
    while rows := list(
        await db.execute_fetchall(
            "SELECT seq, content FROM memories WHERE seq > ? ORDER BY seq LIMIT 10000", (after,)
        )
    ):
        await db.executemany(
            "UPDATE memories SET content_key = ? WHERE seq = ?",
            [(content_key(str(content)), seq) for seq, content in rows],
        )
        after = rows[-1][0]


async def _add_vectors_and_content_keys(db: Database) -> None:
    await db.execute(
        """CREATE TABLE embeddings (
            seq INTEGER PRIMARY KEY REFERENCES memories(seq) ON DELETE CASCADE,
            model TEXT NOT NULL,
            vector BLOB NOT NULL
        )"""
    )
    await db.execute("ALTER TABLE memories ADD COLUMN content_key TEXT")
    rows = await db.execute_fetchall("SELECT seq, content FROM memories")
    await db.executemany(
        "UPDATE memories SET content_key = ? WHERE seq = ?",
        [(content_key(str(content)), seq) for seq, content in rows],
    )
    await db.execute("CREATE INDEX memories_same ON memories(owner, category, content_key)")


_SPACES = (
    # a memory's space: its author's bare JID for a personal memory, a space's id otherwise;
    # owner stays the author (the authenticated JID that stored it)
    "ALTER TABLE memories ADD COLUMN space TEXT",
    "UPDATE memories SET space = owner",
    "DROP INDEX memories_owner_recent",
    "DROP INDEX memories_owner_category",
    "DROP INDEX memories_same",
    "CREATE INDEX memories_space_recent ON memories(space, last_accessed DESC)",
    "CREATE INDEX memories_space_category ON memories(space, category, last_accessed DESC)",
    "CREATE INDEX memories_same ON memories(space, category, content_key)",
    *journal.CREATE,
)


async def _add_spaces(db: Database) -> None:
    for statement in _SPACES:
        await db.execute(statement)


async def _index_words_per_batch(db: Database) -> None:
    await db.execute(words.DROP_INSERT_TRIGGER)


_DESCRIBED = (
    # tags: a JSON array, metadata: a JSON object (NULL: none); work_items: the work-item
    # ids found in source, as a JSON array; expires_at: epoch seconds (NULL: never)
    "ALTER TABLE memories ADD COLUMN tags TEXT",
    "ALTER TABLE memories ADD COLUMN metadata TEXT",
    "ALTER TABLE memories ADD COLUMN source TEXT",
    "ALTER TABLE memories ADD COLUMN work_items TEXT",
    "ALTER TABLE memories ADD COLUMN expires_at REAL",
    # the current version, who made it and when (NULL: the author, at created_at)
    "ALTER TABLE memories ADD COLUMN version INTEGER NOT NULL DEFAULT 1",
    "ALTER TABLE memories ADD COLUMN changed_by TEXT",
    "ALTER TABLE memories ADD COLUMN changed_at REAL",
    "CREATE INDEX memories_expiring ON memories(expires_at) WHERE expires_at IS NOT NULL",
    "ALTER TABLE changes ADD COLUMN reason TEXT",
    *history.CREATE,
    """CREATE TABLE memory_links (
        work_id TEXT NOT NULL,
        memory_id TEXT NOT NULL,
        PRIMARY KEY (work_id, memory_id)
    ) WITHOUT ROWID""",
    "CREATE INDEX memory_links_memory ON memory_links(memory_id)",
)


async def _describe_memories(db: Database) -> None:
    for statement in _DESCRIBED:
        await db.execute(statement)


VALIDITY = (
    # when it is true in the world (NULL: since ever, until replaced), when the store
    # learned it stopped being true (retired_at) and why (superseded, merged, ended), what
    # it replaced and what replaced it;
    # subject_key: the subject its frame states (``facts.frames``), where a store looks
    # for the memory it may replace
    ("valid_from", "{real}"),
    ("valid_to", "{real}"),
    ("retired_at", "{real}"),
    ("supersedes", "TEXT"),
    ("superseded_by", "TEXT"),
    ("retired_reason", "TEXT"),
    ("subject_key", "TEXT"),
)
"""The columns of facts that change, on either engine (``real``: its float type)."""
SUBJECTS_INDEX = (
    "CREATE INDEX IF NOT EXISTS memories_subjects ON memories(space, subject_key)"
    " WHERE subject_key IS NOT NULL"
)
SUCCESSORS_INDEX = (
    "CREATE INDEX IF NOT EXISTS memories_successors ON memories(superseded_by)"
    " WHERE superseded_by IS NOT NULL"
)
"""What a memory replaced or had merged into it, found without reading every row."""
DATED = "valid_from IS NOT NULL OR valid_to IS NOT NULL"
"""A memory with a validity (a superseded one has its ``valid_to``): reads check
validity once the store holds one (``StoreContext.dated``)."""
DATED_INDEX = f"CREATE INDEX IF NOT EXISTS memories_dated ON memories(valid_to) WHERE {DATED}"
"""So that telling at open whether any memory is dated reads an index, not every row."""


async def add_validity(db: Database) -> None:
    there = {str(row[1]) for row in await db.execute_fetchall("PRAGMA table_info(memories)")}
    for column, kind in VALIDITY:
        if column not in there:  # a store moved back a version keeps its columns
            await db.execute(f"ALTER TABLE memories ADD COLUMN {column} {kind.format(real='REAL')}")
    await db.execute(SUBJECTS_INDEX)
    await db.execute(DATED_INDEX)
    await db.execute(SUCCESSORS_INDEX)
    await key_subjects(db)


async def key_subjects(db: Database) -> None:
    """Every memory's ``subject_key`` as ``facts.frames`` makes it, 10,000 rows at a
    time (on either engine: memories stored before it existed)."""
    after = -1
    while rows := list(
        await db.execute_fetchall(
            "SELECT seq, content FROM memories WHERE seq > ? ORDER BY seq LIMIT 10000", (after,)
        )
    ):
        keyed = [(key, seq) for seq, content in rows if (key := subject_key_of(str(content)))]
        if keyed:
            await db.executemany("UPDATE memories SET subject_key = ? WHERE seq = ?", keyed)
        after = rows[-1][0]


MIGRATIONS: list[Migration] = [
    _create_v1, _add_change_feed, _add_vectors_and_content_keys, _add_spaces,
    _index_words_per_batch, _describe_memories, hash_content_keys, sizes.recount_usage,
    add_validity, graph_links.create, graph_links.create_gaps, graph_links.numbered,
    graph_links.versioned,
]  # fmt: skip
