"""Faults a deployment meets: damaged or lost stores, an unusable data directory, a full
disk, a stall, a forged sender on the default server.

`spade-memory run` is started as a user starts it, in its own process; a
fault at start must end it with a non-zero status and one line naming the
file (the subprocess timeout only guards against a hang, it measures nothing).
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
import shutil
import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from spade_memory import MemoryTimeout, Request, ResourceConstraint, ServiceUnavailable, StoreMemory
from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.beads.errors import BeadsFileError
from spade_memory.beads.issue import NewIssue
from spade_memory.beads.native import NativeEngine
from spade_memory.interaction.store import InteractionStore
from spade_memory.protocol.memories import GetMemory, MemoryStatsOp, SearchMemories
from spade_memory.protocol.notes import AddInformation, GetInformation
from spade_memory.storage.faults import DamagedStore
from spade_memory.storage.manifest import Manifest
from spade_memory.testing import MemoryServiceProcess
from spade_memory.xmpp.lifecycle import stop_agent
from tests.support.command_line import in_process as spade_memory
from tests.support.command_line import one_line_naming, run_once
from tests.support.harness import send_raw, start_client, unique_jid

ALICE = "alice@localhost"
STORES = ("base-memory.db", "interaction-memory.db")


async def _fill(data_dir: Path) -> None:
    """A data directory as the service leaves it: both stores with data, and the manifest."""
    manifest = Manifest(data_dir)
    memories = await LongTermStore.open(data_dir / STORES[0], manifest=manifest)
    for n in range(200):
        await memories.apply(ALICE, StoreMemory(category="fact", content=f"memory {n} " * 30))
    await memories.close()
    notes = await InteractionStore.open(data_dir / STORES[1], manifest=manifest)
    for n in range(200):
        await notes.apply(ALICE, AddInformation(conversation_id="c", information=f"note {n} " * 30))
    await notes.close()


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data_dir = tmp_path_factory.mktemp("filled")
    asyncio.run(_fill(data_dir))
    return data_dir


def _overwrite_pages(path: Path) -> None:
    with path.open("r+b") as file:
        for page in (1, 2, 3):
            file.seek(page * 4096)
            file.write(os.urandom(4096))


def _remove(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


DAMAGES: dict[str, Callable[[Path], None]] = {
    "garbage": lambda path: path.write_bytes(os.urandom(64 * 1024)),
    "truncated to half": lambda path: os.truncate(path, path.stat().st_size // 2),
    "truncated to zero": lambda path: os.truncate(path, 0),
    "pages overwritten": _overwrite_pages,
    "missing": _remove,
}


@pytest.mark.parametrize("damage", list(DAMAGES))
@pytest.mark.parametrize("store", STORES)
def test_a_damaged_or_lost_store_stops_run_with_one_line(
    filled: Path, tmp_path: Path, store: str, damage: str
) -> None:
    data_dir = tmp_path / "data"
    shutil.copytree(filled, data_dir)
    DAMAGES[damage](data_dir / store)
    line = one_line_naming(run_once(data_dir), str(data_dir / store))
    assert "restore it from a backup" in line


def test_an_unusable_data_directory_is_one_line(tmp_path: Path) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("not a directory")
    line = one_line_naming(run_once(a_file / "data"), str(a_file / "data"))
    assert f"{a_file} is a file; give --data-dir a directory" in line


BEADS_LINE = (
    '{"id":"mem-1","title":"kept","status":"open","priority":2,"issue_type":"task",'
    '"created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z"}'
)


def test_a_torn_beads_file_is_repaired_and_reported_at_start(tmp_path: Path) -> None:
    issues = tmp_path / "data" / "beads" / ".beads" / "issues.jsonl"
    issues.parent.mkdir(parents=True)
    issues.write_text(BEADS_LINE + "\n" + '{"id":"mem-2","title":"cut sh')
    service = MemoryServiceProcess(tmp_path / "data", "--services", "beads-sync")
    service.start()  # no request is sent: the file is read when the service opens
    try:
        assert issues.read_text() == BEADS_LINE + "\n"
        (aside,) = issues.parent.glob("issues.jsonl.torn-*")
        assert aside.read_text() == '{"id":"mem-2","title":"cut sh\n'
        assert any("its last line was torn" in line for line in service.output)
    finally:
        service.stop()


def test_an_unreadable_beads_file_stops_run_with_one_line(tmp_path: Path) -> None:
    issues = tmp_path / "data" / "beads" / ".beads" / "issues.jsonl"
    issues.parent.mkdir(parents=True)
    issues.write_bytes(BEADS_LINE.encode() + b"\n\xff\xfe not UTF-8\n")
    line = one_line_naming(run_once(tmp_path / "data"), str(issues))
    assert "restore it from git or a backup" in line


@pytest.fixture
def read_only_dir(tmp_path: Path) -> Iterator[Path]:
    """A read-only file system (a bind mount): root may write anywhere else."""
    folder = tmp_path / "ro"
    folder.mkdir()
    mounted = subprocess.run(["mount", "--bind", str(folder), str(folder)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount here: {mounted.stderr.decode().strip()}")
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(folder)], check=True)
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def test_a_read_only_data_directory_is_one_line(read_only_dir: Path) -> None:
    line = one_line_naming(run_once(read_only_dir), str(read_only_dir))
    assert "Read-only file system" in line


async def test_with_allow_damaged_the_other_services_serve(filled: Path, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    shutil.copytree(filled, data_dir)
    DAMAGES["garbage"](data_dir / STORES[0])
    service = MemoryServiceProcess(data_dir, "--allow-damaged")
    service.start()
    try:
        client = await start_client(unique_jid("client"), service.port)
        try:
            with pytest.raises(ServiceUnavailable, match=r"base-memory\.db"):
                await client.memory.store_memory("fact", "goes nowhere")
            assert await client.memory.add_information("c", "still noted")
            assert await client.memory.get_information("c") == ["still noted"]
        finally:
            await stop_agent(client)
    finally:
        service.stop()
    assert service.process is None  # stopped by SIGINT, not killed
    assert (data_dir / STORES[0]).read_bytes()[:16] != b"SQLite format 3\x00"  # left as it was


async def test_a_full_disk_is_named_reads_go_on_and_writes_resume(tmp_path: Path) -> None:
    """SQLite's own size limit gives the store the real SQLITE_FULL a full disk gives."""
    store = await LongTermStore.open(tmp_path / "memory.db")
    try:
        db = store._tx.db
        (pages,) = await db.execute_fetchall("PRAGMA page_count")
        await db.execute(f"PRAGMA max_page_count = {pages[0] + 2}")
        kept, refused = [], 0
        for n in range(200):
            content = f"memory {n} " + "x" * 3000
            try:
                kept.append(
                    (await store.apply(ALICE, StoreMemory(category="fact", content=content))).id
                )
            except ResourceConstraint as full:
                assert "disk full" in full.text
                refused += 1
        assert refused > 0 and kept
        stats = await store.apply(ALICE, MemoryStatsOp())  # reads go on
        assert stats.total_memories == len(kept)
        assert stats.free_disk_bytes is not None and stats.free_disk_bytes > 0
        assert (await store.apply(ALICE, SearchMemories(query="memory", limit=1000))).memories
        await db.execute("PRAGMA max_page_count = 1073741823")  # space is back
        await store.apply(ALICE, StoreMemory(category="fact", content="after the disk was freed"))
        assert (await store.apply(ALICE, MemoryStatsOp())).total_memories == len(kept) + 1
    finally:
        await store.close()


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real file system of 24 MiB (tmpfs) that the service's writes can fill."""
    folder = tmp_path / "small"
    folder.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", str(folder)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount here: {mounted.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True)


