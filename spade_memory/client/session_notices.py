"""The interaction memory agent's notices of changed working sessions, on the client.

A member subscribed to a shared space (``changes(space)``, ``on_change``: the base
memory agent keeps the subscription) is also told, by the interaction memory agent,
when a working session kept in that space changes: which session, who changed it, by
which op. ``SessionNotices`` (one behaviour per client agent) hands each notice to the
callbacks listening to its space; a callback reads the session again to see the change.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Collection

from pydantic import ValidationError

from spade_memory.protocol.working import SessionChanged
from spade_memory.xmpp import wire
from spade_memory.xmpp.lifecycle import WakesWhenKilled

logger = logging.getLogger("spade_memory.spaces")

Listener = Callable[[SessionChanged], None]


class SessionNotices(WakesWhenKilled):
    """Hands the interaction memory agent's session notices to their space's listeners."""

    def __init__(self, senders: Collection[str]) -> None:
        super().__init__()
        self.senders = frozenset(senders)
        """The interaction memory agents (one, or a pool): notices from anyone else are
        dropped."""
        self.listeners: defaultdict[str, dict[object, Listener]] = defaultdict(dict)

    def listen(self, space: str, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` with each notice of ``space`` (while the sender is subscribed
        to it); returns the call that stops it."""
        key = object()
        self.listeners[space][key] = listener

        def stop() -> None:
            self.listeners[space].pop(key, None)

        return stop

    async def run(self) -> None:
        notice = await self.receive(timeout=1.0)
        if notice is None or wire.bare(notice.sender) not in self.senders:
            return
        try:
            change = SessionChanged.model_validate_json(notice.body or "")
        except ValidationError:
            logger.warning("a malformed session notice from %s was dropped", notice.sender)
            return
        for listener in list(self.listeners.get(change.space, {}).values()):
            listener(change)
