"""Typed errors shared by the memory agents and their clients.

Each error carries a machine-readable ``condition`` named after XMPP stanza
error conditions, so a peer in any language can branch on it, plus a human
text. A handler raises; the serving behaviour turns the error into a
``failure`` (or ``refuse``) reply; the client turns that reply back into the
same exception class.
"""

from __future__ import annotations

from enum import Enum
from typing import ClassVar


class Condition(str, Enum):
    """Why a request was not served."""

    BAD_REQUEST = "bad-request"
    NOT_AUTHORIZED = "not-authorized"
    ITEM_NOT_FOUND = "item-not-found"
    RESOURCE_CONSTRAINT = "resource-constraint"
    INTERNAL_SERVER_ERROR = "internal-server-error"
    SERVICE_UNAVAILABLE = "service-unavailable"
    CONFLICT = "conflict"
    REMOTE_SERVER_TIMEOUT = "remote-server-timeout"
    FEATURE_NOT_IMPLEMENTED = "feature-not-implemented"
    PENDING_APPROVAL = "pending-approval"


class MemoryServiceError(Exception):
    """Base class: a request to a memory agent did not succeed."""

    condition: ClassVar[Condition] = Condition.INTERNAL_SERVER_ERROR

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text

    def __str__(self) -> str:
        return f"{self.condition.value}: {self.text}"


class BadRequest(MemoryServiceError):
    """The request could not be parsed or its values are invalid."""

    condition = Condition.BAD_REQUEST


class NotAuthorized(MemoryServiceError):
    """The sender may not do this (for example, it named another owner)."""

    condition = Condition.NOT_AUTHORIZED


class ItemNotFound(MemoryServiceError):
    """No such item for this owner (another owner's items are never revealed)."""

    condition = Condition.ITEM_NOT_FOUND


class ResourceConstraint(MemoryServiceError):
    """A configured limit was exceeded (content size, result count, ...)."""

    condition = Condition.RESOURCE_CONSTRAINT


class Busy(ResourceConstraint):
    """The sender has too many requests in flight; the same request may be sent again
    (same request id) after ``retry_after`` seconds. ``MemoryClient`` does so itself."""

    def __init__(self, text: str, retry_after: float = 0.5) -> None:
        super().__init__(text)
        self.retry_after = retry_after


class Conflict(MemoryServiceError):
    """The name is taken (a space of that name belongs to someone else)."""

    condition = Condition.CONFLICT


class InternalServerError(MemoryServiceError):
    """The agent failed unexpectedly; details stay in the agent's log."""

    condition = Condition.INTERNAL_SERVER_ERROR


class ServiceUnavailable(MemoryServiceError):
    """The memory agent cannot serve this now: its store is damaged (see its log and
    ``spade-memory check``); nothing is written until it is restored."""

    condition = Condition.SERVICE_UNAVAILABLE


class FeatureNotImplemented(MemoryServiceError):
    """This agent runs without what the op needs (the entity graph of an agent started
    with ``--no-entity-graph``)."""

    condition = Condition.FEATURE_NOT_IMPLEMENTED


class PendingApproval(MemoryServiceError):
    """The write waits for an admin of a governed space: it was kept as the proposal
    ``proposal`` (an id for ``decide_proposal``), and its proposer hears the outcome."""

    condition = Condition.PENDING_APPROVAL

    def __init__(self, text: str, proposal: str = "") -> None:
        super().__init__(text)
        self.proposal = proposal


class MemoryTimeout(MemoryServiceError):
    """No reply arrived in time, even after one retry with the same request id."""

    condition = Condition.REMOTE_SERVER_TIMEOUT


_BY_CONDITION: dict[Condition, type[MemoryServiceError]] = {
    cls.condition: cls
    for cls in (
        BadRequest,
        NotAuthorized,
        ItemNotFound,
        ResourceConstraint,
        InternalServerError,
        ServiceUnavailable,
        Conflict,
        MemoryTimeout,
        FeatureNotImplemented,
    )
}


def error_for(
    condition: str, text: str, retry_after: float | None = None, proposal: str | None = None
) -> MemoryServiceError:
    """Rebuild the typed exception for a condition received over the wire (``Busy`` when
    the reply says when to try again, ``PendingApproval`` with its proposal's id)."""
    if retry_after is not None and condition == Condition.RESOURCE_CONSTRAINT.value:
        return Busy(text, retry_after)
    if condition == Condition.PENDING_APPROVAL.value:
        return PendingApproval(text, proposal or "")
    try:
        cls = _BY_CONDITION[Condition(condition)]
    except ValueError:
        cls = InternalServerError
    return cls(text)