async def test_a_full_file_system_over_the_wire_then_sigint(small_disk: Path) -> None:
    """The whole service on a disk that fills up: writes are refused by name, reads go on,
    writes resume once space is freed, every acknowledged write is kept, and SIGINT
    still stops the service cleanly."""
    data_dir = small_disk / "data"
    service = MemoryServiceProcess(data_dir, "--services", "base-memory,interaction-memory")
    service.start()
    client = await start_client(unique_jid("filler"), service.port)
    filler = small_disk / "filler"
    try:
        free = shutil.disk_usage(small_disk).free
        filler.write_bytes(b"\0" * (free - 2 * 1024 * 1024))  # leave two MiB
        kept: list[str] = []
        full: list[ResourceConstraint] = []
        for n in range(2_000):
            try:
                content = f"stored number {n} " + "z" * 2000
                kept.append(str(await client.memory.store_memory("fact", content)))
            except ResourceConstraint as error:
                full.append(error)
                if len(full) == 3:
                    break
        assert full and all("disk full" in error.text for error in full), full
        with pytest.raises(ResourceConstraint, match="disk full"):
            await client.memory.add_information("c", "a note " + "n" * 4000)
        assert (await client.memory.get_memory(kept[0])) is not None  # reads go on
        found = await client.memory.search_memories("stored number", limit=1000)
        assert len(kept) > 10 and len(found) == len(kept)
        filler.unlink()  # space is back
        kept.append(str(await client.memory.store_memory("fact", "after the disk was freed")))
        assert await client.memory.add_information("c", "noted after the disk was freed")
    finally:
        await stop_agent(client)
        assert service.process is not None
        service.process.send_signal(signal.SIGINT)
        status = service.process.wait(timeout=120)
        service.stop()
    assert status == 0
    store = await LongTermStore.open(data_dir / STORES[0], manifest=Manifest(data_dir))
    try:
        owner = str(client.jid.bare)
        for memory_id in kept:
            assert (await store.apply(owner, GetMemory(id=memory_id))).id == memory_id
    finally:
        await store.close()


