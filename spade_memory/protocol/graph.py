"""The entity graph's records: what a space's memories name. The reads that return them
(``entities``, ``memories_about``, ``related_memories``) are with the other ops in
``memories``.

Entities are found without a model at store time (people, places, titles, days and
recurring words: ``base_memory.graph``); these reads need what ``list_memories`` needs
(reading the spaces), so a sender learns no entity of a space it cannot read.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from spade_memory.protocol.ops import Record

EntityKind = Literal["name", "title", "date", "term"]
EntityName = Annotated[str, Field(min_length=1, max_length=200)]


class Entity(Record):
    """Something the memories of a space name: ``key`` is how it is filed (case-folded,
    no possessive), ``name`` one way it was written (the least of them in the engine's
    order, not always the first); ``memories`` counts the current memories naming it,
    ``subject_of`` those it is the subject of (a speaker, or the name a memory starts
    with)."""

    key: str
    name: str
    kind: EntityKind
    memories: int
    subject_of: int = 0
    space: str | None = None
    """The shared space it is named in (None: the sender's own)."""


class EntityList(Record):
    """Result of ``entities``: the most named first."""

    entities: list[Entity] = Field(default_factory=list)
