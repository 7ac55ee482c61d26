"""spade_llm's dialect for the drop-ins: the argument types, exceptions and times its
callers expect.

Code written for spade_llm's memory classes passes a ``limit`` as a model sends it
(``"5"``), catches ``ValueError`` for what the memory refuses, reads naive local times and
expects a search to find only memories that hold what it looks for. The service speaks
strict types, typed failures and aware UTC; these helpers translate at the drop-in's edge
so neither side bends.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime

from pydantic import TypeAdapter, ValidationError

from spade_memory.protocol.errors import BadRequest, Busy, ResourceConstraint

_WHOLE_NUMBER: TypeAdapter[int] = TypeAdapter(int)


class LimitExceeded(ResourceConstraint, ValueError):
    """A limit of the service refused the call (content too long, a quota): both
    spade_memory's ``ResourceConstraint`` and, for spade_llm's callers, a ``ValueError``."""


class InvalidRequest(BadRequest, ValueError):
    """The service found a value invalid: both ``BadRequest`` and a ``ValueError``."""


@contextmanager
def as_value_errors() -> Iterator[None]:
    """Run a call whose refusals reach spade_llm's callers as ``ValueError``s.

    Raises ``LimitExceeded`` for a ``ResourceConstraint`` and ``InvalidRequest`` for a
    ``BadRequest`` (same text); ``Busy`` (try again later) and every other failure pass
    unchanged: they are not about the values given.
    """
    try:
        yield
    except Busy:
        raise
    except ResourceConstraint as error:
        raise LimitExceeded(error.text) from None
    except BadRequest as error:
        raise InvalidRequest(error.text) from None


def whole_number(value: object, name: str = "limit") -> int:
    """``value`` as an int, read leniently as pydantic's lax mode does (``"5"`` and ``5.0``
    are 5: models send numbers as text). Raises ``ValueError`` naming ``name`` otherwise."""
    try:
        return _WHOLE_NUMBER.validate_python(value, strict=False)
    except ValidationError:
        raise ValueError(f"{name} must be a whole number, got {value!r}") from None


def local_naive(moment: datetime) -> datetime:
    """``moment`` as spade_llm keeps times: naive, in the machine's local time."""
    return moment.astimezone().replace(tzinfo=None) if moment.tzinfo else moment


def local_naive_text(stamp: str) -> str:
    """An ISO timestamp as spade_llm writes one (naive local time); a text that is not ISO,
    or is already naive (a note imported from spade_llm), is returned as it is."""
    try:
        moment = datetime.fromisoformat(stamp)
    except ValueError:
        return stamp
    return local_naive(moment).isoformat() if moment.tzinfo else stamp
