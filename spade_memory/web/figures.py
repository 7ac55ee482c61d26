"""Numbers as a person reads them: ``1,000,000`` memories, ``309 B`` of ``1 GiB``."""

from __future__ import annotations

UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
"""Binary units, as the limits page states its defaults (a quota of 1 GiB is 2**30 bytes)."""


def count(number: int) -> str:
    """``number`` with thousands separated: ``1,000,000``."""
    return f"{number:,}"


def size(number: int) -> str:
    """A byte count in the largest unit it fills, with one decimal below ten:
    ``309 B``, ``1.5 KiB``, ``1 GiB``, ``12 MiB``."""
    value, unit = float(number), 0
    while abs(value) >= 1024 and unit < len(UNITS) - 1:
        value, unit = value / 1024, unit + 1
    if unit == 0:
        return f"{number:,} B"
    shown = f"{value:.1f}" if abs(value) < 10 else f"{value:,.0f}"
    return f"{shown.removesuffix('.0')} {UNITS[unit]}"
