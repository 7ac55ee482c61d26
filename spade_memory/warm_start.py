"""``spade-memory run`` started without its imports: a child forked from a process that
has loaded them already (the standard library's forkserver, its modules preloaded).

A test suite starts the service a hundred times or more, and a start from scratch
spends most of its CPU importing SPADE, pyjabber, SQLAlchemy and the stores. A warm
child is still a process of its own, on its own ports, with its own environment,
working directory and output; it runs the package as ``python -m spade_memory`` does
(``runpy``), with the arguments given, and exits with the command's status.
What it does not repeat is the interpreter's start and the imports, so a test of those
(the command's start, a fresh machine) starts the command from scratch instead.

As with any forkserver child, the program that asks for one has its main module
imported again in the child: a script keeps its work under ``if __name__ ==
"__main__":`` (pytest's main module is left out).
"""

from __future__ import annotations

import functools
import gc
import multiprocessing
import os
import runpy
import signal
import socket
import subprocess
import sys
from collections.abc import Mapping, Sequence
from typing import IO, Any, NoReturn

PRELOAD = ("spade_memory.server.run_command", "spade_memory.warm_start")
"""What the forkserver imports once: ``run``'s modules (the rest of the package's
command line is small), and this module, whose ``_child`` each child runs."""


@functools.cache
def _forkserver() -> Any:
    """This process's forkserver context, its preload set once."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(PRELOAD))
    return context


class WarmProcess:
    """A forked ``spade-memory`` child, with the part of ``subprocess.Popen`` that
    ``ChildProcess`` and the tests use: ``pid``, ``stdout`` (output and errors, as
    text), ``stderr`` (errors apart, if asked), ``poll``, ``wait``, ``send_signal``,
    ``kill`` and ``returncode`` (negative: the signal that ended it, as ``Popen``
    says)."""

    def __init__(
        self, argv: Sequence[str], env: Mapping[str, str], *, errors_apart: bool = False
    ) -> None:
        """Fork the child running ``spade-memory`` with ``argv`` in ``env`` and this
        process's working directory; its errors in ``stdout`` with its output, or in
        ``stderr`` of their own with ``errors_apart``. Raises ``OSError`` when the
        forkserver cannot start or fork."""
        self.args = ["spade-memory", *argv]
        pairs = [socket.socketpair() for _ in range(2 if errors_apart else 1)]
        theirs = [pair[1] for pair in pairs]
        self._process = _forkserver().Process(
            target=_child, args=(list(argv), dict(env), os.getcwd(), *theirs), daemon=True,
            name="spade-memory",
        )  # fmt: skip
        try:
            self._process.start()
        except BaseException:
            for ours, _ in pairs:
                ours.close()
            raise
        finally:
            for end in theirs:
                end.close()
        self._sockets = [ours for ours, _ in pairs]
        streams = [end.makefile("r", encoding="utf-8", errors="replace") for end in self._sockets]
        self.stdout: IO[str] | None = streams[0]
        self.stderr: IO[str] | None = streams[1] if errors_apart else None
        self.pid: int = self._process.pid

    @property
    def returncode(self) -> int | None:
        """The exit status once the child has ended, else ``None``."""
        code: int | None = self._process.exitcode
        return code

    def poll(self) -> int | None:
        """The exit status if the child has ended, else ``None``; never waits."""
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the child to end; returns its exit status.

        Raises ``subprocess.TimeoutExpired`` when it is still running after ``timeout``.
        """
        self._process.join(timeout)
        if (code := self.returncode) is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
        return code

    def send_signal(self, sig: int) -> None:
        """Send ``sig`` to the child unless it has ended (whose pid may be anyone's)."""
        if self.returncode is None:
            os.kill(self.pid, sig)

    def kill(self) -> None:
        """SIGKILL the child unless it has ended."""
        self.send_signal(signal.SIGKILL)

    def close(self) -> None:
        """Close the output (once the child is reaped)."""
        for stream in (self.stdout, self.stderr):
            if stream is not None:
                stream.close()
        for end in self._sockets:
            end.close()
        self._process.close()


def _child(
    argv: list[str], env: dict[str, str], cwd: str, output: socket.socket,
    errors: socket.socket | None = None,
) -> NoReturn:  # fmt: skip
    """The forked child: output to ``output`` and errors to ``errors`` (else to
    ``output`` too), unbuffered (the ``PYTHONUNBUFFERED`` of a started one), ``env`` and
    ``cwd`` as its own, then the command. Exits with its status (``SystemExit``, as the
    command's entry raises)."""
    gc.freeze()  # the preloaded modules' objects: no collection walks them again
    os.dup2(output.fileno(), 1)
    os.dup2((errors or output).fileno(), 2)
    for end in (output, errors):
        if end is not None:
            end.close()
    for stream in (sys.stdout, sys.stderr):
        stream.reconfigure(write_through=True)  # type: ignore[union-attr]
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    sys.argv = ["spade-memory", *argv]
    runpy.run_module("spade_memory", run_name="__main__", alter_sys=True)  # exits
    raise AssertionError("spade_memory's __main__ returned instead of exiting")
