"""``pip install -e .`` without the ``embeddings`` extra: every op of the memory agents
serves, by word search (BM25) alone. The service runs in a fresh interpreter where numpy,
onnxruntime and faiss are not installed as far as Python can tell (a ``sitecustomize``
first on ``PYTHONPATH`` marks them absent in ``sys.modules``: ``import`` raises
``ModuleNotFoundError`` and ``importlib.util.find_spec`` answers None, as for a package
never installed), since this test session has loaded them all."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from spade_memory.testing import MemoryServiceProcess
from spade_memory.xmpp.lifecycle import stop_agent
from tests.support.command_line import hidden
from tests.support.harness import start_client, unique_jid


@pytest.fixture(scope="module")
def service_without_extras(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[MemoryServiceProcess]:
    """``spade-memory run`` in a process that cannot import the extra's modules."""
    folder = tmp_path_factory.mktemp("without-extras")
    process = MemoryServiceProcess(folder / "data", env=hidden(folder / "hidden"), port=None)
    process.start(timeout=120)
    yield process
    process.stop()


def test_the_hiding_folder_hides(tmp_path: Path) -> None:
    """The trick the service test relies on: a child with that environment fails to
    import numpy (else the test below would prove nothing)."""
    import subprocess
    import sys

    script = "import importlib.util\nassert importlib.util.find_spec('faiss') is None\nimport numpy"
    done = subprocess.run(
        [sys.executable, "-c", script], env={**os.environ, **hidden(tmp_path)},
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode != 0
    assert "ModuleNotFoundError" in done.stderr


async def test_every_base_memory_op_serves_without_the_extra(
    service_without_extras: MemoryServiceProcess,
) -> None:
    agent = await start_client(unique_jid("plain"), service_without_extras.port)
    try:
        memory = agent.memory
        api = await memory.store_memory("fact", "API endpoint requires authentication header")
        tea = await memory.store_memory("preference", "likes green tea")
        assert api and tea
        found = await memory.search_memories("API authentication")
        assert [m.id for m in found] == [api]
        stats = await memory.get_memory_stats()
        assert stats is not None and stats.total_memories == 2
        assert {m.id for m in await memory.get_recent_memories(limit=10)} == {api, tea}
        assert [m.id for m in await memory.get_memories_by_category("preference")] == [tea]
        assert (await memory.get_memory(api)) is not None
        assert await memory.delete_memory(tea) is True
        # the interaction memory agent and working memory serve too
        await memory.add_information("chat-1", "the user prefers short answers")
        assert await memory.get_information("chat-1") == ["the user prefers short answers"]
        assert (await memory.session("plan-1").create()) is not None
    finally:
        await stop_agent(agent)
    output = "".join(service_without_extras.output)
    assert "Traceback" not in output, output
