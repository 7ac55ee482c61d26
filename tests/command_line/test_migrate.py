"""``spade-memory migrate --from DATA_DIR --to postgresql://…``, run as a user runs it.

A data directory written by the SQLite store (memories with vectors, updates, a
deletion, accesses, a space with members) moves into PostgreSQL with every id, number,
count and vector; the store opened on the database goes on from there. A database that
already holds memories, a service still running on the directory, or a URL that is
not one is refused with one line and changes nothing.
"""

from __future__ import annotations

import hashlib
import random
import sqlite3
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spade_memory.base_memory.retrieval.embeddings import Embedder
from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.interaction.store import InteractionStore
from spade_memory.protocol.memories import (
    DeleteMemory,
    MemoriesAbout,
    MemoryList,
    SearchMemories,
    Stored,
    StoreMemory,
    UpdateMemory,
)
from spade_memory.protocol.notes import AddInformation, Confirmation, GetInformation, Notes
from spade_memory.protocol.ops import Request
from spade_memory.protocol.working import AddFinding, GetWorkingMemory, WorkingMemoryState
from spade_memory.protocol.working_memory import Finding
from spade_memory.server.backup import lock
from spade_memory.spaces.directory import SpaceDirectory
from spade_memory.testing import PostgresServer
from tests.support.stores import query

ALICE, BOB = "alice@localhost", "bob@localhost"
MEMORY_COLUMNS = (
    "id, owner, category, content, context, confidence, created_at, last_accessed,"
    " access_count, tags, metadata, version, changed_by"
)


def migrate(data_dir: Path, url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "spade_memory", "migrate", "--from", str(data_dir), "--to", url],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip


async def test_a_data_directory_moves_whole_and_the_store_goes_on(
    tmp_path: Path, postgres_server: PostgresServer, embedder: Embedder
) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    store = await LongTermStore.open(data_dir / "base-memory.db", embedder=embedder)
    contents = [
        "The staging database moved to eu-west",
        "Carol prefers green tea over coffee",
        "Our puppy is called Biscuit",
        "Deploys happen on Tuesdays",
    ]
    ids = []
    for content in contents:
        stored = await store.apply(ALICE, StoreMemory(category="fact", content=content, tags=["t"]))
        assert isinstance(stored, Stored)
        ids.append(stored.id)
    await store.apply(ALICE, UpdateMemory(id=ids[1], content="Carol prefers jasmine tea"))
    await store.apply(ALICE, DeleteMemory(id=ids[3]))
    await store.apply(ALICE, SearchMemories(query="staging database"))  # counts an access
    await store.close()
    directory = await SpaceDirectory.open(data_dir / "spaces.db")
    space = await directory.create("team", ALICE, "the team's")
    await directory.grant(space, "bob@localhost", "writer", ALICE)
    await directory.close()
    sqlite_file = data_dir / "base-memory.db"
    before = await query(sqlite_file, f"SELECT {MEMORY_COLUMNS} FROM memories ORDER BY id")
    vectors = await query(
        sqlite_file,
        "SELECT m.id, e.model, e.vector FROM embeddings e JOIN memories m ON m.seq = e.seq"
        " ORDER BY m.id",
    )
    feed = await query(sqlite_file, "SELECT seq, kind, memory_id FROM changes ORDER BY seq")
    assert len(before) == 3 and len(vectors) == 3 and len(feed) == 6

    url = postgres_server.database("migrated")
    done = migrate(data_dir, url)
    assert done.returncode == 0, done.stderr
    assert "3 memories, 0 notes moved" in done.stdout
    # off a terminal, the progress is one line as it starts (a spinner on a terminal)
    assert done.stderr.splitlines()[0].startswith(f"migrating {data_dir} to "), done.stderr
    assert await query(url, f"SELECT {MEMORY_COLUMNS} FROM memories ORDER BY id") == before
    moved = await query(
        url,
        "SELECT m.id, e.model, e.vector FROM embeddings e JOIN memories m ON m.seq = e.seq"
        " ORDER BY m.id",
    )
    assert moved == vectors
    assert await query(url, "SELECT seq, kind, memory_id FROM changes ORDER BY seq") == feed
    assert await query(url, "SELECT memories, bytes FROM usage") == await query(
        sqlite_file, "SELECT memories, bytes FROM usage"
    )
    assert sqlite_file.exists()  # the SQLite files are left as they were

    store = await LongTermStore.open(url, embedder=embedder)
    try:
        found = await store.apply(ALICE, SearchMemories(query="what is our dog's name"))
        assert isinstance(found, MemoryList) and found.memories[0].id == ids[2]  # by meaning
        new = await store.apply(ALICE, StoreMemory(category="fact", content="after the move"))
        assert isinstance(new, Stored) and new.id not in ids
        (last,) = await query(url, "SELECT max(seq) FROM changes")
        assert last == (feed[-1][0] + 1,)  # the feed goes on; no number given twice
        biscuit = await store.apply(ALICE, MemoriesAbout(entity="Biscuit"))  # links moved
        assert isinstance(biscuit, MemoryList) and [m.id for m in biscuit.memories] == [ids[2]]
        # a space the graph had not numbered yet gets a number no moved space has
        await store.apply(BOB, StoreMemory(category="fact", content="Bob fixed the Kiln"))
        kiln = await store.apply(BOB, MemoriesAbout(entity="kiln"))
        assert isinstance(kiln, MemoryList) and len(kiln.memories) == 1
    finally:
        await store.close()
    directory = await SpaceDirectory.open(url)
    try:
        team = await directory.find("team")
        assert team == space
        assert await directory.role_of(team, "bob@localhost") == "writer"
    finally:
        await directory.close()

    again = migrate(data_dir, url)  # into a database that holds memories now
    assert again.returncode == 1 and "already holds memories" in again.stderr
    assert "Traceback" not in again.stderr
    assert await query(url, "SELECT count(*) FROM memories") == [(5,)]


