"""The embedded server's ports: checked free before anything is written, named with the flag
that moves them.

pyjabber exits the process when it cannot bind, and ``run`` used to find a busy port
only once it had made the data directory, its stores and the server's certificates:
a failed second ``run`` left a half-made directory behind. ``check_ports`` binds each
port for a moment first and raises ``BusyPort`` with one sentence that names the flag
to choose another (``--port``, or ``--s2s-port`` for the server-to-server port, which
is off unless asked for).
"""

from __future__ import annotations

import socket


class BusyPort(RuntimeError):
    """A port the embedded server needs is taken (by another service or program)."""


def check_ports(host: str, port: int, s2s_port: int | None = None) -> None:
    """Check that the client ``port`` (and ``s2s_port``, when the server is to federate)
    can be bound on ``host``.

    Raises ``BusyPort`` naming the port and the flag that chooses another.
    """
    why = _refusal(host, port)
    if why is not None:
        raise BusyPort(
            f"port {port} on {host} is not free ({why}): another spade-memory run or XMPP"
            f" server listens there; choose another with --port N (clients then use that"
            f" port too)"
        )
    if s2s_port is None:
        return
    why = _refusal(host, s2s_port)
    if why is not None:
        raise BusyPort(
            f"the server-to-server port {s2s_port} on {host} is not free ({why}); choose"
            f" another with --s2s-port N, or leave --s2s-port out (the embedded server then"
            f" takes no server-to-server connections)"
        )


def _refusal(host: str, port: int) -> str | None:
    """Why ``port`` cannot be bound on ``host`` (the system's words), or None."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as error:
            return (error.strerror or str(error)).lower()
    return None
