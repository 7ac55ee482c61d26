"""What the beads engines exchange: an issue as read, and what to create or change.

An ``Issue`` is a read-only view of one line of ``issues.jsonl`` (or of bd's
``--json`` output); the line itself, with keys this package does not know,
stays with the engine.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

STATUSES = ("open", "in_progress", "blocked", "deferred", "closed")
ISSUE_TYPES = ("bug", "feature", "task", "epic", "chore", "decision")
DEPENDENCY_TYPES = ("blocks", "related", "parent-child", "discovered-from", "supersedes")


@dataclass(frozen=True)
class Dependency:
    """``issue_id`` depends on ``depends_on_id`` (stored on the dependent issue)."""

    issue_id: str
    depends_on_id: str
    type: str
    created_at: str | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Dependency:
        return cls(
            issue_id=str(data.get("issue_id", "")),
            depends_on_id=str(data.get("depends_on_id", "")),
            type=str(data.get("type", "blocks")),
            created_at=_text(data.get("created_at")),
        )


@dataclass(frozen=True)
class Issue:
    id: str
    title: str
    status: str = "open"
    priority: int = 2
    issue_type: str = "task"
    description: str = ""
    notes: str = ""
    assignee: str | None = None
    labels: tuple[str, ...] = ()
    dependencies: tuple[Dependency, ...] = ()
    created_at: str = ""
    updated_at: str = ""
    closed_at: str | None = None
    close_reason: str | None = None
    external_ref: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Issue:
        """Read bd's JSON for one issue (a JSONL line or ``--json`` output)."""
        metadata = data.get("metadata")
        return cls(
            id=str(data["id"]),
            title=str(data.get("title", "")),
            status=str(data.get("status") or "open"),
            priority=int(data.get("priority", 2)),
            issue_type=str(data.get("issue_type") or "task"),
            description=str(data.get("description") or ""),
            notes=str(data.get("notes") or ""),
            assignee=_text(data.get("assignee")),
            labels=tuple(str(label) for label in data.get("labels") or ()),
            dependencies=tuple(
                Dependency.from_json(dep)
                for dep in data.get("dependencies") or ()
                if isinstance(dep, Mapping)
            ),
            created_at=str(data.get("created_at", "")),
            updated_at=str(data.get("updated_at", "")),
            closed_at=_text(data.get("closed_at")),
            close_reason=_text(data.get("close_reason")),
            external_ref=_text(data.get("external_ref")),
            metadata=metadata if isinstance(metadata, Mapping) else {},
        )

    @property
    def is_open(self) -> bool:
        return self.status != "closed"


@dataclass(frozen=True)
class NewIssue:
    title: str
    description: str = ""
    issue_type: str = "task"
    priority: int = 2
    assignee: str | None = None
    labels: tuple[str, ...] = ()
    notes: str = ""
    external_ref: str | None = None
    metadata: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class IssueChanges:
    """Fields to set (``None`` leaves a field as it is) and labels to add or remove."""

    title: str | None = None
    description: str | None = None
    notes: str | None = None
    status: str | None = None
    priority: int | None = None
    issue_type: str | None = None
    assignee: str | None = None
    metadata: Mapping[str, Any] | None = None
    add_labels: tuple[str, ...] = ()
    remove_labels: tuple[str, ...] = ()


@dataclass(frozen=True)
class IssueFilter:
    """Which issues ``list`` returns; closed ones only when ``status`` asks for them."""

    labels: tuple[str, ...] = ()
    """Every one of these labels."""
    labels_any: tuple[str, ...] = ()
    """At least one of these labels."""
    status: str | None = None
    include_closed: bool = False
    assignee: str | None = None
    issue_type: str | None = None
    limit: int | None = None

    def matches(self, issue: Issue) -> bool:
        if self.status is not None:
            if issue.status != self.status:
                return False
        elif not self.include_closed and not issue.is_open:
            return False
        if not set(self.labels) <= set(issue.labels):
            return False
        if self.labels_any and not set(self.labels_any) & set(issue.labels):
            return False
        if self.assignee is not None and issue.assignee != self.assignee:
            return False
        return self.issue_type is None or issue.issue_type == self.issue_type


def _text(value: object) -> str | None:
    return None if value is None else str(value)
