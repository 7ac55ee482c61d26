"""What a beads memory holds against its author's byte budget (``quotas``).

A memory stored through the beads sync agent is an issue whose texts are the
author's: its title, description and notes, its labels, and its metadata (as
compact JSON). Those bytes count against ``Limits.max_bytes_per_owner``, whether
the issue is open or closed: a deleted memory's issue stays in the file as its
audit trail, with everything it said. The issues mirrored from the base memory
agent are counted there, as the memories they mirror, not here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from spade_memory.beads import mapping as m
from spade_memory.beads.issue import Issue, NewIssue


def bytes_of(issue: Issue | NewIssue) -> int:
    """The bytes of ``issue``'s texts, labels and metadata, in UTF-8."""
    texts = [issue.title, issue.description, issue.notes, *issue.labels, _json(issue.metadata)]
    return sum(len(text.encode("utf-8", "surrogatepass")) for text in texts)


def stored_by(issue: Issue, owner: str) -> bool:
    """Whether ``owner`` stored ``issue`` through the beads sync agent (not a mirror)."""
    mirrored = (issue.external_ref or "").startswith(m.EXTERNAL_REF_PREFIX)
    return not mirrored and m.AGENT_LABEL + owner in issue.labels


def held_by(issues: Iterable[Issue], owner: str) -> tuple[int, int, int]:
    """(open memories, closed memories, bytes) that ``owner`` stored among ``issues``."""
    opened = closed = size = 0
    for issue in issues:
        if m.is_memory(issue) and stored_by(issue, owner):
            opened, closed = (opened + 1, closed) if issue.is_open else (opened, closed + 1)
            size += bytes_of(issue)
    return opened, closed, size


def _json(metadata: Mapping[str, Any] | None) -> str:
    if not metadata:
        return ""
    return json.dumps(metadata, ensure_ascii=False, separators=(",", ":"), default=str)
