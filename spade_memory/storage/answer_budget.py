"""The bytes the answers of one batch may still carry, spent as rows are read.

A read that could return more than a process should hold (a conversation's notes, a
sender's conversations, a page of memories) reads its rows a chunk at a time and stops
where the budget (``Limits.max_answer_bytes``) runs out, answering the next page's
offset; the process never holds much more than one answer and one chunk.
"""

from __future__ import annotations

from spade_memory.protocol.errors import ResourceConstraint

CHUNK_ROWS = 128
"""Rows a paged read fetches at a time (each row is bounded by the content limit)."""

FIELDS_BYTES = 64
"""A row's JSON beside its texts (keys, quotes, commas), roughly."""


class AnswerBudget:
    """Bytes left for the answers of one batch (or of one request)."""

    def __init__(self, left: int) -> None:
        self.left = left

    def rows_that_could_fit(self, smallest: int) -> int:
        """The most rows of at least ``smallest`` bytes what is left could hold (at least
        one, to find out): a batch whose budget is spent reads a row per read."""
        return max(1, self.left // smallest)

    def spend(self, size: int) -> bool:
        """Take ``size`` bytes; returns False, taking nothing, when fewer are left."""
        if size > self.left:
            return False
        self.left -= size
        return True


def over_budget() -> ResourceConstraint:
    """The refusal of a read whose first row does not fit what is left."""
    return ResourceConstraint(
        "this answer would pass the bytes one answer may carry (run --max-answer-bytes;"
        " a batch's answers count together): ask for fewer, or in a batch of its own"
    )
