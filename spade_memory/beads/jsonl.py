"""``.beads/issues.jsonl`` as bd writes it, kept intact where we do not change it.

A line we did not change is written back byte for byte: unknown keys,
original timestamp strings, ``_type: "memory"`` records and lines that do not
parse survive (each reported in the log). A line we changed is encoded as
Go's ``encoding/json`` does (compact, UTF-8, ``<``, ``>`` and ``&`` escaped).
The file is replaced atomically: temp file, fsync, rename, fsync of the
directory. A torn last line (a write by someone else cut short: no newline
and no JSON) is repaired: moved to ``issues.jsonl.torn-<time>`` beside the
file, reported, never silently dropped.
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spade_memory.storage.files import write_atomically

logger = logging.getLogger("spade_memory.beads")

KEY_ORDER = (
    "id",
    "title",
    "description",
    "design",
    "acceptance_criteria",
    "notes",
    "status",
    "priority",
    "issue_type",
    "assignee",
    "owner",
    "estimated_minutes",
    "created_at",
    "created_by",
    "updated_at",
    "closed_at",
    "close_reason",
    "external_ref",
    "labels",
    "dependencies",
    "comments",
    "metadata",
)
"""bd's field order for the keys we may add to a line."""

_GO_ESCAPES = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}


def encode(data: dict[str, Any]) -> str:
    """One JSON line as Go's ``json.Marshal`` writes it."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    for char, escaped in _GO_ESCAPES.items():
        text = text.replace(char, escaped)
    return text


def ordered(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with bd's known keys in bd's order, then any others as they were."""
    known = {key: data[key] for key in KEY_ORDER if key in data}
    return known | {key: value for key, value in data.items() if key not in known}


@dataclass
class Line:
    """One line of the file: its text, and its object when it is an issue."""

    text: str
    issue: dict[str, Any] | None = None
    changed: bool = False

    def render(self) -> str:
        if self.changed and self.issue is not None:
            return encode(ordered(self.issue))
        return self.text


def parse_line(text: str) -> Line:
    try:
        data = json.loads(text)
    except ValueError:
        return Line(text)
    if not isinstance(data, dict) or not isinstance(data.get("id"), str):
        return Line(text)
    if data.get("_type", "issue") != "issue":
        return Line(text)
    return Line(text, data)


def read_lines(path: Path) -> list[Line]:
    """The file's lines (a torn last line repaired first, see the module)."""
    if not path.exists():
        return []
    content = path.read_text(encoding="utf-8")
    texts = [text for text in content.splitlines() if text.strip()]
    if texts and not content.endswith("\n"):
        _set_aside_torn(path, texts)
    lines = [parse_line(text) for text in texts]
    for number, line in enumerate(lines, start=1):
        if line.issue is None and not _is_json(line.text):
            logger.warning("%s line %d is not JSON; kept as it is", path, number)
    return lines


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _set_aside_torn(path: Path, texts: list[str]) -> None:
    """Move a torn last line out of the file (to a file beside it) and say so."""
    if _is_json(texts[-1]):
        return  # only the newline is missing
    torn = texts.pop()
    aside = path.with_name(f"{path.name}.torn-{time.strftime('%Y%m%d-%H%M%S')}")
    write_atomically(aside, torn + "\n")
    write_atomically(path, "".join(text + "\n" for text in texts))
    logger.warning("%s: its last line was torn (a write cut short); moved to %s", path, aside)


def write_lines(path: Path, lines: list[Line]) -> None:
    """Replace ``path`` atomically with ``lines``."""
    write_atomically(path, "".join(line.render() + "\n" for line in lines))
    for line in lines:
        if line.changed and line.issue is not None:
            line.text, line.changed = line.render(), False


def id_prefix(issue_id: str) -> str:
    """``buh`` of ``buh-uvxc``; ``mjrwtf`` of the child ``mjrwtf-ycu.1``."""
    return issue_id.split(".", 1)[0].rpartition("-")[0]


def common_prefix(ids: list[str]) -> str | None:
    """The prefix most ids of a file share (bd's ``issue-prefix``)."""
    counts = Counter(prefix for prefix in map(id_prefix, ids) if prefix)
    return counts.most_common(1)[0][0] if counts else None
