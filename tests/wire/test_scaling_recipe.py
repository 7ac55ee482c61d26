"""The one-machine recipe of docs/operations/scaling-out.md, run as written.

The recipe's SQL makes a role that is no superuser and a database it owns; the test
runs that SQL (read from the page) on a PostgreSQL server of its own, then the
recipe's two services on the role's URL: the first with the embedded XMPP server and
every agent, the second a base memory agent on the first's server. A client with both
agents in its pool stores through one and finds through the other, and goes on when
one is stopped. A page that drifts from what works fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

import asyncpg

from spade_memory.server.runtime import PASSWORD_ENV
from spade_memory.testing import MemoryServiceProcess, PostgresServer
from spade_memory.xmpp.lifecycle import stop_agent
from tests.support.harness import start_client, unique_jid
from tests.support.paths import ROOT

PAGE = ROOT / "docs" / "operations" / "scaling-out.md"
FIRST = "base-memory@localhost"
SECOND = "base-memory-2@localhost"


def recipe_sql() -> list[str]:
    """The statements of the page's SQL block (the recipe's step 1)."""
    blocks = re.findall(r"```sql\n(.*?)```", PAGE.read_text(), flags=re.DOTALL)
    assert len(blocks) == 1, "the scaling-out page has one SQL block: the recipe's"
    return [line for line in blocks[0].splitlines() if line.strip()]


def recipe_password(variable: str) -> str:
    """The value the page's shell blocks export for ``variable``."""
    found = set(re.findall(rf"export {variable}=(\S+)", PAGE.read_text()))
    assert len(found) == 1, f"the page gives {variable} one value: {found}"
    return found.pop()


async def test_the_one_machine_recipe_runs_as_written(
    tmp_path: Path, postgres_server: PostgresServer
) -> None:
    admin = await asyncpg.connect(postgres_server.url())
    try:
        for statement in recipe_sql():
            await admin.execute(statement)
    finally:
        await admin.close()
    made = re.search(r"PASSWORD '([^']+)'", "\n".join(recipe_sql()))
    assert made is not None
    url = f"postgresql://memory:{made.group(1)}@127.0.0.1:{postgres_server.port}/spade_memory"
    agents_secret = {PASSWORD_ENV: recipe_password(PASSWORD_ENV)}

    first = MemoryServiceProcess(tmp_path / "first", "--database", url, env=agents_secret)
    second = MemoryServiceProcess(
        tmp_path / "second", "--services", "base-memory", "--external-server",
        "--base-jid", SECOND, "--database", url, port=first.port, env=agents_secret,
    )  # fmt: skip
    try:
        first.start()
        second.start()
        alice = await start_client(unique_jid("alice"), first.port, memory_jid=[FIRST, SECOND])
        try:
            stored = [
                await alice.memory.store_memory("fact", f"the pool keeps finding {n}")
                for n in range(4)
            ]
            found = await alice.memory.search_memories("pool keeps finding", limit=10)
            assert {memory.id for memory in found} == set(stored)
            second.stop()
            later = await alice.memory.store_memory("fact", "stored with one agent left")
            kept = await alice.memory.get_memory(later)
            assert kept is not None and kept.content == "stored with one agent left"
        finally:
            await stop_agent(alice)
    finally:
        second.stop()
        first.stop()

    owner = await asyncpg.connect(url)
    try:
        tables_owner = await owner.fetchval(
            "SELECT tableowner FROM pg_tables WHERE tablename = 'memories'"
        )
    finally:
        await owner.close()
    assert tables_owner == "memory"  # made by the agents, as the role the recipe made
