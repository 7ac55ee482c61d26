"""SPADE's own end-to-end tests (``tests/test_e2e.py`` of its sdist, fetched from PyPI for
the installed version) pass against the memory service's embedded XMPP server: agents
that SPADE's authors wrote connect, message each other over XMPP (bare JIDs included)
and subscribe to each other's presence. Their only change: the port
(``support/spade_port.py``).

On Prosody, as shipped here, in-band registration is closed, and SPADE's agents register
themselves: that server is not run here. (The embedded server's bare-JID delivery after
an ended session, which once failed SPADE's ``test_msg_via_xmpp`` elsewhere, is
``wire/test_embedded_interop.py``'s.)"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from importlib.metadata import version
from pathlib import Path

import pytest

from spade_memory.testing import MemoryServiceProcess
from tests.support import certificates
from tests.support.paths import ROOT

SETTINGS = "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"


def spade_tests(folder: Path) -> Path:
    """SPADE's test folder from the sdist of the installed version (pip, from PyPI)."""
    wanted = f"spade=={version('spade')}"
    fetched = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
         "--quiet", "--dest", str(folder), wanted],
        capture_output=True, text=True, timeout=300, check=False,
        env=certificates.with_certificates(os.environ),
    )  # fmt: skip
    archives = sorted(folder.glob("spade-*.tar.gz"))
    if fetched.returncode != 0 or not archives:
        pytest.skip(f"SPADE's sdist could not be fetched ({wanted}): {fetched.stderr[-300:]}")
    with tarfile.open(archives[0]) as sdist:
        sdist.extractall(folder, filter="data")
    return next(folder.glob("spade-*/tests"))


def test_spades_own_end_to_end_tests_pass_on_the_embedded_server(
    memory_service: MemoryServiceProcess, tmp_path: Path
) -> None:
    tests = spade_tests(tmp_path)
    (tmp_path / "pytest.ini").write_text(SETTINGS)
    plugin = ROOT / "tests" / "support"  # by its own name: the sdist has a ``tests`` too
    env = {**os.environ, "SPADE_E2E_PORT": str(memory_service.port), "PYTHONPATH": str(plugin)}
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-c", str(tmp_path / "pytest.ini"), "-q",
         "-p", "spade_port", "-p", "no:cacheprovider", "-p", "no:xdist",
         str(tests / "test_e2e.py")],
        cwd=tests.parent, capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-2000:]
    assert " failed" not in ran.stdout and "4 passed" in ran.stdout, ran.stdout
