"""Statements over lists of values, on either engine: one ``?`` per value, and a long
list cut into parts a statement can take."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TypeVar

T = TypeVar("T")

MOST_VALUES = 30_000
"""Values one statement is given at most (SQLite and asyncpg refuse more than 32,766)."""


def placeholders(values: Collection[object]) -> str:
    """One ``?`` per value, for ``IN (...)``."""
    return ", ".join("?" * len(values))


def parts(values: Sequence[T], size: int = MOST_VALUES) -> list[Sequence[T]]:
    """``values`` in slices of ``size`` (at least one each): a long list read or written
    in several statements."""
    size = max(1, size)
    return [values[start : start + size] for start in range(0, len(values), size)]
