"""Which connections a bare JID names: exactly its own.

pyjabber found the sessions of a bare JID with ``re.match(f"{jid}/*", ...)``:
the address was read as a regular expression, so a message or presence for
``a.b@localhost`` also went to ``axb@localhost`` (any character matches ``.``),
and an account name with ``(`` or ``[`` made the lookup raise. Here the bare
JIDs are compared as text.
"""

from __future__ import annotations

from typing import Any

from pyjabber.network.ConnectionManager import ConnectionManager
from pyjabber.stream.JID import JID


class ExactConnectionManager(ConnectionManager):  # type: ignore[misc]
    """pyjabber's registry of connections, with bare JIDs compared as text."""

    def get_transport(self, jid: JID) -> list[Any]:
        """The connections of ``jid`` (one full JID, or every resource of a bare one)."""
        if jid.resource:
            return super().get_transport(jid)  # type: ignore[no-any-return]
        bare = jid.bare()
        return [c for c in self._peerList.values() if c.jid is not None and c.jid.bare() == bare]

    def get_transport_online(self, jid: JID) -> list[Any]:
        """``get_transport``, of the sessions that said they are available."""
        if jid.resource:
            return super().get_transport_online(jid)  # type: ignore[no-any-return]
        return [client for client in self.get_transport(jid) if client.online]


def compare_exactly() -> None:
    """Make the process's connection registry (a pyjabber singleton) compare exactly."""
    registry = ConnectionManager()
    registry.__class__ = ExactConnectionManager
