"""One memory = one beads issue: the tables both ways.

| memory                  | issue                                              |
|-------------------------|----------------------------------------------------|
| title, content          | ``title``, ``description``                          |
| memory type             | ``issue_type`` (table below) + label ``memory:TYPE`` |
| owner (bare JID)        | label ``agent:JID`` and ``assignee``               |
| session                 | label ``session:ID``                               |
| tags                    | labels as they are                                 |
| metadata                | ``metadata`` (our own fields under ``spade_memory``) |
| importance 1-10         | ``priority`` 0-4 (table below)                      |
| parent                  | first ``blocks`` / ``parent-child`` dependency      |
| base memory category    | memory type (table below) + label ``category:NAME`` |
| base memory context     | ``notes``                                          |
| base memory id          | ``external_ref`` ``spade-memory:ID``                |

A forgotten memory's issue stays, redacted (``redaction``): its id may be the target
of other issues' dependencies, and bd, git merges and the mirror find it by id.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, get_args

from spade_memory.beads.issue import Issue, IssueChanges
from spade_memory.protocol.beads_labels import (  # the labels, for the mapping's users
    AGENT_LABEL as AGENT_LABEL,
)
from spade_memory.protocol.beads_labels import (
    CATEGORY_LABEL as CATEGORY_LABEL,
)
from spade_memory.protocol.beads_labels import (
    MEMORY_LABEL as MEMORY_LABEL,
)
from spade_memory.protocol.beads_labels import (
    OUR_METADATA as OUR_METADATA,
)
from spade_memory.protocol.beads_labels import (
    RESERVED_LABEL_PREFIXES as RESERVED_LABEL_PREFIXES,
)
from spade_memory.protocol.beads_labels import (
    SESSION_LABEL as SESSION_LABEL,
)
from spade_memory.protocol.beads_labels import (
    SPACE_LABEL as SPACE_LABEL,
)
from spade_memory.protocol.beads_labels import (
    MemoryType as MemoryType,
)

MEMORY_TYPES: tuple[MemoryType, ...] = get_args(MemoryType)

ISSUE_TYPE: dict[MemoryType, str] = {
    "conversation": "task",
    "context": "task",
    "artifact": "task",
    "decision": "feature",
    "pattern": "chore",
    "learning": "chore",
}
"""Memory type → bd issue type (bd rejects unknown types, so only built-in ones)."""

MEMORY_TYPE_OF_ISSUE: dict[str, MemoryType] = {
    "task": "context",
    "feature": "decision",
    "chore": "learning",
}
"""Issue type → memory type, for issues that carry no ``memory:`` label."""

CATEGORY_MEMORY_TYPE: dict[str, MemoryType] = {
    "fact": "learning",
    "pattern": "pattern",
    "preference": "decision",
    "capability": "artifact",
}
"""Base memory category → memory type (the category itself is kept as a label)."""

EXTERNAL_REF_PREFIX = "spade-memory:"
LINK_TYPES = ("related", "blocks", "discovered-from")
FORGOTTEN_TITLE = "forgotten memory"
FORGOTTEN_TEXT = "(forgotten: its text was removed at its agent's request)"
FORGOTTEN_REASON = "forgotten"
"""The close reason of a redacted issue (the reason it had may be text of the memory)."""
PARENT_TYPES = ("blocks", "parent-child")


def priority_of(importance: int | None) -> int:
    """Importance 1-10 → priority 0-4: 10,9→0; 8,7→1; 6,5,4→2; 3,2→3; 1→4; none→2."""
    if importance is None:
        return 2
    if not 1 <= importance <= 10:
        raise ValueError(f"importance must be 1-10, not {importance}")
    return {10: 0, 9: 0, 8: 1, 7: 1, 6: 2, 5: 2, 4: 2, 3: 3, 2: 3, 1: 4}[importance]


def importance_of(priority: int) -> int:
    """Priority 0-4 → importance: 0→9, 1→7, 2→5, 3→3, 4→1."""
    return {0: 9, 1: 7, 2: 5, 3: 3, 4: 1}.get(priority, 5)


def issue_type_of(memory_type: MemoryType) -> str:
    return ISSUE_TYPE[memory_type]


def memory_type_of(issue: Issue) -> MemoryType:
    """From the ``memory:`` label (exact), else guessed from the issue type."""
    for label in issue.labels:
        value = label.removeprefix(MEMORY_LABEL)
        if label.startswith(MEMORY_LABEL) and value in MEMORY_TYPES:
            return value
    return MEMORY_TYPE_OF_ISSUE.get(issue.issue_type, "context")


def labels_for(
    memory_type: MemoryType,
    owner: str,
    session: str | None,
    tags: tuple[str, ...] = (),
    category: str | None = None,
    space: str | None = None,
) -> tuple[str, ...]:
    """The reserved labels of a memory (``space``: the shared space it was mirrored
    from), then its tags."""
    labels = [MEMORY_LABEL + memory_type, AGENT_LABEL + owner]
    if session:
        labels.append(SESSION_LABEL + session)
    if category:
        labels.append(CATEGORY_LABEL + category)
    if space:
        labels.append(SPACE_LABEL + space)
    return tuple(dict.fromkeys([*labels, *tags]))


def label_value(issue: Issue, prefix: str) -> str | None:
    """The value of the first label with ``prefix`` (``agent:``, ``session:`` …)."""
    for label in issue.labels:
        if label.startswith(prefix):
            return label[len(prefix) :]
    return None


def tags_of(issue: Issue) -> list[str]:
    return [label for label in issue.labels if not label.startswith(RESERVED_LABEL_PREFIXES)]


def is_memory(issue: Issue) -> bool:
    return label_value(issue, MEMORY_LABEL) is not None


def ours(issue: Issue) -> dict[str, Any]:
    """What this package keeps in the issue's metadata (importance, accesses …)."""
    value = issue.metadata.get(OUR_METADATA)
    return dict(value) if isinstance(value, Mapping) else {}


