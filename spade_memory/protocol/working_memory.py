"""Working memory of one session: focus, entities, findings, context, a clarification.

A plain domain model: the methods change it in place, ``serialize`` gives a
JSON-ready dict and ``deserialize`` takes it back without loss. The
interaction memory agent keeps one per (owner, session).

An entity or a finding may expire (its ``expires_at``, kept in the serialized
form so it survives a restart): from that moment it is left out of every read,
merge and serialization, and the store drops it at its next purge or change.
"""

from __future__ import annotations

import time
import uuid
from datetime import datetime, timezone
from typing import Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, AwareDatetime, BaseModel, ConfigDict, Field

from spade_memory.protocol.expiry import MAX_TTL_SECONDS, as_moment, expiry_of
from spade_memory.protocol.json_object import JsonObject

FocusType = Literal["file", "function", "class", "module", "concept"]
Severity = Literal["info", "warning", "error", "critical"]


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _in_utc(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)


Moment = Annotated[datetime, AfterValidator(_in_utc)]
"""A moment of the session; one given without a UTC offset is taken as UTC (compared
with the agent's own moments, which have one, it failed every read that sorts them)."""


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class Focus(_Part):
    """What the session is looking at now."""

    type: FocusType = Field(description="What kind of thing it is")
    id: str = Field(min_length=1, description="Its identifier: a path, a qualified name, a URL")
    name: str = Field(description="A short name to show")
    context: str | None = Field(default=None, description="Optional: why it is the focus")
    set_at: Moment = Field(default_factory=_now)


class EntityRef(_Part):
    """Something the session referred to (a file, a person, a ticket, ...)."""

    type: str = Field(min_length=1)
    id: str = Field(min_length=1)
    name: str
    context: str | None = None
    timestamp: Moment = Field(default_factory=_now)
    expires_at: AwareDatetime | None = None
    """When it stops being visible (None: never)."""


class Finding(_Part):
    """Something the session found out."""

    id: str = Field(default_factory=lambda: uuid.uuid4().hex, min_length=1)
    type: str = Field(min_length=1, description="What kind of finding: bug, risk, decision, ...")
    title: str = Field(description="The finding in a few words")
    description: str = Field(default="", description="Optional: the finding in full")
    location: str | None = Field(
        default=None, description="Optional: where: a file and line, a URL"
    )
    severity: Severity = Field(default="info", description="How much it matters")
    evidence: list[str] = Field(
        default_factory=list, description="Optional: what shows it (quotes, log lines, ids)"
    )
    metadata: JsonObject = Field(default_factory=dict)
    created_at: Moment = Field(default_factory=_now)
    expires_at: AwareDatetime | None = None
    """When it stops being visible (None: never)."""


Item = TypeVar("Item", EntityRef, Finding)


def expiry_moment(ttl_seconds: float | None, expires_at: datetime | None) -> datetime | None:
    """When an item given ``ttl_seconds`` or ``expires_at`` expires (the sooner; None when
    neither is given). A sooner ``expires_at`` is kept as given: its UTC equivalent may
    lie outside the years a ``datetime`` holds."""
    epoch = expiry_of(ttl_seconds, expires_at)
    if expires_at is not None and epoch == expires_at.timestamp():
        return expires_at
    return as_moment(epoch)


def expiring(item: Item, at: datetime | None) -> Item:
    """``item``, expiring at ``at`` unless its own ``expires_at`` is sooner."""
    if at is None or (item.expires_at is not None and item.expires_at <= at):
        return item
    return item.model_copy(update={"expires_at": at})


def _same_finding(a: Finding, b: Finding) -> bool:
    return (a.type, a.title.strip().casefold(), a.location) == (
        b.type,
        b.title.strip().casefold(),
        b.location,
    )


def _live(item: EntityRef | Finding, now: float) -> bool:
    return item.expires_at is None or item.expires_at.timestamp() > now


class Clarification(_Part):
    """A question waiting for an answer; it stops being pending after its timeout."""

    question: str = Field(min_length=1)
    options: list[str] = Field(default_factory=list)
    context: str | None = None
    timeout_seconds: float | None = Field(
        default=None, gt=0, le=MAX_TTL_SECONDS, allow_inf_nan=False
    )
    created_at: Moment = Field(default_factory=_now)

    def is_pending(self, now: datetime | None = None) -> bool:
        """True until ``timeout_seconds`` after ``created_at`` (always, without a timeout)."""
        if self.timeout_seconds is None:
            return True
        deadline = self.created_at.timestamp() + self.timeout_seconds  # no date overflows
        return (now or _now()).timestamp() < deadline


