"""Nothing the base memory agent acknowledged is lost while the sync agent is dead.

The base memory agent (with the embedded XMPP server) and the beads sync agent
run as two `spade-memory run` processes; the sync agent is killed with SIGKILL.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path

from spade_memory.server.runtime import PASSWORD_ENV
from spade_memory.testing import MemoryServiceProcess
from spade_memory.xmpp.lifecycle import stop_agent
from tests.support.harness import start_client, unique_jid

PASSWORD = {PASSWORD_ENV: "beads-crash-secret"}


def mirrored(beads_data: Path) -> dict[str, dict[str, object]]:
    """Mirrored issues by base memory id; fails if one memory has two issues."""
    path = beads_data / "beads" / ".beads" / "issues.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    refs = Counter(str(issue.get("external_ref")) for issue in lines)
    assert max(refs.values(), default=1) == 1, f"a memory was written twice: {refs}"
    return {str(i["external_ref"]).removeprefix("spade-memory:"): i for i in lines}


async def wait_for(
    beads_data: Path, count: int, timeout: float = 30.0
) -> dict[str, dict[str, object]]:
    deadline = asyncio.get_running_loop().time() + timeout
    while len(found := mirrored(beads_data)) < count:
        assert asyncio.get_running_loop().time() < deadline, f"only {len(found)} of {count}"
        await asyncio.sleep(0.1)
    return found


def sync_agent(data: Path, port: int) -> MemoryServiceProcess:
    return MemoryServiceProcess(
        data, "--external-server", "--services", "beads-sync", "--beads-debounce", "0.3",
        port=port, env=PASSWORD,
    )  # fmt: skip


async def test_changes_made_while_the_sync_agent_is_dead_arrive_once(tmp_path: Path) -> None:
    memory = MemoryServiceProcess(
        tmp_path / "memory", "--services", "base-memory",
        "--mirror-jid", "beads-sync@localhost", env=PASSWORD,
    )  # fmt: skip
    memory.start()
    beads_data = tmp_path / "sync"
    sync = sync_agent(beads_data, memory.port)
    sync.start()
    alice = await start_client(unique_jid("alice"), memory.port)
    try:
        before = [await alice.memory.store_memory("fact", f"before {n}") for n in range(5)]
        await wait_for(beads_data, 5)

        sync.kill()  # SIGKILL: no chance to flush anything
        during = [await alice.memory.store_memory("fact", f"during {n}") for n in range(20)]
        await alice.memory.update_memory(before[0], content="before 0, corrected")  # type: ignore[arg-type]
        await alice.memory.delete_memory(before[1])  # type: ignore[arg-type]

        sync = sync_agent(beads_data, memory.port)
        sync.start()
        found = await wait_for(beads_data, 25)
        for _ in range(20):  # let any stray duplicate show up
            await asyncio.sleep(0.1)
            found = mirrored(beads_data)
        assert set(found) == {*before, *during}
        assert found[str(before[0])]["description"] == "before 0, corrected"
        assert found[str(before[1])]["status"] == "closed"
        assert all(found[str(m)]["status"] == "open" for m in during)

        # killed again right after a burst, inside its debounce window
        burst = [await alice.memory.store_memory("pattern", f"burst {n}") for n in range(10)]
        sync.kill()
        sync = sync_agent(beads_data, memory.port)
        sync.start()
        found = await wait_for(beads_data, 35)
        assert set(found) == {*before, *during, *burst}
    finally:
        await stop_agent(alice)
        sync.stop()
        memory.stop()