def user_metadata(issue: Issue) -> dict[str, Any]:
    return {key: value for key, value in issue.metadata.items() if key != OUR_METADATA}


def with_ours(metadata: Mapping[str, Any] | None, **fields: Any) -> dict[str, Any]:
    """``metadata`` with our fields set under ``spade_memory`` (``None`` values dropped)."""
    merged = dict(metadata or {})
    mine = dict(merged.get(OUR_METADATA) or {})
    mine.update({key: value for key, value in fields.items() if value is not None})
    merged[OUR_METADATA] = mine
    return merged


def parent_of(issue: Issue) -> str | None:
    """The parent memory: the first ``blocks`` (or ``parent-child``) dependency."""
    for dep in issue.dependencies:
        if dep.type in PARENT_TYPES:
            return dep.depends_on_id
    return None


def title_of(content: str, width: int = 80) -> str:
    """A title from the content's first line, cut at a word to ``width`` characters."""
    first = content.strip().splitlines()[0] if content.strip() else "memory"
    if len(first) <= width:
        return first
    return first[: width - 1].rsplit(" ", 1)[0].rstrip() + "…"


def is_forgotten(issue: Issue) -> bool:
    """Whether the issue was redacted (see ``redaction``)."""
    return bool(ours(issue).get("forgotten"))


def redaction(issue: Issue) -> IssueChanges:
    """What forgetting a memory changes in its issue: its title, description and notes
    are replaced by ``FORGOTTEN_TITLE`` / ``FORGOTTEN_TEXT``, its tags and metadata go
    (``spade_memory.forgotten`` is set). Its id, the labels naming its type, agent,
    session, category and space, its assignee, ``external_ref``, dependencies and dates
    stay. A closed issue is reopened by it, to be closed again with ``FORGOTTEN_REASON``.
    """
    return IssueChanges(
        title=FORGOTTEN_TITLE,
        description=FORGOTTEN_TEXT,
        notes=FORGOTTEN_TEXT if issue.notes else None,
        status=None if issue.is_open else "open",
        metadata={OUR_METADATA: {"forgotten": True}},
        remove_labels=tuple(tags_of(issue)),
    )
