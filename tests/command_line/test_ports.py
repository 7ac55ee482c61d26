"""The embedded server's ports (server/embedded/ports.py): a second service on one machine
needs only ``--port``; a busy port is one line naming the flag, said before anything is
written to the data directory."""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from spade_memory import testing
from spade_memory.testing import READY_LINE, ChildProcess, free_port, free_ports
from spade_memory.xmpp.lifecycle import stop_agent
from tests.support.command_line import in_a_process as spade_memory
from tests.support.command_line import one_line_naming
from tests.support.harness import start_client, unique_jid
from tests.support.raw_xmpp import login

STANDARD_S2S_PORT = 5269


@contextmanager
def listening(port: int = 0) -> Iterator[int]:
    """A socket listening on ``port`` of the loopback address (0: any), for as long as the
    block runs; yields its port. A port someone else already holds is busy all the same."""
    with socket.socket() as taken:
        try:
            taken.bind(("127.0.0.1", port))
            taken.listen()
        except OSError:
            assert port, "no free port to listen on"  # busy already: fine for the test
        yield port or taken.getsockname()[1]


def _gone_or_empty(data_dir: Path) -> bool:
    return not data_dir.exists() or not any(data_dir.iterdir())


def test_a_busy_port_is_one_line_and_leaves_no_data_directory(tmp_path: Path) -> None:
    data_dir = tmp_path / "new"
    with listening() as port:
        result = spade_memory("run", "--data-dir", str(data_dir), "--port", str(port))
    line = one_line_naming(result, f"port {port}")
    assert "--port" in line and "not free" in line
    assert _gone_or_empty(data_dir), sorted(path.name for path in data_dir.iterdir())


def test_a_busy_s2s_port_names_its_own_flag(tmp_path: Path) -> None:
    data_dir = tmp_path / "new"
    with listening() as s2s:
        result = spade_memory(
            "run", "--data-dir", str(data_dir), "--port", str(free_port()), "--s2s-port", str(s2s)
        )
    line = one_line_naming(result, f"port {s2s}")
    assert "--s2s-port" in line
    assert _gone_or_empty(data_dir)


async def test_port_alone_serves_beside_a_service_on_the_standard_s2s_port(
    tmp_path: Path,
) -> None:
    """The standard server-to-server port is taken (as by a service run with the
    defaults); ``--port N`` alone still starts, and serves. Not federating, it answers a
    message to another domain with an error at once."""
    with listening(STANDARD_S2S_PORT):
        port = free_port()
        service = ChildProcess(
            [sys.executable, "-m", "spade_memory", "run", "--data-dir", str(tmp_path / "d"),
             "--port", str(port)],
            READY_LINE,
        )  # fmt: skip
        service.start(timeout=120)
        try:
            client = await start_client(unique_jid("second"), port)
            try:
                stored = await client.memory.store_memory("fact", "the second service serves")
                found = await client.memory.get_memory(str(stored))
                assert found is not None and found.content == "the second service serves"
            finally:
                await stop_agent(client)
            peer = login(port, unique_jid("peer").split("@")[0], "pw")
            try:
                far = "someone@example.org"
                peer.send(f"<message to='{far}' type='chat' id='far'><body>hi</body></message>")
                error = peer.until(r"type=\"error\".*?</(?:\w+:)?message>")
                assert "remote-server-not-found" in error and "server-to-server" in error
            finally:
                peer.close()
        finally:
            service.stop()
    assert not any("not free" in line for line in service.output)


def test_a_port_chosen_for_the_same_server_is_never_one_taken_already(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a server's two ports were chosen in turn, and could be the same (both probed free)
    first = free_port()
    offered = iter([first, first, *range(first + 1, first + 200)])
    monkeypatch.setattr(testing.random, "randrange", lambda low, high: next(offered))
    assert free_port(first) != first


def test_a_server_s_ports_chosen_together_are_different(monkeypatch: pytest.MonkeyPatch) -> None:
    first = free_port()
    offered = iter([first, first, first, *range(first + 1, first + 200)])
    monkeypatch.setattr(testing.random, "randrange", lambda low, high: next(offered))
    port, s2s = free_ports(2)
    assert port == first and s2s != first


def test_the_web_view_says_when_no_xmpp_server_answers() -> None:
    """``spade-memory web`` for a port where nothing listens serves all the same (the
    server may start later) and says at once why no login can succeed (issue 79)."""
    xmpp, http = free_ports(2)
    web = ChildProcess(
        [sys.executable, "-m", "spade_memory", "web", "--port", str(xmpp), "--http", str(http)],
        "no login can succeed yet",
    )
    web.start(timeout=60)
    try:
        (said,) = [line for line in web.output if "no login can succeed yet" in line]
        assert f"nothing listens on localhost:{xmpp}" in said and "spade-memory run" in said
        assert any(f"serving http://127.0.0.1:{http}/" in line for line in web.output)
    finally:
        web.stop()
    assert web.output and "Traceback" not in "".join(web.output)
