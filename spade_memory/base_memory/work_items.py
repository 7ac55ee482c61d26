"""Work items a memory came from: ids found in its ``source``, and who is told of a link.

A memory may name its ``source`` (a path such as ``docs/work/active/E2-241/plans/PLAN.md``,
a beads issue id, a URL). Each id of a work item found there links the memory to that
work item: the store keeps the link (``memory_refs`` answers from it), the memory
carries the ids (``work_items``) so the beads mirror can add its ``discovered-from``
dependency, and a deployment's own work engine is told (a callback, or a JID).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

DEFAULT_PATTERNS = (
    r"\b[A-Z][A-Z0-9]{0,9}-\d+\b",
    r"\bbd-[0-9a-z]{2,12}(?:\.\d+)*\b",
)
"""The ``ABC-123`` style (Jira, Linear, ``E2-241``), and beads ids of the default ``bd``
prefix; a deployment adds its beads prefix (``beads_pattern``) or its own patterns."""


def beads_pattern(prefix: str) -> str:
    """The pattern of the ids of a beads database whose issue prefix is ``prefix``."""
    return rf"\b{re.escape(prefix)}-[0-9a-z]{{2,12}}(?:\.\d+)*\b"


@dataclass(frozen=True)
class WorkLink:
    """A committed link of a memory to a work item."""

    work_id: str
    memory_id: str
    author: str
    space: str
    """The memory's space key (the author's JID for a personal memory)."""


@dataclass(frozen=True)
class WorkItems:
    """How work-item ids are recognised, and who hears of each new link.

    ``notify`` is called with the links of each committed write (from the event loop;
    keep it short); ``notify_jid`` receives each link as a JSON message.
    """

    patterns: Sequence[str] = DEFAULT_PATTERNS
    notify: Callable[[list[WorkLink]], None] | None = None
    notify_jid: str | None = None
    _compiled: list[re.Pattern[str]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_compiled", [re.compile(p) for p in self.patterns])

    def ids_in(self, source: str | None) -> list[str]:
        """The work-item ids in ``source``, in order of appearance, each once (none for
        a source without one: that links nothing and is no error)."""
        if not source:
            return []
        found: list[tuple[int, str]] = []
        for pattern in self._compiled:
            found += [(match.start(), match.group(0)) for match in pattern.finditer(source)]
        return list(dict.fromkeys(work_id for _, work_id in sorted(found)))
