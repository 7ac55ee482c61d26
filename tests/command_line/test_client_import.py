"""What an agent that only uses memory loads: the client and the protocol, nothing of a
server. Run in a fresh interpreter, since this test session has loaded everything."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support.command_line import loaded_by

SERVER_SIDE = ("aiosqlite", "asyncpg", "sqlite3", "onnxruntime", "numpy", "faiss", "spade_llm")
"""Modules a client never needs: database drivers, the model's runtime, litellm's door."""
SERVER_PACKAGES = (
    "base_memory", "interaction", "beads_sync", "beads", "serving", "storage", "spaces",
    "server", "llm",
)  # fmt: skip


@pytest.mark.parametrize(
    "statement",
    [
        "import spade_memory.client",
        "from spade_memory.client import MemoryClient, MemoryMixin",
        "from spade_memory import MemoryClient, MemoryMixin, StoreMemory, SearchMemories",
        "import spade_memory.protocol.memories, spade_memory.xmpp.wire",
    ],
)
def test_the_client_loads_no_server(statement: str) -> None:
    loaded = loaded_by(statement)
    assert [m for m in loaded if m.split(".")[0] in SERVER_SIDE] == []
    ours = [m.split(".") for m in loaded if m.startswith("spade_memory.")]
    assert sorted({".".join(m[:2]) for m in ours if m[1] in SERVER_PACKAGES}) == []


def test_the_check_sees_a_server_module() -> None:
    """The test above would notice a service loaded by the client."""
    loaded = loaded_by("import spade_memory.client, spade_memory.base_memory.service")
    assert "sqlite3" in loaded
    assert "spade_memory.base_memory.service" in loaded


def test_the_memory_service_runs_without_spade_llm() -> None:
    """spade_llm is the ``llm`` extra: ``spade-memory run`` and its services never load it."""
    loaded = loaded_by(
        "import spade_memory.server.cli, spade_memory.server.runtime, spade_memory.server.registry"
    )
    assert [m for m in loaded if m.split(".")[0] in ("spade_llm", "litellm")] == []


def test_the_demo_without_spade_llm_says_what_to_install() -> None:
    script = (  # as if spade_llm were not installed
        "import sys\n"
        "class NotInstalled:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'spade_llm':\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, NotInstalled())\n"
        "from spade_memory.server.cli import main\n"
        "sys.exit(main(['demo']))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 2
    assert (
        done.stderr.strip() == "spade-memory demo needs spade_llm: pip install 'spade-memory[llm]'"
    )


def test_the_package_loads_its_names_on_first_use() -> None:
    """``import spade_memory`` loads none of its modules (the command's first frame
    relies on it to catch a Ctrl-C); every exported name is there when asked for."""
    loaded = loaded_by("import spade_memory")
    assert [name for name in loaded if name.startswith("spade_memory.")] == []
    assert "spade" not in loaded and "pydantic" not in loaded

    import spade_memory

    exported = set(spade_memory.__all__)
    assert exported == set(spade_memory._MODULE_OF)
    for name in exported - {"ChatUser"}:  # ChatUser would start spade_llm's console
        assert getattr(spade_memory, name) is not None, name
    assert exported <= set(dir(spade_memory))
