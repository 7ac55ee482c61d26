"""Presence subscriptions that wait for an offline account survive a restart.

pyjabber keeps a subscription request for an account that is offline in its
database, and reads them all back when it starts; but it read two columns into
three names, so a data directory that held one could never start again
(``ValueError: not enough values to unpack``). It also kept the requests as text
(``ET.tostring``, namespace prefixes and all), which its delivery wrote to a socket
that takes bytes, and forgot one of an account's requests where it deleted them all.
Here they are read as written, kept as the bytes a client reads (``stanzas.written``)
and forgotten together once delivered.
"""

from __future__ import annotations

import logging
import xml.etree.ElementTree as ET

from pyjabber.db.database import DB
from pyjabber.db.model import Model
from pyjabber.features.presence.PresenceFeature import Presence
from sqlalchemy import select

from spade_memory.server.embedded.stanzas import written

logger = logging.getLogger("spade_memory.xmpp_server")


class DurablePresence(Presence):  # type: ignore[misc]
    """pyjabber's presence handling, with the waiting subscriptions read back whole."""

    __slots__ = ()

    async def get_all_pending_presence(self) -> None:
        """Read every request waiting for an account, as it was kept."""
        async with await DB.connection_async() as connection:
            found = await connection.execute(
                select(Model.PendingSubs.c.jid, Model.PendingSubs.c.item)
            )
            rows = found.fetchall()
        for account, item in rows:
            try:
                stanza = written(ET.fromstring(item))
            except ET.ParseError as error:
                logger.warning("left out a kept subscription for %s: %s", account, error)
                continue
            self._pending.setdefault(account, []).append(stanza)

    async def delete_pending_presence(self, jid: str) -> None:
        """Forget every request delivered to ``jid`` (the database's and ours)."""
        await super().delete_pending_presence(jid)
        self._pending.pop(jid, None)


def keep_pending_subscriptions() -> None:
    """Make the process's presence handler (a pyjabber singleton) ``DurablePresence``;
    call it before the server starts (it reads the requests then)."""
    handler = Presence()
    handler.__class__ = DurablePresence
