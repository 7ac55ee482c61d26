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

    @property
    def private(self) -> bool:
        """Whether this is 127.0.0.1 or ::1 exactly: the addresses that may be served
        without a token (the MCP SDK's check of Host covers those, not the rest of
        127.0.0.0/8, which a page's DNS name can be made to point at)."""
        return self.host in ("127.0.0.1", "::1")

    @property
    def any_address(self) -> bool:
        """Whether it listens on every address (0.0.0.0 or ::): no Host is its own."""
        return self.host in ("0.0.0.0", "::")

    @property
    def authority(self) -> str:
        """``host:port`` as a Host header names it (an IPv6 host in brackets)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    def url(self, path: str = "/") -> str:
        """The address as a URL ending in ``path``."""
        return f"http://{self.authority}{path}"


def allowed_hosts(address: HttpAddress, names: tuple[str, ...] = ()) -> list[str]:
    """The Host headers a request to ``address`` may carry: the address itself (and
    ``localhost`` for a loopback one) and each of ``names`` (``NAME`` or ``NAME:PORT``,
    as clients or a proxy in front reach it; a name without a port also stands for
    itself at the address's port). A page that pointed its own DNS name here (DNS
    rebinding) sends its own name, and is refused."""
    hosts = [address.authority]
    if address.loopback:
        hosts.append(f"localhost:{address.port}")
    for name in names:
        hosts.append(name.lower())
        if not name.rpartition(":")[2].isdigit() or name.endswith("]"):
            hosts.append(f"{name.lower()}:{address.port}")
    return list(dict.fromkeys(hosts))


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
