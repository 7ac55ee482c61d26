"""Answers to recent writes, for a retry of the same request id.

SQLite stores record a request id in the write's own transaction (see
``requests``). Files of the context directory and beads writes other than a
store cannot, so a service answers a retried request id from here instead;
the serving behaviour keeps answers here too, so a retry is answered before
any limit is checked. Only writes are kept (a read is simply served again),
and within a budget: at most ``capacity`` answers and ``max_bytes`` bytes of
their JSON, the oldest forgotten first. A reader sending fresh request ids
for large answers once held hundreds of megabytes here. After a restart of
the agent a retry is applied again (said in the README).
"""

from __future__ import annotations

from collections import OrderedDict

from spade_memory.protocol.ops import Record

DEFAULT_CAPACITY = 10_000
DEFAULT_BYTES = 16 << 20


class RecentAnswers:
    """The last answers by (owner, request id), within a count and a byte budget."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY, max_bytes: int = DEFAULT_BYTES) -> None:
        self.capacity = capacity
        self.max_bytes = max_bytes
        self.bytes = 0
        """Bytes of JSON of the answers kept."""
        self._answers: OrderedDict[tuple[str, str], tuple[Record, int]] = OrderedDict()

    def get(self, owner: str, request_id: str | None) -> Record | None:
        """The answer already given to this request id, if it is still kept."""
        if request_id is None:
            return None
        kept = self._answers.get((owner, request_id))
        return None if kept is None else kept[0]

    def keep(
        self, owner: str, request_id: str | None, answer: Record, size: int | None = None
    ) -> None:
        """Remember ``answer`` (``size`` bytes of JSON; measured when not given) for a retry
        of the same request id; an answer over the whole budget is not kept."""
        if request_id is None:
            return
        size = len(answer.model_dump_json()) if size is None else size
        if size > self.max_bytes:
            return
        key = (owner, request_id)
        if key in self._answers:
            self.bytes -= self._answers.pop(key)[1]
        self._answers[key] = (answer, size)
        self.bytes += size
        while len(self._answers) > self.capacity or self.bytes > self.max_bytes:
            self.bytes -= self._answers.popitem(last=False)[1][1]

    def forget(self, owner: str, dry_run: bool = False) -> int:
        """Delete every answer kept for ``owner`` (unless ``dry_run``); how many there were."""
        keys = [key for key in self._answers if key[0] == owner]
        if not dry_run:
            for key in keys:
                self.bytes -= self._answers.pop(key)[1]
        return len(keys)

    def __len__(self) -> int:
        return len(self._answers)