def _fill_up(path: Path) -> None:
    """Write ``path`` until the file system has no byte left (ENOSPC)."""
    handle = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(handle, b"\0" * 65536)
    except OSError as error:
        assert error.errno == errno.ENOSPC, error
    finally:
        os.close(handle)


async def test_grants_knowledge_and_beads_on_a_full_disk_say_disk_full(small_disk: Path) -> None:
    """Writes outside the two stores - the directory of spaces (``grant``), the context
    directory (``save_knowledge``), the beads file (``store_memory`` at the beads sync
    agent) - answer ``resource-constraint`` naming what cannot grow, with no traceback
    in the log; they work again once space is freed, and a refused beads memory does not
    reach the file with a later write."""
    data_dir = small_disk / "data"
    service = MemoryServiceProcess(data_dir)
    service.start()
    client = await start_client(unique_jid("filler"), service.port)
    memory = client.memory
    filler = small_disk / "filler"
    try:
        await memory.create_space("crowded")
        await memory.save_knowledge("before", "written before the disk filled")
        await memory.beads.store_memory("stored before the disk filled")
        _fill_up(filler)
        refused: ResourceConstraint | None = None
        for n in range(2_000):  # a write that needs no new page may still fit
            try:
                await memory.grant("crowded", f"member-{n}@localhost", "reader")
            except ResourceConstraint as error:
                refused = error
                break
        assert refused is not None and "disk full: spaces.db cannot grow" in refused.text
        # the file, or the count of its bytes in the store that comes before it
        with pytest.raises(
            ResourceConstraint, match=r"disk full: (context|interaction-memory\.db) cannot grow"
        ):
            await memory.save_knowledge("runbook", "a runbook " * 1500)
        with pytest.raises(ResourceConstraint, match=r"disk full: issues\.jsonl cannot grow"):
            await memory.beads.store_memory("refused on a full disk " * 300)
        assert [info.name for info in await memory.list_spaces()] == ["crowded"]  # reads go on
        filler.unlink()  # space is back
        await memory.grant("crowded", "after@localhost", "reader")
        assert await memory.save_knowledge("runbook", "written after the disk was freed")
        assert await memory.beads.store_memory("stored after the disk was freed")
    finally:
        await stop_agent(client)
        service.stop()
    issues = (data_dir / "beads" / ".beads" / "issues.jsonl").read_text()
    assert "stored after the disk was freed" in issues
    assert "refused on a full disk" not in issues
    assert "Traceback" not in "".join(service.output), "".join(service.output)


