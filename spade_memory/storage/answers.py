"""Answers to recent requests, for effects that no transaction can record.

SQLite stores record a request id in the write's own transaction (see
``requests``). Files of the context directory and beads writes other than a
store cannot, so a service answers a retried request id from here instead:
the last ``capacity`` answers of this run, per (owner, request id). After a
restart of the agent such a retry is applied again (said in the README).
"""

from __future__ import annotations

from collections import OrderedDict

from ..ops import Record

DEFAULT_CAPACITY = 10_000


class RecentAnswers:
    """The last ``capacity`` answers by (owner, request id), oldest forgotten first."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self.capacity = capacity
        self._answers: OrderedDict[tuple[str, str], Record] = OrderedDict()

    def get(self, owner: str, request_id: str | None) -> Record | None:
        """The answer already given to this request id, if it is still kept."""
        if request_id is None:
            return None
        return self._answers.get((owner, request_id))

    def keep(self, owner: str, request_id: str | None, answer: Record) -> None:
        """Remember ``answer`` for a retry of the same request id."""
        if request_id is None:
            return
        self._answers[(owner, request_id)] = answer
        while len(self._answers) > self.capacity:
            self._answers.popitem(last=False)

    def forget(self, owner: str, dry_run: bool = False) -> int:
        """Delete every answer kept for ``owner`` (unless ``dry_run``); how many there were."""
        keys = [key for key in self._answers if key[0] == owner]
        if not dry_run:
            for key in keys:
                del self._answers[key]
        return len(keys)

    def __len__(self) -> int:
        return len(self._answers)
