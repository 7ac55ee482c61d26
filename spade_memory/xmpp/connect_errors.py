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
