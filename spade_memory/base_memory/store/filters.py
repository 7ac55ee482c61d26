"""Which memories an op selects, as one SQL condition on ``memories m``.

Every read goes through it, so an expired memory is invisible to each of them at once
(the background purge deletes it later), and so is one no longer valid (superseded, or
past its ``valid_to``) unless the read asks for another moment; the filters of a
``Filtered`` op (tags, metadata, dates, authors) and the categories asked for narrow it
further. Values are always bound parameters, never text in the statement. Tags and
metadata are JSON text on both engines: SQLite reads them with ``json_each`` and
``json_type``, PostgreSQL as ``jsonb``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from spade_memory.protocol.memories import Filtered
from spade_memory.storage.postgres import Dialect
from spade_memory.storage.statements import placeholders


@dataclass
class Selection:
    """A condition on ``memories m`` and its parameters."""

    sql: str = "TRUE"
    params: list[Any] = field(default_factory=list)
    narrows: bool = False
    """Whether it may leave out a live memory of the spaces searched (meaning search must
    then check what it finds)."""


@dataclass(frozen=True)
class Moment:
    """When a read looks: what was valid ``as_of`` (None: now), as the store knew it
    ``known_at`` (None: as it knows it now)."""

    as_of: datetime | None = None
    known_at: datetime | None = None

    @classmethod
    def of(cls, op: object) -> Moment:
        """The moment ``op`` asks for (its ``as_of`` and ``known_at``, if it has them)."""
        return cls(getattr(op, "as_of", None), getattr(op, "known_at", None))

    @property
    def now(self) -> bool:
        return self.as_of is None and self.known_at is None


NOW = Moment()
"""What every read looks at unless it asks otherwise."""


def select(
    op: Filtered[Any] | None,
    categories: Sequence[str] | None = None,
    *,
    expiring: bool = True,
    now: float | None = None,
    dialect: Dialect = "sqlite",
    moment: Moment | None = NOW,
    dated: bool = True,
) -> Selection:
    """The condition for ``op``'s filters and ``categories``, live memories only
    (``expiring`` False: no memory has an expiry, so none is checked), valid at
    ``moment`` (None: at any time; ``dated`` False: no memory has a validity or was
    superseded, so none is checked for now), in the SQL of ``dialect``."""
    parts: list[str] = []
    params: list[Any] = []
    at = time.time() if now is None else now
    if expiring:
        parts.append("(m.expires_at IS NULL OR m.expires_at > ?)")
        params.append(at)
    if moment is not None and (dated or not moment.now):
        _valid(moment, at, parts, params)
    if categories is not None:
        parts.append(f"m.category IN ({placeholders(categories)})")
        params.extend(categories)
    if op is not None:
        _tags(op, parts, params, _TAG_VALUES[dialect])
        (_pg_metadata if dialect == "postgresql" else _metadata)(op, parts, params)
        _dates(op, parts, params)
        if op.authors:
            parts.append(f"m.owner IN ({placeholders(op.authors)})")
            params.extend(op.authors)
    return Selection(" AND ".join(parts) or "TRUE", params, narrows=bool(parts))


def _valid(moment: Moment, now: float, parts: list[str], params: list[Any]) -> None:
    """Memories valid at ``moment.as_of`` (default: ``known_at``, else now); with
    ``known_at``, as the store held them then: recorded by then, and a validity closed
    after then (a supersede, an update) not yet closed."""
    known = None if moment.known_at is None else moment.known_at.timestamp()
    at = moment.as_of.timestamp() if moment.as_of is not None else (known or now)
    parts.append("(m.valid_from IS NULL OR m.valid_from <= ?)")
    params.append(at)
    if known is None:
        parts.append("(m.valid_to IS NULL OR m.valid_to > ?)")
        params.append(at)
    else:
        parts.append("m.created_at <= ?")
        parts.append("(m.valid_to IS NULL OR m.valid_to > ? OR m.retired_at > ?)")
        params.extend([known, at, known])


_TAG_VALUES = {
    "sqlite": "json_each(m.tags) t",
    "postgresql": "jsonb_array_elements_text(m.tags::jsonb) t(value)",
}
"""A memory's tags as rows ``t`` with a column ``value``, in each engine's JSON."""


def _tags(op: Filtered[Any], parts: list[str], params: list[Any], tag_values: str) -> None:
    if op.tags_any:
        parts.append(
            f"EXISTS (SELECT 1 FROM {tag_values} WHERE t.value IN ({placeholders(op.tags_any)}))"
        )
        params.extend(op.tags_any)
    if op.tags_all:
        parts.append(
            f"(SELECT COUNT(DISTINCT t.value) FROM {tag_values}"
            f" WHERE t.value IN ({placeholders(op.tags_all)})) = ?"
        )
        params.extend([*op.tags_all, len(op.tags_all)])


def _metadata(op: Filtered[Any], parts: list[str], params: list[Any]) -> None:
    for key, value in (op.metadata_equals or {}).items():
        path = f'$."{key}"'  # keys hold no quote or backslash (``tags.MetadataKey``)
        if value is None or isinstance(value, bool):
            kind = "null" if value is None else ("true" if value else "false")
            parts.append("json_type(m.metadata, ?) = ?")
            params.extend([path, kind])
        elif isinstance(value, str):
            parts.append("json_type(m.metadata, ?) = 'text' AND json_extract(m.metadata, ?) = ?")
            params.extend([path, path, value])
        else:
            parts.append(
                "json_type(m.metadata, ?) IN ('integer', 'real')"
                " AND json_extract(m.metadata, ?) = ?"
            )
            params.extend([path, path, value])


def _pg_metadata(op: Filtered[Any], parts: list[str], params: list[Any]) -> None:
    """``_metadata`` in PostgreSQL's JSON: the same typed equality (``2 == 2.0``, and
    ``"2"`` is another value)."""
    for key, value in (op.metadata_equals or {}).items():
        field = "(m.metadata::jsonb -> ?::text)"
        if value is None or isinstance(value, bool):
            parts.append(f"{field} = ?::jsonb")
            params.extend([key, "null" if value is None else ("true" if value else "false")])
        elif isinstance(value, str):
            parts.append(f"jsonb_typeof({field}) = 'string' AND {field} #>> '{{}}' = ?")
            params.extend([key, key, value])
        else:
            parts.append(f"jsonb_typeof({field}) = 'number' AND ({field} #>> '{{}}')::float8 = ?")
            params.extend([key, key, float(value)])


def _dates(op: Filtered[Any], parts: list[str], params: list[Any]) -> None:
    for name, column, comparison in (
        ("created_after", "created_at", ">"),
        ("created_before", "created_at", "<"),
        ("accessed_after", "last_accessed", ">"),
        ("accessed_before", "last_accessed", "<"),
    ):
        moment = getattr(op, name)
        if moment is not None:
            parts.append(f"m.{column} {comparison} ?")
            params.append(moment.timestamp())
