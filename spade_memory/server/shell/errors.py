"""The shell's mistakes, said in one line: a ``ShellError`` of its own, and a pydantic
validation error told as the field, what was given and what it may be."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError


class ShellError(Exception):
    """A mistake a person can mend: printed as one sentence, exit status 1."""


def field_problem(error: ValidationError) -> str:
    """The first problem of ``error`` as ``field: what is wrong`` (``category: 'fcat' is not
    one of fact, pattern, preference, capability``), not pydantic's several lines."""
    first: Any = error.errors(include_url=False)[0]
    where = ".".join(str(part) for part in first["loc"]) or "value"
    given = first.get("input")
    if first["type"] == "literal_error":
        allowed = str(first.get("ctx", {}).get("expected", ""))
        allowed = allowed.replace("'", "").replace(" or ", ", ")
        return f"{where}: {given!r} is not one of {allowed}"
    if first["type"] == "missing":
        return f"{where}: missing"
    message = str(first["msg"])
    return f"{where}: {message[:1].lower()}{message[1:]} (given {given!r})"
