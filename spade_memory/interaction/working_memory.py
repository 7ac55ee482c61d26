"""Working memory of one session: focus, entities, findings, context, a clarification.

A plain domain model: the methods change it in place, ``serialize`` gives a
JSON-ready dict and ``deserialize`` takes it back without loss. The
interaction memory agent keeps one per (owner, session).
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

FocusType = Literal["file", "function", "class", "module", "concept"]
Severity = Literal["info", "warning", "error", "critical"]


def _now() -> datetime:
    return datetime.now(timezone.utc)


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class Focus(_Part):
    """What the session is looking at now."""

    type: FocusType
    id: str = Field(min_length=1)
    name: str
    context: str | None = None
    set_at: datetime = Field(default_factory=_now)


class EntityRef(_Part):
    """Something the session referred to (a file, a person, a ticket, ...)."""

    type: str = Field(min_length=1)
    id: str = Field(min_length=1)
    name: str
    context: str | None = None
    timestamp: datetime = Field(default_factory=_now)


class Finding(_Part):
    """Something the session found out."""

    id: str = Field(default_factory=lambda: uuid.uuid4().hex, min_length=1)
    type: str = Field(min_length=1)
    title: str
    description: str = ""
    location: str | None = None
    severity: Severity = "info"
    evidence: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime = Field(default_factory=_now)


class Clarification(_Part):
    """A question waiting for an answer; it stops being pending after its timeout."""

    question: str = Field(min_length=1)
    options: list[str] = Field(default_factory=list)
    context: str | None = None
    timeout_seconds: float | None = Field(default=None, gt=0)
    created_at: datetime = Field(default_factory=_now)

    def is_pending(self, now: datetime | None = None) -> bool:
        """True until ``timeout_seconds`` after ``created_at`` (always, without a timeout)."""
        if self.timeout_seconds is None:
            return True
        deadline = self.created_at + timedelta(seconds=self.timeout_seconds)
        return (now or _now()) < deadline


class WorkingMemory(_Part):
    """Working memory of one session."""

    session_id: str = Field(min_length=1)
    user_id: str
    current_focus: Focus | None = None
    focus_history: list[Focus] = Field(default_factory=list)
    entities: list[EntityRef] = Field(default_factory=list)
    findings: list[Finding] = Field(default_factory=list)
    context: dict[str, Any] = Field(default_factory=dict)
    clarification: Clarification | None = None
    created_at: datetime = Field(default_factory=_now)

    def set_focus(self, focus: Focus) -> None:
        """Focus on something new; the previous focus goes to the history."""
        if self.current_focus is not None:
            self.focus_history.append(self.current_focus)
        self.current_focus = focus

    def clear_focus(self) -> None:
        """No focus; the previous one goes to the history."""
        if self.current_focus is not None:
            self.focus_history.append(self.current_focus)
        self.current_focus = None

    def add_entity(self, entity: EntityRef) -> None:
        """Note something the session referred to."""
        self.entities.append(entity)

    def recent_entities(self, count: int) -> list[EntityRef]:
        """The ``count`` most recently referred entities, newest first."""
        return sorted(self.entities, key=lambda e: e.timestamp, reverse=True)[:count]

    def add_finding(self, finding: Finding) -> None:
        """Note something the session found out."""
        self.findings.append(finding)

    def pending_clarification(self, now: datetime | None = None) -> Clarification | None:
        """The clarification, unless there is none or its timeout has passed."""
        if self.clarification is not None and self.clarification.is_pending(now):
            return self.clarification
        return None

    def merged(self, update: WorkingMemory) -> WorkingMemory:
        """This memory with ``update`` applied on top.

        The update's focus wins (ours then goes to the history); histories,
        entities and findings are combined (a finding with the same id is the
        update's); context is merged with the update's keys winning; the
        update's clarification replaces ours if it has one.
        """
        history = [*self.focus_history, *update.focus_history]
        focus = self.current_focus
        if update.current_focus is not None:
            if focus is not None and focus != update.current_focus:
                history.append(focus)
            focus = update.current_focus
        findings = {finding.id: finding for finding in [*self.findings, *update.findings]}
        entities = [*self.entities, *(e for e in update.entities if e not in self.entities)]
        return self.model_copy(
            update={
                "current_focus": focus,
                "focus_history": history,
                "entities": entities,
                "findings": list(findings.values()),
                "context": {**self.context, **update.context},
                "clarification": update.clarification or self.clarification,
            },
            deep=True,
        )

    def serialize(self) -> dict[str, Any]:
        """A JSON-ready dict; ``deserialize`` gives back an equal memory."""
        return self.model_dump(mode="json")

    @classmethod
    def deserialize(cls, data: dict[str, Any]) -> WorkingMemory:
        """The memory ``serialize`` gave; raises pydantic's ``ValidationError`` if malformed."""
        return cls.model_validate(data, strict=False)
