"""Tags and metadata a caller attaches to what it stores, bounded where they are parsed.

Tags become beads labels as they are, so they follow bd's label rules (no whitespace,
no comma) and may not take a label prefix this package reserves; metadata becomes the
issue's metadata, where ``spade_memory`` is this package's own key.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import AfterValidator, Field

from spade_memory.protocol.beads_labels import OUR_METADATA, RESERVED_LABEL_PREFIXES

MAX_TAGS = 20
MAX_METADATA_BYTES = 4_096
"""Largest metadata object, as compact JSON in UTF-8."""


def _not_reserved(tag: str) -> str:
    if tag.startswith(RESERVED_LABEL_PREFIXES):
        raise ValueError(f"a tag may not start with {', '.join(RESERVED_LABEL_PREFIXES)}")
    return tag


Tag = Annotated[
    str,
    Field(min_length=1, max_length=100, pattern=r"^[^\s,]+$"),
    AfterValidator(_not_reserved),
]
"""One tag: up to 100 characters, no whitespace or comma, no reserved prefix."""


def _distinct(tags: list[str]) -> list[str]:
    return list(dict.fromkeys(tags)) if len(tags) > 1 else tags


Tags = Annotated[list[Tag], Field(max_length=MAX_TAGS), AfterValidator(_distinct)]
"""At most ``MAX_TAGS`` tags, duplicates dropped, in the order given."""


def _bounded(metadata: dict[str, Any]) -> dict[str, Any]:
    if not metadata:  # what most stores carry: nothing to measure
        return metadata
    if OUR_METADATA in metadata:
        raise ValueError(f"metadata may not use the reserved key {OUR_METADATA!r}")
    try:
        size = len(dumps(metadata).encode("utf-8", "surrogatepass"))
    except ValueError:  # NaN or infinity: no JSON text can carry them
        raise ValueError("metadata numbers must be finite") from None
    if size > MAX_METADATA_BYTES:
        raise ValueError(f"metadata is {size} bytes as JSON; at most {MAX_METADATA_BYTES}")
    return metadata


MetadataKey = Annotated[str, Field(min_length=1, max_length=64, pattern=r'^[^"\\]+$')]
Metadata = Annotated[dict[MetadataKey, Any], AfterValidator(_bounded)]
"""A JSON object of at most ``MAX_METADATA_BYTES``; keys up to 64 characters, no quote or
backslash (so a filter can name them safely)."""

Scalar = (
    str
    | bool
    | Annotated[int, Field(ge=-(2**63), le=2**63 - 1)]
    | Annotated[float, Field(allow_inf_nan=False)]
    | None
)
"""A value a metadata filter compares (integers as SQLite holds them, finite floats)."""
MetadataFilter = Annotated[dict[MetadataKey, Scalar], Field(min_length=1, max_length=16)]
"""Metadata keys and the exact (scalar) values a filter asks for."""


def dumps(value: Any) -> str:
    """The compact JSON text a store keeps."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
