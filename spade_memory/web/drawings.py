"""What a memory's page draws: its fact's timeline (every value the fact took, when each
was true, who stated it, which one replaced which) and its neighbourhood in the entity
graph (the entities it names, and the memories each leads to).

The geometry is worked out here and drawn by the template as SVG made on the server: no
script, nothing fetched, every mark a link or a ``<title>`` a screen reader reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from spade_memory.protocol.memories import MemoryHistory, MemoryList

TIMELINE_MOST = 12
"""The values of a fact a timeline shows: those nearest the memory of the page."""
NEIGHBOURS = 8
"""The related memories a neighbourhood shows, the most shared first."""
ENTITIES_MOST = 12
"""The entities it shows: those leading somewhere first."""


@dataclass(frozen=True)
class Span:
    """One value of a fact, placed on the timeline (``left`` and ``width`` in percent)."""

    id: str
    content: str
    author: str
    start: datetime
    end: datetime | None
    """When it stopped being true (None: it is now)."""
    shown: bool
    """The memory of the page."""
    left: float
    width: float


def chain(history: MemoryHistory, memory_id: str) -> list[str]:
    """The ids of the fact's values, oldest first, the page's memory among them, at most
    ``TIMELINE_MOST`` of those nearest it."""
    ids = [*reversed(history.supersedes), memory_id, *history.superseded_by]
    at = len(history.supersedes)
    first = max(0, min(at - TIMELINE_MOST // 2, len(ids) - TIMELINE_MOST))
    return ids[first : first + TIMELINE_MOST]


def timeline(histories: list[MemoryHistory], memory_id: str, now: datetime) -> list[Span]:
    """The spans of the values whose histories were read (``chain``'s order; a deleted
    one is left out), placed between the first one's start and ``now``."""
    kept = [h for h in histories if h.versions]
    if len(kept) < 2:
        return []  # one value: nothing changed, nothing to draw
    starts = [h.valid_from or h.versions[0].changed_at for h in kept]
    origin = min(starts)
    whole = max((now - origin).total_seconds(), 1.0)
    spans = []
    for history, start in zip(kept, starts, strict=True):
        end = history.valid_to
        left = (start - origin).total_seconds() / whole * 100
        right = ((end or now) - origin).total_seconds() / whole * 100
        spans.append(Span(
            history.id, history.versions[-1].content, history.versions[0].changed_by, start,
            end, history.id == memory_id, round(left, 2), round(max(right - left, 0.8), 2),
        ))  # fmt: skip
    return spans


@dataclass(frozen=True)
class Node:
    """An entity or a memory, where its label starts."""

    label: str
    full: str
    x: float
    y: float
    id: str | None = None
    """A memory's id (None: an entity)."""


@dataclass(frozen=True)
class Edge:
    """A line from an entity to a memory that names it too."""

    x1: float
    y1: float
    x2: float
    y2: float


WIDTH = 480
"""The drawing's width in its own units (it shrinks to a narrower screen)."""
ROW = 24
ENTITY_X, LINE_FROM, LINE_TO, MEMORY_X = 6.0, 150.0, 236.0, 244.0


@dataclass(frozen=True)
class Neighbourhood:
    """The entities in one column, the memories in the other, the lines between."""

    entities: list[Node]
    memories: list[Node]
    edges: list[Edge]
    height: int
    width: int = WIDTH


def neighbourhood(related: MemoryList) -> Neighbourhood | None:
    """The memory's entities in a column and the memories they lead to in another, a line
    for each entity a memory shares (None: it names nothing)."""
    if not related.entities:
        return None
    memories = related.memories[:NEIGHBOURS]
    leading = {key for memory in memories for key in memory.shares}
    keys = sorted(related.entities, key=lambda name: (name not in leading, name.casefold()))
    keys = keys[:ENTITIES_MOST]
    height = max(len(keys), len(memories)) * ROW + 8
    entity_y = {key: _row(n, len(keys), height) for n, key in enumerate(keys)}
    entities = [Node(_short(key, 20), key, ENTITY_X, entity_y[key]) for key in keys]
    placed, edges = [], []
    for n, memory in enumerate(memories):
        y = _row(n, len(memories), height)
        placed.append(Node(_short(memory.content, 34), memory.content, MEMORY_X, y, memory.id))
        edges += [Edge(LINE_FROM, entity_y[key] - 4, LINE_TO, y - 4)
                  for key in memory.shares if key in entity_y]  # fmt: skip
    return Neighbourhood(entities, placed, edges, height)


def _row(n: int, rows: int, height: int) -> float:
    """The baseline of row ``n`` of ``rows``, the column centred in ``height``."""
    top = (height - rows * ROW) / 2
    return round(top + n * ROW + ROW * 0.7, 1)


def _short(text: str, most: int) -> str:
    return text if len(text) <= most else text[: most - 1].rstrip() + "…"
