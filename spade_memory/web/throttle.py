"""Password guessing, slowed: login attempts counted per account and per address.

Every attempt counts as a failure from the moment it starts (so fifty guesses sent at
once are counted as fifty, not as none until their answers come); a login that succeeds
takes its own count back and clears its account's. Past ``free`` failures, the next
attempt of that account or address waits ``first`` seconds, doubling with each failure
up to ``most``. What is remembered is bounded (``keys``): the oldest entries go first.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

FREE_FAILURES = 5
"""Failed logins of one account, or from one address, before any wait."""
FIRST_WAIT = 1.0
MOST_WAIT = 15 * 60.0
FORGET_AFTER = 60 * 60.0
"""Seconds after its last failure that a key's count is forgotten."""
KEYS = 10_000
"""Accounts and addresses remembered at most."""


@dataclass
class _Count:
    failures: int = 0
    last: float = 0.0
    until: float = 0.0
    """No attempt before this moment."""


class LoginThrottle:
    """The counts of failed logins, by account and by address."""

    def __init__(
        self, free: int = FREE_FAILURES, first: float = FIRST_WAIT, most: float = MOST_WAIT,
        clock: Callable[[], float] = time.monotonic, keys: int = KEYS,
    ) -> None:  # fmt: skip
        self.free, self.first, self.most, self.clock, self.keys = free, first, most, clock, keys
        self._counts: OrderedDict[str, _Count] = OrderedDict()

    def begin(self, account: str, address: str) -> float:
        """Start an attempt of ``account`` from ``address``: returns 0.0 once it is
        counted, or the seconds to wait (and counts nothing) while either must wait."""
        now = self.clock()
        keys = (f"account:{account.lower()}", f"address:{address}")
        wait = max(self._count(key, now).until - now for key in keys)
        if wait > 0:
            return wait
        for key in keys:
            count = self._count(key, now)
            count.failures += 1
            count.last = now
            count.until = now + self._wait(count.failures)
        return 0.0

    def succeeded(self, account: str, address: str) -> None:
        """The attempt begun for ``account`` from ``address`` logged in."""
        self._counts.pop(f"account:{account.lower()}", None)
        count = self._counts.get(f"address:{address}")
        if count is not None:
            count.failures = max(0, count.failures - 1)
            count.until = count.last + self._wait(count.failures)

    def _wait(self, failures: int) -> float:
        """Seconds an attempt waits after ``failures`` failures."""
        over = failures - self.free
        return 0.0 if over < 0 else min(self.most, self.first * 2.0**over)

    def _count(self, key: str, now: float) -> _Count:
        count = self._counts.get(key)
        if count is None or now - count.last > FORGET_AFTER:
            count = self._counts[key] = _Count(last=now)
        self._counts.move_to_end(key)
        while len(self._counts) > self.keys:
            self._counts.popitem(last=False)
        return count
