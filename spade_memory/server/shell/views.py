"""How the shell shows memories in a terminal: a table that fits 80 columns, where the
content takes the width the other columns leave (they are short and never wrap: a short
id, a relative age), and one memory in full.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from spade_memory.protocol.memories import Memory, Stored
from spade_memory.server.shell.ids import short_ids


def memory_table(
    console: Console, memories: Sequence[Memory], *, spaces: bool = False, scores: bool = False
) -> None:
    """Print ``memories`` as a table: short id, (space,) category, content, (score,)
    confidence, when last used, uses; ``no memories`` when there are none."""
    if not memories:
        console.print("no memories")
        return
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, padding=(0, 1, 0, 0))
    table.add_column("id", no_wrap=True)
    if spaces:
        table.add_column("space", no_wrap=True, max_width=10, overflow="ellipsis")
    table.add_column("category", no_wrap=True)
    table.add_column("content", ratio=1, min_width=16, overflow="fold")
    if scores:
        table.add_column("score", justify="right", no_wrap=True)
    table.add_column("conf", justify="right", no_wrap=True)
    table.add_column("used", justify="right", no_wrap=True)
    table.add_column("uses", justify="right", no_wrap=True)
    short = short_ids([memory.id for memory in memories])
    now = datetime.now(timezone.utc)
    for memory in memories:
        row = [short[memory.id]]
        if spaces:
            row.append(memory.space)
        row += [memory.category, memory.content]
        if scores:
            row.append("-" if memory.score is None else f"{memory.score:.2f}")
        row += [f"{memory.confidence:.2f}", age(memory.last_accessed, now)]
        row.append(str(memory.access_count))
        table.add_row(*(Text(cell) for cell in row))  # content is text, not rich markup
    console.print(table)


def age(when: datetime, now: datetime) -> str:
    """How long ago ``when`` was, in at most four characters (``now``, ``5m``, ``3h``,
    ``12d``, ``2y``)."""
    seconds = (now - when).total_seconds()
    for unit, size in (("y", 365 * 86400), ("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return "now"


def memory_detail(console: Console, memory: Memory, as_json: bool) -> None:
    """Print every field of one memory (its JSON with ``as_json``)."""
    if as_json:
        print(memory.model_dump_json())
        return
    table = Table(show_header=False, box=None)
    table.add_column(no_wrap=True)
    table.add_column(overflow="fold")
    for name, value in memory.model_dump(mode="json").items():
        table.add_row(name, Text("-" if value is None else _text(value)))
    console.print(table)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def print_json(value: object) -> None:
    """Print ``value`` as one line of JSON."""
    print(json.dumps(value, ensure_ascii=False))


def said(console: Console, as_json: bool, counts: dict[str, Any]) -> None:
    """Print what a command did: ``key: value, …``, or its JSON."""
    if as_json:
        print_json(counts)
    else:
        console.print(
            ", ".join(f"{key.replace('_', ' ')}: {value}" for key, value in counts.items())
        )


def print_stored(console: Console, stored: Stored, as_json: bool, fallback: str | None) -> None:
    """What a store or a supersede did: the id, what it replaced, what it conflicts with."""
    if as_json:
        print(stored.model_dump_json())
        return
    how = "already there" if stored.deduplicated else "stored"
    chosen = " (classified)" if stored.classified else ""
    console.print(f"{how}: {stored.id} {stored.category or fallback}{chosen}")
    if stored.supersedes is not None:
        console.print(f"supersedes: {stored.supersedes}")
    for conflict in stored.conflicts:
        console.print(
            f"possible conflict: {conflict.id} ({conflict.subject}: {conflict.was!r} →"
            f" {conflict.now!r}); to replace it: memories supersede {conflict.id} TEXT",
            markup=False,
        )
