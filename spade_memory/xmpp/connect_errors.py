"""Why an agent could not log in, one class per cause a user can act on.

Every class derives from ``AgentStartError``, so a caller that only wants "the login
failed" catches that; each message is one sentence that names the server tried and,
where there is one, the next step.
"""

from __future__ import annotations


class AgentStartError(RuntimeError):
    """An agent could not connect and authenticate in time."""


class WrongPassword(AgentStartError):
    """The XMPP server refused an agent's password."""


class ConnectionRefused(AgentStartError):
    """Nothing listens at the XMPP server's host and port (the host itself answered)."""


class UnknownHost(AgentStartError):
    """The host an agent connects to (its JID's domain) has no address."""


class HostUnreachable(AgentStartError):
    """No route to the host, or the network is down."""


class WrongDomain(AgentStartError):
    """An XMPP server answers there, but does not serve the agent's JID's domain."""


class TlsFailure(AgentStartError):
    """Something answers there, but no XMPP session over TLS can be made with it: it does
    not speak XMPP, offers no TLS (which slixmpp requires), or the TLS handshake fails."""


def refused_password(jid: str, host: str, port: int, registered: bool) -> WrongPassword:
    """The error for a password the server at ``host:port`` refused (with ``registered``
    the account exists: its registration was refused as taken, so it holds another)."""
    why = (
        "registered with another password" if registered else "no such account or another password"
    )
    return WrongPassword(
        f"the XMPP server at {host}:{port} refused the password of {jid}: {why};"
        f" `spade-memory accounts set-password {jid}` (spade-memory's embedded server)"
        " or another JID"
    )


def not_connected(jid: str, host: str, port: int, attempts: int, timeout: float) -> AgentStartError:
    """The error for a login that got no session in ``attempts`` tries of ``timeout`` s."""
    return AgentStartError(
        f"{jid} could not connect to an XMPP server at {host}:{port}"
        f" ({attempts} attempts of {timeout:.0f}s)"
    )
