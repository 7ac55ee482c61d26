"""Requests waiting for a memory agent, taken in a fair order between senders.

A memory agent serves at most ``Limits.max_in_progress`` requests at once.
The rest wait here, one queue per sender, and are taken round-robin: the
next request served is the oldest of the sender whose turn it is, so one
sender's backlog never sits in front of everyone else's (a bystander's
request waits for at most one request of each other sender).
"""

from __future__ import annotations

from collections import OrderedDict, deque
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

    def take(self) -> T | None:
        """The oldest item of the sender whose turn it is (its turn then moves to the
        back), or None when nothing waits."""
        if not self._queues:
            return None
        sender, queue = next(iter(self._queues.items()))
        item = queue.popleft()
        self._count -= 1
        if queue:
            self._queues.move_to_end(sender)
        else:
            del self._queues[sender]
        return item

    def __len__(self) -> int:
        return self._count
