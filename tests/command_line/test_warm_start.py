"""The tests' services fork from a process with their modules loaded
(``spade_memory.warm_start``): each child is still a process of its own that runs the
command as ``python -m spade_memory`` does, with the environment, working directory,
output and exit status of its own, and ends by a signal as a started one does."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from spade_memory.testing import MemoryServiceProcess
from spade_memory.warm_start import WarmProcess


def test_a_warm_child_has_the_environment_and_exit_status_of_its_command(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "given by the environment"
    checked = WarmProcess(["check"], {**os.environ, "SPADE_MEMORY_DATA": str(data_dir)})
    assert checked.wait(timeout=60) == 0
    assert checked.stdout is not None
    assert f"{data_dir}: every store passes its integrity check" in checked.stdout.read()
    checked.close()

    mistyped = WarmProcess(["chekc"], dict(os.environ))
    assert mistyped.wait(timeout=60) == 2  # argparse's status for a usage error
    assert mistyped.stdout is not None
    assert "spade-memory: unknown 'chekc'" in mistyped.stdout.read()  # errors come too
    mistyped.close()

    apart = WarmProcess(["chekc"], dict(os.environ), errors_apart=True)
    assert apart.wait(timeout=60) == 2
    assert apart.stdout is not None and apart.stderr is not None
    assert apart.stdout.read() == ""
    assert "spade-memory: unknown 'chekc'" in apart.stderr.read()
    apart.close()


def test_a_warm_service_runs_in_its_own_process_and_stops_as_a_started_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    service = MemoryServiceProcess(Path("data"))  # relative: to this working directory
    assert service.warm  # as the tests' conftest sets it
    service.start()
    try:
        process = service.process
        assert isinstance(process, WarmProcess) and process.pid != os.getpid()
        with pytest.raises(subprocess.TimeoutExpired):
            process.wait(timeout=0.1)
        assert (tmp_path / "data").is_dir()
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=60) == 0
        assert "stopped." in "".join(service.output)
    finally:
        service.stop()

    killed = MemoryServiceProcess(tmp_path / "data")
    killed.start()
    try:
        assert killed.process is not None
        killed.process.kill()
        assert killed.process.wait(timeout=60) == -signal.SIGKILL  # as Popen says
    finally:
        killed.stop()


def test_a_command_of_the_tests_own_starts_from_scratch(tmp_path: Path) -> None:
    service = MemoryServiceProcess(tmp_path / "data")
    service.command[1:3] = ["-c", "import sys; print('spade-memory is ready'); sys.exit(3)"]
    service.start()
    assert isinstance(service.process, subprocess.Popen)
    assert service.process.args[0] == sys.executable
    assert service.process.wait(timeout=60) == 3
    service.stop()
