"""A free-form JSON object a caller sends (a finding's metadata, a session's context,
preferences, a beads memory's metadata): finite numbers only.

JSON has no NaN or infinity, yet Python's parser and pydantic's accept ``NaN`` and
``Infinity``: such a value was answered as given, then stored as ``null`` (or written
into a beads file no other JSON reader opens). It is a ``bad-request`` where it is
parsed instead.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import AfterValidator


def _finite(value: dict[str, Any]) -> dict[str, Any]:
    if value:  # most carry nothing to check
        try:
            json.dumps(value, allow_nan=False, default=repr)  # other objects: not checked
        except ValueError:
            raise ValueError("numbers must be finite (JSON has no NaN or infinity)") from None
    return value


JsonObject = Annotated[dict[str, Any], AfterValidator(_finite)]
"""A JSON object whose numbers, at any depth, are finite."""
