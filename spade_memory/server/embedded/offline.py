"""Messages kept for an account until one of its sessions is available, within bounds.

pyjabber kept every message to a JID with no available session in a dict of
lists, without bound and keyed by the full address: messages to invented JIDs
held their memory for ever, and a reply to a session that had gone waited for a
resource that never comes back. Here a message is kept only for an account that
exists, under its bare JID (RFC 6121 §8.5.3.2.1: a message to a resource that is
not there is handled as one to the bare JID), in arrival order, and refused (the
sender gets an error) once the account's share or the server's total would be
exceeded.
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass

logger = logging.getLogger("spade_memory.xmpp_server")


@dataclass(frozen=True)
class OfflineLimits:
    """How much the server keeps for accounts with no available session (0 messages: none)."""

    messages_per_account: int = 100
    """Most messages kept for one account."""
    bytes_per_account: int = 1 << 20
    """Most bytes of messages kept for one account."""
    bytes_in_all: int = 16 << 20
    """Most bytes of messages kept for all accounts together."""


class OfflineMessages:
    """The kept messages, per bare JID, oldest first."""

    def __init__(self, limits: OfflineLimits | None = None) -> None:
        self.limits = limits or OfflineLimits()
        self._kept: dict[str, deque[bytes]] = {}
        self._bytes: dict[str, int] = {}
        self.total = 0
        """Bytes kept, all accounts together."""
        self._warned: set[str] = set()

    def keep(self, account: str, stanza: bytes) -> str | None:
        """Keep ``stanza`` for ``account`` (a bare JID). Returns None when kept, else why
        not (one sentence, for the error sent back)."""
        limits = self.limits
        kept = self._kept.get(account, ())
        held = self._bytes.get(account, 0)
        if len(kept) >= limits.messages_per_account:
            why = f"{limits.messages_per_account} messages already wait for {account}"
        elif held + len(stanza) > limits.bytes_per_account:
            why = f"{limits.bytes_per_account} bytes of messages already wait for {account}"
        elif self.total + len(stanza) > limits.bytes_in_all:
            why = f"the server keeps at most {limits.bytes_in_all} bytes of offline messages"
        else:
            self._kept.setdefault(account, deque()).append(stanza)
            self._bytes[account] = held + len(stanza)
            self.total += len(stanza)
            return None
        if account not in self._warned:  # once until the account takes its messages
            self._warned.add(account)
            logger.warning("offline messages to %s refused: %s", account, why)
        return why

    def take(self, account: str) -> list[bytes]:
        """Every message kept for ``account``, oldest first; they are no longer kept."""
        kept = self._kept.pop(account, deque())
        self.total -= self._bytes.pop(account, 0)
        self._warned.discard(account)
        return list(kept)

    def count(self, account: str) -> int:
        """How many messages wait for ``account``."""
        return len(self._kept.get(account, ()))
