"""When a stored item stops being visible: ``ttl_seconds`` or ``expires_at`` on a write.

Shared by every service whose items may expire (long-term memories, conversation notes,
working-memory items). An expired item is invisible to every read at once and purged
later in the background; a store keeps only the moment it expires (epoch seconds), so
reads compare one number.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Annotated

from pydantic import AfterValidator, AwareDatetime, Field

MAX_TTL_SECONDS = 100 * 365 * 24 * 3600
"""Longest ``ttl_seconds`` accepted (a century; anything longer is a mistake)."""

TtlSeconds = Annotated[
    float,
    Field(
        gt=0,
        le=MAX_TTL_SECONDS,
        description="Optional: forget this after so many seconds (it is invisible at once"
        " when they have passed, and purged soon after)",
    ),
]


def _within_years(moment: datetime) -> datetime:
    if not 1970 <= moment.year <= 9000:  # in UTC too, and as epoch seconds
        raise ValueError("an expiry must fall between the years 1970 and 9000")
    return moment


ExpiresAt = Annotated[
    AwareDatetime,
    AfterValidator(_within_years),
    Field(
        description="Optional: forget this at that moment (an ISO 8601 date and time with its"
        " UTC offset, e.g. 2026-12-31T23:00:00+00:00)"
    ),
]

PURGE_EVERY_SECONDS = 60.0
"""How often a store deletes what has expired (reads hide it meanwhile)."""


def expiry_of(ttl_seconds: float | None, expires_at: datetime | None) -> float | None:
    """The epoch second an item given ``ttl_seconds`` or ``expires_at`` expires (the sooner
    when both are given; None when neither is)."""
    moments = []
    if ttl_seconds is not None:
        moments.append(time.time() + ttl_seconds)
    if expires_at is not None:
        moments.append(expires_at.timestamp())
    return min(moments) if moments else None


def as_moment(epoch: float | None) -> datetime | None:
    """An expiry as replies give it (UTC), or None."""
    return None if epoch is None else datetime.fromtimestamp(epoch, tz=timezone.utc)


LIVE = "(expires_at IS NULL OR expires_at > ?)"
"""SQL: the row has not expired at the moment bound to ``?`` (``time.time()``)."""
