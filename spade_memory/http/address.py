"""``[HOST:]PORT`` as an address to listen at, and its socket, bound at once so that a
busy port is said in one line before anything starts."""

from __future__ import annotations

import contextlib
import ipaddress
import socket
from dataclasses import dataclass


@dataclass(frozen=True)
class HttpAddress:
    host: str
    port: int

    @property
    def loopback(self) -> bool:
        """Whether only this machine can connect."""
        if self.host == "localhost":
            return True
        with contextlib.suppress(ValueError):
            return ipaddress.ip_address(self.host).is_loopback
        return False

    def url(self, path: str = "/") -> str:
        """The address as a URL ending in ``path``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}{path}"


def http_address(given: str, option: str = "--http") -> HttpAddress:
    """``[HOST:]PORT`` (an IPv6 host in brackets) as an address; the host defaults to
    127.0.0.1. Raises ``ValueError`` naming what is wrong (and ``option``, the flag that
    gave it)."""
    host, colon, port = given.rpartition(":")
    host = host.strip("[]") if colon else ""
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{option} takes [HOST:]PORT, such as 127.0.0.1:8765, not {given!r}")
    return HttpAddress(host or "127.0.0.1", int(port))


def bound_socket(address: HttpAddress) -> socket.socket:
    """A socket listening at ``address``; raises ``OSError`` (address in use, no such
    address here) with the address in its text."""
    try:
        family, kind, protocol, _name, where = socket.getaddrinfo(
            address.host, address.port, type=socket.SOCK_STREAM
        )[0]
        listening = socket.socket(family, kind, protocol)
    except OSError as error:
        raise OSError(f"cannot listen at {address.host}:{address.port}: {error}") from None
    try:
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listening.bind(where)
        listening.listen(128)
    except OSError as error:
        listening.close()
        raise OSError(f"cannot listen at {address.host}:{address.port}: {error.strerror}") from None
    return listening