async def test_a_failed_beads_write_fails_every_batch_whose_changes_it_dropped(
    small_disk: Path,
) -> None:
    """Two tasks change the beads file at once (a batch under way, as the mirror's, and
    an agent's write): when the write carrying both changes fails on a full disk, both
    fail, and neither change reaches the file with a later write."""
    engine = NativeEngine(small_disk / ".beads")
    await engine.create(NewIssue(title="written before"))
    changed, go_on = asyncio.Event(), asyncio.Event()

    async def batch() -> None:
        async with engine.batch():
            await engine.create(NewIssue(title="batched before the failure"))
            changed.set()
            await go_on.wait()

    batched = asyncio.create_task(batch())
    await changed.wait()
    filler = small_disk / "filler"
    _fill_up(filler)
    with pytest.raises(BeadsFileError, match="No space left on device"):
        await engine.create(NewIssue(title="alone on a full disk"))
    filler.unlink()  # space is back: the batch's own write at its end succeeds
    go_on.set()
    with pytest.raises(BeadsFileError):
        await batched
    await engine.create(NewIssue(title="written after"))
    text = engine.path.read_text()
    assert "written before" in text and "written after" in text
    assert "batched before the failure" not in text and "alone on a full disk" not in text


async def test_a_batch_that_fills_the_disk_acknowledges_nothing(tmp_path: Path) -> None:
    notes = await InteractionStore.open(tmp_path / "notes.db")
    try:
        db = notes._tx.db
        (pages,) = await db.execute_fetchall("PRAGMA page_count")
        await db.execute(f"PRAGMA max_page_count = {pages[0] + 3}")
        batch = [
            Request(AddInformation(conversation_id="c", information=f"{n} " + "y" * 2000))
            for n in range(50)
        ]
        outcomes = await notes.batch(ALICE, batch)
        assert all(isinstance(outcome, ResourceConstraint) for outcome in outcomes)
        assert (await notes.apply(ALICE, GetInformation(conversation_id="c"))).notes == []
    finally:
        await notes.close()


