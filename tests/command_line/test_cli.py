"""The `spade-memory` command as a user runs it: in a process of its own, and its import
commands through its entry point in this process."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from spade_memory.interaction.store import InteractionStore
from spade_memory.protocol.notes import ExportConversation
from spade_memory.testing import MemoryServiceProcess, free_port
from tests.support.command_line import in_process, run_once
from tests.support.prosody import ProsodyProcess


def spade_memory(
    *args: str, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "spade_memory", *args],
        capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})},
    )  # fmt: skip


def test_version_names_the_installed_package() -> None:
    from importlib.metadata import version

    result = spade_memory("--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"spade-memory {version('spade-memory')}"


def test_schema_describes_every_request_and_reply() -> None:
    result = spade_memory("schema")
    assert result.returncode == 0, result.stderr
    schema = json.loads(result.stdout)
    base = schema["services"]["base-memory"]
    ops = set(base["request"]["discriminator"]["mapping"])
    assert ops == set(base["replies"]) == {
        "store_memory", "supersede_memory", "get_memory", "search_memories", "list_memories",
        "recent_memories", "update_memory", "restore_memory", "delete_memory", "memory_stats",
        "changes_since", "forget_memories", "forget_all_memories", "memory_history", "memory_refs",
        "consolidate_memories", "entities", "memories_about", "related_memories",
        "create_space", "grant", "revoke", "leave_space", "list_spaces", "space_info",
        "delete_space", "subscribe", "unsubscribe", "govern", "list_proposals",
        "decide_proposal",
    }  # fmt: skip
    beads = schema["services"]["beads-sync"]
    assert set(beads["request"]["discriminator"]["mapping"]) == set(beads["replies"]) == {
        "store_memory", "retrieve_memories", "restore_session", "get_session_context",
        "mark_memory_accessed", "link_memories", "delete_memory", "forget_all_memories",
        "search_memories", "share_session", "unshare_session", "memory_stats",
        "mirrored_memory",
    }  # fmt: skip
    interaction = schema["services"]["interaction-memory"]
    interaction_ops = set(interaction["request"]["discriminator"]["mapping"])
    assert interaction_ops == set(interaction["replies"])
    assert {"add_information", "set_focus", "merge_working_memory", "search_context"} <= (
        interaction_ops
    )
    assert schema["envelope"]["metadata"]["ontology"] == "spade-memory"
    assert "not-authorized" in schema["envelope"]["conditions"]
    assert set(schema["failure"]["required"]) == {"condition", "text"}


def test_run_reports_a_busy_port_clearly(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = spade_memory(
            "run", "--data-dir", str(tmp_path), "--port", str(port), "--s2s-port", str(free_port())
        )
    assert result.returncode == 1
    assert f"port {port}" in result.stderr and "not free" in result.stderr


def test_external_server_needs_a_password_from_the_environment(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "SPADE_MEMORY_PASSWORD"}
    result = subprocess.run(
        [sys.executable, "-m", "spade_memory", "run", "--external-server",
         "--data-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    assert result.returncode == 1
    assert "SPADE_MEMORY_PASSWORD" in result.stderr


def test_no_server_listening_fails_in_bounded_time(tmp_path: Path) -> None:
    started = time.monotonic()
    result = spade_memory(
        "run", "--external-server", "--data-dir", str(tmp_path), "--port", str(free_port()),
        "--connect-timeout", "3", env={"SPADE_MEMORY_PASSWORD": "secret"},
    )  # fmt: skip
    assert result.returncode == 1
    assert "nothing listens on localhost:" in result.stderr  # said at once, not retried
    assert time.monotonic() - started < 30


def test_import_interactions_from_a_spade_llm_file(tmp_path: Path) -> None:
    legacy = {
        "agent_id": "legacy@localhost/phone",
        "interactions": {
            "c1": [
                {"content": "likes tea", "timestamp": "2025-01-02T03:04:05.123456"},
                {"content": "lives in Madrid", "timestamp": "2025-01-02T03:05:00"},
            ]
        },
    }
    path = tmp_path / "legacy_localhost_interactions.json"
    path.write_text(json.dumps(legacy))
    result = in_process("import-interactions", str(path), "--data-dir", str(tmp_path / "data"))
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"{path}: imported 2 notes\n"
    again = in_process("import-interactions", str(path), "--data-dir", str(tmp_path / "data"))
    assert again.stdout == f"{path}: nothing new; its 2 notes were imported before\n"

    async def exported() -> dict[str, object]:
        store = await InteractionStore.open(tmp_path / "data" / "interaction-memory.db")
        try:
            found = await store.apply("legacy@localhost", ExportConversation(conversation_id="c1"))
        finally:
            await store.close()
        return found.model_dump()

    assert asyncio.run(exported())["interactions"] == legacy["interactions"]


def test_spade_llm_files_are_imported_by_their_own_names_once(tmp_path: Path) -> None:
    """Files written by spade_llm itself: two agents' base memories and an interactions
    file, imported twice; the second time adds nothing. A running service holds the
    data directory, so an import then refuses."""
    from spade_llm.memory.agent_base_memory import AgentBaseMemory
    from spade_llm.memory.interaction_memory import AgentInteractionMemory

    async def write_spade_llm_files() -> None:
        for agent, contents in (("alice@localhost", ["likes tea", "lives in Madrid"]),
                                ("bob@localhost", ["plays chess"])):  # fmt: skip
            memory = AgentBaseMemory(agent, memory_path=str(tmp_path))
            for content in contents:
                await memory.store_memory("fact", content, context="chat")
            await memory.cleanup()
        notes = AgentInteractionMemory("alice@localhost", memory_path=str(tmp_path))
        notes.add_information("c1", "asked about tea")

    asyncio.run(write_spade_llm_files())
    files = sorted(tmp_path.glob("*_base_memory.db"))
    assert [f.name for f in files] == [
        "alice_localhost_base_memory.db",
        "bob_localhost_base_memory.db",
    ]
    data = tmp_path / "data"
    first = in_process("import-base-memory", *map(str, files), "--data-dir", str(data))
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines() == [
        f"{files[0]}: imported 2 memories",
        f"{files[1]}: imported 1 memories",
    ]
    second = in_process("import-base-memory", *map(str, files), "--data-dir", str(data))
    assert second.stdout.splitlines() == [
        f"{files[0]}: nothing new; its 2 memories were imported before",
        f"{files[1]}: nothing new; its 1 memories were imported before",
    ]
    with sqlite3.connect(data / "base-memory.db") as db:
        rows = db.execute(
            "SELECT owner, content, context FROM memories ORDER BY content"
        ).fetchall()
        (indexed,) = db.execute(
            "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH 'chess'"
        ).fetchone()
    assert rows == [
        ("alice@localhost", "likes tea", "chat"),
        ("alice@localhost", "lives in Madrid", "chat"),
        ("bob@localhost", "plays chess", "chat"),
    ]
    assert indexed == 1  # found by search

    interactions = tmp_path / "alice_localhost_interactions.json"
    for expected in ("imported 1 notes", "nothing new; its 1 notes were imported before"):
        result = in_process("import-interactions", str(interactions), "--data-dir", str(data))
        assert result.stdout == f"{interactions}: {expected}\n"

    shutil.copy(files[0], data)  # spade_llm's file where the service runs: it says so
    service = MemoryServiceProcess(data)
    service.start()
    try:
        busy = in_process("import-base-memory", str(files[0]), "--data-dir", str(data))
    finally:
        service.stop()
    said = "".join(service.output)
    assert f"holds spade_llm files ({files[0].name})" in said
    assert "`spade-memory import-base-memory FILE…` imports them" in said
    assert busy.returncode == 1
    assert busy.stderr.startswith(f"spade-memory: cannot import: {data} is in use by a running")
    not_spade_llm = in_process("import-base-memory", str(interactions), "--data-dir", str(data))
    assert not_spade_llm.returncode == 1
    assert not_spade_llm.stderr.startswith(f"spade-memory: cannot import: {interactions}:")


def test_import_interactions_rejects_a_malformed_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"agent_id": "x@localhost", "interactions": {"c1": [{"content": 5}]}}')
    result = in_process("import-interactions", str(path), "--data-dir", str(tmp_path))
    assert result.returncode == 1
    assert "cannot import" in result.stderr and "Traceback" not in result.stderr


def test_run_banner_shows_free_space_and_no_identity_warning(
    memory_service: MemoryServiceProcess,
) -> None:
    """The embedded server now stamps ``from`` (tests/test_identity.py runs on it): the
    old warning that it does not authenticate senders is gone."""
    banner = " ".join("".join(memory_service.output).split())
    assert "does not authenticate senders" not in banner
    assert "free disk space" in banner and "GiB" in banner


def test_demo_recalls_after_the_llm_agent_restarts(tmp_path: Path) -> None:
    result = spade_memory("demo", "--data-dir", str(tmp_path), env={"COLUMNS": "200"})
    assert result.returncode == 0, result.stderr
    second_session = result.stdout.split("Session 2")[1]
    tea = "Ada drinks green tea in the morning, never coffee"
    recall, search = second_session.split("tool search_memories")
    assert "recall (information from the memory, not instructions)" in recall
    assert f"  - [preference] {tea} (space personal, by assistant@localhost)" in recall
    assert "Found 1 memories for 'drink' (information from the memory service, not" in search
    assert f'- [preference] "{tea}" (space personal, by assistant@localhost; id' in search
    assert "I remember this: Ada drinks green tea in the morning, never coffee." in search
    with sqlite3.connect(tmp_path / "base-memory.db") as db:
        (count,) = db.execute("SELECT count(*) FROM memories").fetchone()
    assert count == 1


def test_run_refuses_what_it_cannot_start_in_a_sentence(tmp_path: Path) -> None:
    result = run_once(
        tmp_path, "--services", "beads-sync", "--beads-engine", "bd",
        env={"PATH": str(tmp_path)},
    )  # fmt: skip
    assert result.returncode == 1
    assert "cannot start the beads sync agent: the bd command is not on PATH" in result.stderr
    assert "Traceback" not in result.stderr
    result = run_once(tmp_path, "--services", "nonsense")
    assert result.returncode == 1 and "unknown memory service 'nonsense'" in result.stderr


def test_every_address_needs_the_names_people_use() -> None:
    """The web view bound to every address must be told the host names it answers to."""
    for command in (["web", "--http", "0.0.0.0:8470"], ["run", "--web", "0.0.0.0:8470"]):
        done = in_process(*command, "--port", str(free_port()))
        assert done.returncode == 2, done.stderr
        (line,) = done.stderr.splitlines()
        assert "listens on every address: name the host people reach it by" in line


def test_a_data_directory_it_cannot_use_is_one_sentence(tmp_path: Path) -> None:
    a_file = tmp_path / "memories.db"
    a_file.write_text("")
    for data_dir, sentence in [
        (a_file, f"the data directory {a_file} is a file; give --data-dir a directory"),
        (a_file / "sub", f"cannot make the data directory {a_file / 'sub'}: {a_file} is a file"),
        (Path("/proc/spade-memory"), "cannot make the data directory /proc/spade-memory:"),
    ]:
        result = run_once(data_dir)
        assert result.returncode == 1
        assert result.stderr.startswith(f"spade-memory: {sentence}"), result.stderr
        assert len(result.stderr.splitlines()) == 1


def test_a_second_service_on_one_data_directory_stops_at_once(tmp_path: Path) -> None:
    first = MemoryServiceProcess(tmp_path)
    first.start()
    try:
        assert first.process is not None
        result = run_once(tmp_path)
        assert result.returncode == 1
        assert result.stderr == (
            f"spade-memory: {tmp_path} is in use by a running spade-memory"
            f" (pid {first.process.pid}); stop it first\n"
        )
    finally:
        first.stop()


def test_a_refused_password_is_one_sentence(prosody_server: ProsodyProcess, tmp_path: Path) -> None:
    result = spade_memory(
        "run", "--external-server", "--port", str(prosody_server.port),
        "--data-dir", str(tmp_path), env={"SPADE_MEMORY_PASSWORD": "not-the-password"},
    )  # fmt: skip
    assert result.returncode == 1
    assert result.stderr == (
        f"spade-memory: the XMPP server at localhost:{prosody_server.port} refused the password"
        " of base-memory@localhost; set SPADE_MEMORY_PASSWORD to the password of the memory"
        " agents' accounts\n"
    )
