"""Requests waiting for a memory agent, taken in a fair order between senders.

A memory agent serves at most ``Limits.max_in_progress`` requests at once.
The rest wait here, one queue per sender, and are taken round-robin: the
next request served is the oldest of the sender whose turn it is, so one
sender's backlog never sits in front of everyone else's (a bystander's
request waits for at most one request of each other sender).

When the waiting room is full, the sender with the most waiting gives up its
newest request to a sender with fewer (``longest``, ``drop_newest``): however
many accounts a flood comes from, a sender under its share of the room is
never turned away.

A sender is also passed over while what it has being served is at its share
(``may_start``): a batch of twenty reads weighs twenty, so one sender's batches
cannot hold every slot the others need. And a sender that was lately answered more
bytes than its rate allows (``AnswerRate``) waits until its answers drain, whoever
else waits: the cost of an answer is mostly its bytes (read, encoded, escaped and sent
through the XMPP server), so no account's large reads can take the agent's core.
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class FairQueue(Generic[T]):
    """Items per sender; ``take`` gives the next sender in turn its oldest item."""

    def __init__(self) -> None:
        self._queues: OrderedDict[str, deque[T]] = OrderedDict()
        self._count = 0

    def put(self, sender: str, item: T) -> None:
        """Queue ``item`` behind ``sender``'s earlier ones (a new sender's turn comes last)."""
        self._queues.setdefault(sender, deque()).append(item)
        self._count += 1

    def take(self, may_start: Callable[[str, T], bool] | None = None) -> T | None:
        """The oldest item of the sender whose turn it is (its turn then moves to the
        back), or None when nothing waits. ``may_start(sender, item)`` False passes over
        that sender (it keeps its turn): None when no sender may start."""
        if not self._queues:
            return None
        for sender, queue in self._queues.items():
            if may_start is None or may_start(sender, queue[0]):
                break
        else:
            return None
        item = queue.popleft()
        self._count -= 1
        if queue:
            self._queues.move_to_end(sender)
        else:
            del self._queues[sender]
        return item

    def senders(self) -> Iterator[str]:
        """The senders with items waiting, in turn."""
        return iter(self._queues)

    def count(self, sender: str) -> int:
        """How many items of ``sender`` wait."""
        queue = self._queues.get(sender)
        return 0 if queue is None else len(queue)

    def longest(self) -> tuple[str, int] | None:
        """The sender with the most items waiting (the first in turn among equals), and
        how many; None when nothing waits."""
        if not self._queues:
            return None
        sender, queue = max(self._queues.items(), key=lambda entry: len(entry[1]))
        return sender, len(queue)

    def drop_newest(self, sender: str) -> T:
        """Take back ``sender``'s newest item (it keeps its turn). Raises ``KeyError``
        when none of its items wait."""
        queue = self._queues[sender]
        item = queue.pop()
        self._count -= 1
        if not queue:
            del self._queues[sender]
        return item

    def __len__(self) -> int:
        return self._count


class AnswerRate:
    """Bytes answered per sender, drained at ``per_second`` (0: no limit). A sender owing
    more than one second's worth waits (``wait``) until it owes no more than that: its
    answers average ``per_second`` at most, with a second's worth at once."""

    FORGET_AFTER = 4096
    """Senders remembered before those that owe nothing are forgotten."""

    def __init__(self, per_second: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_second = per_second
        self._clock = clock
        self._owed: dict[str, tuple[float, float]] = {}
        """Bytes owed per sender, and when that was counted."""

    def owed(self, sender: str) -> float:
        """The bytes ``sender`` owes now (what it was answered, less what has drained)."""
        entry = self._owed.get(sender)
        if entry is None:
            return 0.0
        owed, at = entry
        return max(0.0, owed - (self._clock() - at) * self.per_second)

    def charge(self, sender: str, size: int) -> None:
        """Count an answer of ``size`` bytes to ``sender``."""
        if self.per_second <= 0:
            return
        if len(self._owed) >= self.FORGET_AFTER:
            self._owed = {who: entry for who, entry in self._owed.items() if self.owed(who)}
        self._owed[sender] = (self.owed(sender) + size, self._clock())

    def wait(self, sender: str) -> float:
        """Seconds until ``sender`` may be served again: 0 when it owes a second's worth or
        less."""
        if self.per_second <= 0:
            return 0.0
        return max(0.0, self.owed(sender) / self.per_second - 1.0)
