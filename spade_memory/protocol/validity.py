"""When a memory is true, and what replaced it: the fields of facts that change.

A memory is *recorded* at ``created_at`` and is *true in the world* from ``valid_from``
to ``valid_to`` (either open: since ever, until further notice). A memory superseded by
another stops being valid where the newer one starts, and the store notes when it
learned that (its retirement), so a read can ask both "what was true then" (``as_of``)
and "what did the store hold then" (``known_at``), as Zep/Graphiti's bi-temporal facts.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AwareDatetime, Field

from spade_memory.protocol.ops import Record

AsOf = Annotated[
    AwareDatetime,
    Field(
        description="Optional: answer with what was valid at this time (ISO 8601 with a"
        " time zone) instead of now: memories superseded since then come back"
    ),
]
KnownAt = Annotated[
    AwareDatetime,
    Field(
        description="Optional: answer with what the store held at this time: memories"
        " recorded after it are left out, and those retired after it come back"
    ),
]
ValidFrom = Annotated[
    AwareDatetime,
    Field(
        description="Optional: since when this is true in the world (default: always;"
        " for a memory superseding another, now)"
    ),
]
ValidTo = Annotated[
    AwareDatetime,
    Field(description="Optional: until when this is true in the world (default: until replaced)"),
]
ConflictPolicy = Literal["auto", "report", "off"]
"""What a store does with a memory of the same space it seems to replace: ``auto``
supersedes it when the detector is confident and reports it otherwise; ``report`` only
reports; ``off`` does not look."""


class PossibleConflict(Record):
    """A stored memory that the new one seems to replace: the same subject and attribute,
    another value. The caller decides (``supersede_memory``), unless it was superseded."""

    id: str
    content: str
    subject: str
    """The subject and attribute both state (normalised), such as ``alice · lives in``."""
    was: str
    """The value the older memory states."""
    now: str
    """The value the new memory states."""
    confident: bool
    """Whether the detector was sure enough to supersede on its own (``auto``)."""