class WorkingMemory(_Part):
    """Working memory of one session."""

    session_id: str = Field(min_length=1)
    user_id: str
    current_focus: Focus | None = None
    focus_history: list[Focus] = Field(default_factory=list)
    entities: list[EntityRef] = Field(default_factory=list)
    findings: list[Finding] = Field(default_factory=list)
    context: JsonObject = Field(default_factory=dict)
    clarification: Clarification | None = None
    created_at: Moment = Field(default_factory=_now)

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
        """Note something the session referred to; the same entity (its type and id)
        referred to again replaces its earlier note, so it is listed once, as recent as
        its last mention."""
        same = (entity.type, entity.id)
        self.entities = [e for e in self.entities if (e.type, e.id) != same]
        self.entities.append(entity)

    def recent_entities(self, count: int) -> list[EntityRef]:
        """The ``count`` most recently referred entities not expired, newest first."""
        live = self.live().entities
        return sorted(live, key=lambda e: e.timestamp, reverse=True)[:count]

    def add_finding(self, finding: Finding) -> None:
        """Note something the session found out. A finding with the id of one already
        noted, or the same finding noted again (its type, title and location), replaces
        that one where it stands, keeping its id: each finding is listed once."""
        for at, known in enumerate(self.findings):
            if known.id == finding.id or _same_finding(known, finding):
                self.findings[at] = finding.model_copy(update={"id": known.id})
                return
        self.findings.append(finding)

    def pending_clarification(self, now: datetime | None = None) -> Clarification | None:
        """The clarification, unless there is none or its timeout has passed."""
        if self.clarification is not None and self.clarification.is_pending(now):
            return self.clarification
        return None

    def drop_expired(self, now: float | None = None) -> int:
        """Forget the entities and findings expired at ``now`` (epoch seconds, default:
        the present); how many went."""
        moment = time.time() if now is None else now
        before = len(self.entities) + len(self.findings)
        self.entities = [entity for entity in self.entities if _live(entity, moment)]
        self.findings = [finding for finding in self.findings if _live(finding, moment)]
        return before - len(self.entities) - len(self.findings)

    def live(self, now: float | None = None) -> WorkingMemory:
        """A copy (sharing its parts) without the entities and findings expired at ``now``."""
        copy = self.model_copy()
        copy.drop_expired(now)
        return copy

    def next_expiry(self) -> float | None:
        """When its next entity or finding expires (epoch seconds; None: none will)."""
        items: list[EntityRef | Finding] = [*self.entities, *self.findings]
        moments = [item.expires_at.timestamp() for item in items if item.expires_at is not None]
        return min(moments, default=None)

    def merged(self, update: WorkingMemory) -> WorkingMemory:
        """This memory with ``update`` applied on top.

        The update's focus wins (ours then goes to the history); histories,
        entities and findings are combined, each once (a finding with the same id
        is the update's); context is merged with the update's keys winning; the
        update's clarification replaces ours if it has one. Expired entities
        and findings are left out.
        """
        history = [*self.focus_history]  # each focus once: a state merged into itself
        history += [focus for focus in update.focus_history if focus not in history]
        focus = self.current_focus
        if update.current_focus is not None:
            if focus is not None and focus != update.current_focus and focus not in history:
                history.append(focus)
            focus = update.current_focus
        findings = {finding.id: finding for finding in [*self.findings, *update.findings]}
        entities = [*self.entities, *(e for e in update.entities if e not in self.entities)]
        merged = self.model_copy(
            update={
                "current_focus": focus,
                "focus_history": history,
                "entities": entities,
                "findings": list(findings.values()),
                "context": {**self.context, **update.context},
                "clarification": update.clarification or self.clarification,
            }
        ).model_copy(deep=True)  # shares no part with either memory
        merged.drop_expired()
        return merged

    def serialize(self) -> dict[str, Any]:
        """A JSON-ready dict of what has not expired (each item with its ``expires_at``);
        ``deserialize`` gives back an equal memory."""
        return self.live().model_dump(mode="json")

    @classmethod
    def deserialize(cls, data: dict[str, Any]) -> WorkingMemory:
        """The memory ``serialize`` gave; raises pydantic's ``ValidationError`` if malformed."""
        return cls.model_validate(data, strict=False)