async def test_notes_working_memories_and_request_ids_move_too(
    tmp_path: Path, postgres_server: PostgresServer
) -> None:
    """The interaction store moves with the rest: an agent on the database reads the
    notes and working memories as they were, numbers notes after the old ones, and
    answers a request id it applied before the move with the old answer (a client
    retrying across the move is not applied twice). A directory with notes and no
    long-term memories moves too."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    store = await InteractionStore.open(data_dir / "interaction-memory.db")
    first = await store.apply(ALICE, AddInformation(conversation_id="c1", information="one"), "r1")
    await store.apply(ALICE, AddInformation(conversation_id="c1", information="two"))
    await store.apply(ALICE, AddInformation(conversation_id="c2", information="elsewhere"))
    bug = Finding(id="f1", type="bug", title="leak in the pool")
    await store.apply(ALICE, AddFinding(session_id="s1", finding=bug), "r2")
    before = await store.apply(ALICE, GetWorkingMemory(session_id="s1"))
    await store.close()
    assert isinstance(first, Confirmation) and isinstance(before, WorkingMemoryState)

    url = postgres_server.database("migrated_notes")
    done = migrate(data_dir, url)
    assert done.returncode == 0, done.stderr
    assert "0 memories, 3 notes moved" in done.stdout
    store = await InteractionStore.open(url)
    try:
        notes = await store.apply(ALICE, GetInformation(conversation_id="c1"))
        assert isinstance(notes, Notes) and notes.notes == ["one", "two"]
        assert await store.apply(ALICE, GetWorkingMemory(session_id="s1")) == before
        again = AddInformation(conversation_id="c1", information="one")
        assert await store.apply(ALICE, again, "r1") == first  # applied before: not again
        assert await store.apply(ALICE, AddFinding(session_id="s1", finding=bug), "r2") == before
        newer = await store.apply(ALICE, AddInformation(conversation_id="c1", information="3"))
        assert isinstance(newer, Confirmation)
    finally:
        await store.close()
    assert await query(url, "SELECT count(*), max(seq) FROM notes") == [(4, 4)]
    assert await query(url, "SELECT count(*) FROM interaction_requests") == [(2,)]
    again = migrate(data_dir, url)
    assert again.returncode == 1 and "already holds conversation notes" in again.stderr


def test_a_running_service_or_a_wrong_url_is_refused(
    tmp_path: Path, postgres_server: PostgresServer
) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    with sqlite3.connect(data_dir / "base-memory.db"):
        pass
    url = postgres_server.database("refused")
    held = lock(data_dir)  # as a running service holds it
    try:
        done = migrate(data_dir, url)
    finally:
        held.close()
    assert done.returncode == 1 and "stop it first" in done.stderr, done.stderr
    for where, said in [(data_dir, "takes a postgresql:// URL"), (tmp_path / "none", "holds no")]:
        target = "memories.db" if where == data_dir else url
        done = migrate(where, target)
        assert done.returncode == 1 and said in done.stderr, done.stderr
    done = migrate(tmp_path / "none", "postgresql://me:s3cret@127.0.0.1:1/x")
    assert done.returncode == 1 and "s3cret" not in done.stderr + done.stdout


@pytest.mark.slow
async def test_a_hundred_thousand_memories_move_with_their_vectors(
    tmp_path: Path, postgres_server: PostgresServer
) -> None:
    """The issue's figure: 100,000 memories, each with a vector, move whole. Rows are
    written through the store in batches, and vectors of the real model's size beside
    them (computing 100,000 real ones would be the test's whole time)."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    store = await LongTermStore.open(data_dir / "base-memory.db")
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()
    rng = random.Random(7)
    for start in range(0, 100_000, 1000):
        requests = [
            Request(StoreMemory(category="fact", content=f"memory {n}: " + " ".join(
                rng.sample(words, 5))))
            for n in range(start, start + 1000)
        ]  # fmt: skip
        outcomes = await store.batch(ALICE, requests)
        assert all(isinstance(outcome, Stored) for outcome in outcomes)
    await store.close()
    sqlite_file = data_dir / "base-memory.db"
    with sqlite3.connect(sqlite_file) as db:
        db.executemany(
            "INSERT INTO embeddings VALUES (?, 'minilm', ?)",
            ((seq, struct.pack("384f", *(rng.random() for _ in range(384))))
             for (seq,) in db.execute("SELECT seq FROM memories").fetchall()),
        )  # fmt: skip
    url = postgres_server.database("hundred_thousand")
    started = time.monotonic()
    done = migrate(data_dir, url)
    seconds = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    assert "100,000 memories, 0 notes moved" in done.stdout
    checks = (
        "SELECT count(*), count(DISTINCT id), sum(access_count) FROM memories",
        "SELECT count(*) FROM changes",
    )
    for sql in checks:
        assert await query(url, sql) == await query(sqlite_file, sql)
    digest = "SELECT md5(string_agg(md5(vector), '' ORDER BY seq)) FROM embeddings"
    (pg_digest,) = await query(url, digest)
    with sqlite3.connect(sqlite_file) as db:
        rows = db.execute("SELECT vector FROM embeddings ORDER BY seq").fetchall()
        local = hashlib.md5("".join(hashlib.md5(r[0]).hexdigest() for r in rows).encode())
    assert pg_digest == (local.hexdigest(),)
    print(f"100,000 memories with vectors migrated in {seconds:.1f} s")
