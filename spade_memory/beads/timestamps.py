"""RFC 3339 timestamps as beads writes them, compared without losing nanoseconds.

bd writes times with up to nine fractional digits and any UTC offset;
Python's ``datetime`` keeps only microseconds, so reading and re-writing a
timestamp through it would change the string. Timestamps therefore stay the
strings they were, and are only parsed (to integer nanoseconds) to compare.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone

_RFC3339 = re.compile(
    r"(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|z|[+-]\d{2}:\d{2})"
)


def nanoseconds(timestamp: str) -> int:
    """Nanoseconds since the epoch of an RFC 3339 timestamp."""
    match = _RFC3339.fullmatch(timestamp)
    if match is None:
        raise ValueError(f"not an RFC 3339 timestamp: {timestamp!r}")
    day, clock, fraction, offset = match.groups()
    zone = "+00:00" if offset in ("Z", "z") else offset
    seconds = int(datetime.fromisoformat(f"{day}T{clock}{zone}").timestamp())
    return seconds * 1_000_000_000 + int((fraction or "").ljust(9, "0"))


def format_ns(ns: int) -> str:
    """The UTC RFC 3339 string of ``ns``, with bd's trailing zeros trimmed."""
    seconds, fraction = divmod(ns, 1_000_000_000)
    base = datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    digits = f"{fraction:09d}".rstrip("0")
    return f"{base}.{digits}Z" if digits else f"{base}Z"


def now_after(*earlier: str | None) -> str:
    """Now, but strictly later than every given timestamp.

    ``bd import`` skips a line that is not newer than its own copy, so every
    change must move ``updated_at`` forward even when the clock has not.
    """
    from time import time_ns

    ns = (time_ns() // 1000) * 1000  # microseconds, like bd's SQLite-era exports
    for timestamp in earlier:
        if timestamp:
            try:
                ns = max(ns, nanoseconds(timestamp) + 1000)
            except ValueError:
                continue
    return format_ns(ns)
