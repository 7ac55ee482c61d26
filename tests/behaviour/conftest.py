"""Fixtures the behaviour tests of several modules share."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.beads.engine import BeadsEngine
from spade_memory.beads.engines import open_engine
from tests.support.in_process import in_process_services
from tests.support.paths import SUPPORT
from tests.support.stores import Location

STANDIN = SUPPORT / "bd_standin.py"
"""A stand-in for the ``bd`` binary (not installable here)."""


@pytest.fixture
async def store(location: Location) -> AsyncIterator[LongTermStore]:
    opened = await LongTermStore.open(location("memory.db"))
    yield opened
    await opened.close()


@pytest.fixture
async def services(tmp_path: Path) -> AsyncIterator[dict[str, object]]:
    """The memory services by name, for the client's in-process transport."""
    async with in_process_services(tmp_path) as by_name:
        yield by_name


@pytest.fixture
def bd_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Put the stand-in on PATH as ``bd``; return the file its calls are logged to."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    bd = bin_dir / "bd"
    bd.write_text(f"#!{sys.executable}\n" + STANDIN.read_text())
    bd.chmod(bd.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    log = tmp_path / "bd-calls.jsonl"
    monkeypatch.setenv("BD_STANDIN_LOG", str(log))
    (tmp_path / "project" / ".beads").mkdir(parents=True)
    return log


@pytest.fixture(params=["native", "bd"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> BeadsEngine:
    """Each engine: the native one, and bd (the stand-in that takes bd's real flags)."""
    if request.param == "bd":
        request.getfixturevalue("bd_log")
    (tmp_path / "project" / ".beads").mkdir(parents=True, exist_ok=True)
    return open_engine(tmp_path / "project", request.param)