async def test_a_store_damaged_while_serving_goes_out_of_service(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    store = await LongTermStore.open(path)
    try:
        for n in range(300):
            await store.apply(ALICE, StoreMemory(category="fact", content=f"memory {n} " * 40))
        await store._tx.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        _overwrite_pages(path)
        await store._tx.db.execute("PRAGMA cache_size = 0")  # read from the file again
        with pytest.raises(ServiceUnavailable, match=r"memory\.db is damaged"):
            await store.apply(ALICE, SearchMemories(query="memory", limit=1000))
        with pytest.raises(ServiceUnavailable):  # out of service: no write is acknowledged
            await store.apply(ALICE, StoreMemory(category="fact", content="into a damaged file"))
    finally:
        await store.close()
    with pytest.raises(DamagedStore):
        await LongTermStore.open(path)


async def test_a_stall_of_the_memory_agents_reaches_no_caller_as_resource_constraint(
    tmp_path: Path,
) -> None:
    """SIGSTOP the service for longer than a call's time (GC, a swapped VM, a stuck disk)
    while a client stores every 50 ms, on the service's default limits: calls may time
    out, but the agent's in-flight limit never refuses one (the client counts a timed-out
    request as in flight until its late reply), and every acknowledged store is kept."""
    service = MemoryServiceProcess(tmp_path / "data")
    service.start()
    assert service.process is not None
    pid = service.process.pid
    # a call's time: 2.5 s a send, sent twice (5 s); the stall lasts 6 s
    client = await start_client(unique_jid("steady"), service.port, memory_timeout=2.5)
    acknowledged: list[str] = []
    refused: list[ResourceConstraint] = []

    async def store(n: int) -> None:
        try:
            memory_id = await client.memory.store_memory("fact", f"steady store {n}")
        except ResourceConstraint as error:
            refused.append(error)
        except MemoryTimeout:
            return
        else:
            acknowledged.append(str(memory_id))

    try:
        calls = []
        for n in range(200):
            if n == 20:
                os.kill(pid, signal.SIGSTOP)
            if n == 140:
                os.kill(pid, signal.SIGCONT)
            calls.append(asyncio.create_task(store(n)))
            await asyncio.sleep(0.05)
        await asyncio.gather(*calls)
        assert refused == []
        assert len(acknowledged) >= 20
        for memory_id in acknowledged:
            assert await client.memory.get_memory(memory_id) is not None
    finally:
        os.kill(pid, signal.SIGCONT)
        await stop_agent(client)
        service.stop()


async def test_a_forged_from_changes_nothing_on_the_default_server(
    memory_service: MemoryServiceProcess,
) -> None:
    """The embedded server stamps ``from`` with the authenticated JID (RFC 6120 §8.1.2.1):
    mallory claiming to be alice acts as mallory."""
    alice = await start_client(unique_jid("alice"), memory_service.port)
    mallory = await start_client(unique_jid("mallory"), memory_service.port)
    try:
        secret = await alice.memory.store_memory("fact", "alice's secret plan")
        as_alice = str(alice.client.boundjid.full)
        to = alice.memory.base_memory_jid
        for body in (
            json.dumps({"op": "delete_memory", "id": secret}),
            json.dumps({"op": "get_memory", "id": secret}),
            json.dumps({"op": "store_memory", "category": "fact", "content": "planted"}),
        ):
            reply = await send_raw(mallory.memory, to, body, sender=as_alice)
            assert "alice's secret plan" not in (reply.body or "")
        assert (await alice.memory.get_memory(str(secret))).content == "alice's secret plan"
        assert [m.content for m in await alice.memory.get_recent_memories()] == [
            "alice's secret plan"
        ]
        assert [m.content for m in await mallory.memory.get_recent_memories()] == ["planted"]
    finally:
        await stop_agent(alice)
        await stop_agent(mallory)


async def test_a_backup_under_write_load_restores_every_acknowledged_memory(
    tmp_path: Path,
) -> None:
    data_dir, copy, restored = tmp_path / "data", tmp_path / "backup", tmp_path / "restored"
    service = MemoryServiceProcess(data_dir)
    service.start()
    client = await start_client(unique_jid("writer"), service.port)
    acknowledged: list[str] = []
    writing = True

    async def write() -> None:
        n = 0
        while writing:
            n += 1
            acknowledged.append(str(await client.memory.store_memory("fact", f"kept {n}")))

    writer = asyncio.create_task(write())
    try:
        while len(acknowledged) < 50:
            await asyncio.sleep(0.05)
        before = list(acknowledged)  # acknowledged before the backup began
        taken = await asyncio.to_thread(
            spade_memory, "backup", str(copy), "--data-dir", str(data_dir)
        )
        assert taken.returncode == 0, taken.stderr
        refused = await asyncio.to_thread(
            spade_memory, "restore", str(copy), "--data-dir", str(data_dir)
        )
        assert refused.returncode == 1 and "in use" in refused.stderr  # the service runs there
        second = await asyncio.to_thread(run_once, data_dir)
        one_line_naming(second, str(data_dir))  # one service per data directory
    finally:
        writing = False
        await writer
        owner = str(client.jid.bare)
        await stop_agent(client)
        service.stop()
    assert len(acknowledged) > len(before)  # writes went on during the backup
    checked = spade_memory("check", str(copy))
    assert checked.returncode == 0, checked.stderr
    put_back = spade_memory("restore", str(copy), "--data-dir", str(restored))
    assert put_back.returncode == 0, put_back.stderr
    assert spade_memory("check", str(restored)).returncode == 0
    store = await LongTermStore.open(restored / STORES[0], manifest=Manifest(restored))
    try:
        for memory_id in before:
            assert (await store.apply(owner, GetMemory(id=memory_id))).id == memory_id
    finally:
        await store.close()


def test_check_finds_a_damaged_store_and_a_changed_backup(filled: Path, tmp_path: Path) -> None:
    copy = tmp_path / "backup"
    assert spade_memory("backup", str(copy), "--data-dir", str(filled)).returncode == 0
    assert spade_memory("check", str(copy)).returncode == 0
    _overwrite_pages(copy / STORES[1])
    found = spade_memory("check", str(copy))
    assert found.returncode == 1
    assert STORES[1] in found.stderr and "differs from what backup.json recorded" in found.stderr
    refused = spade_memory("restore", str(copy), "--data-dir", str(tmp_path / "restored"))
    assert refused.returncode == 1 and "fails its check" in refused.stderr
