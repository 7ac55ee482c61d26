"""The native beads engine: ``.beads/issues.jsonl`` read and written as bd does.

The file is the store. It is read again whenever it changed on disk (a
``git pull``, bd itself) and rewritten atomically after every change, or once
at the end of a ``batch``. Ids are ``<prefix>-<base36 hash>`` with the
project's prefix: ``issue-prefix`` from ``.beads/config.yaml``, else the one
most existing ids share, else the configured default.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spade_memory.beads.errors import BeadsError, BeadsFileError, IssueNotFound
from spade_memory.beads.issue import Issue, IssueChanges, IssueFilter, NewIssue
from spade_memory.beads.jsonl import Line, common_prefix, id_prefix, read_lines, write_lines
from spade_memory.beads.timestamps import nanoseconds, now_after


@dataclass
class _Batch:
    """A batch under way (one per task): how many writes of the file had failed when it
    made its first change (None: it made none yet)."""

    failures_at_first_change: int | None = None


_in_batch: ContextVar[_Batch | None] = ContextVar("beads_batch", default=None)
_PREFIX_SETTING = re.compile(r"""^\s*issue[-_]prefix\s*:\s*["']?([A-Za-z0-9_-]+)["']?\s*$""", re.M)
_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"
ID_LENGTH = 12
"""Characters after the prefix in new ids (ids of existing issues are kept as they are)."""


class NativeEngine:
    """Issues of one ``.beads`` folder, without the bd binary."""

    name = "native"

    def __init__(self, beads_dir: Path, default_prefix: str = "mem") -> None:
        self.beads_dir = beads_dir
        self.path = beads_dir / "issues.jsonl"
        self.default_prefix = default_prefix
        self._lines: list[Line] = []
        self._by_id: dict[str, Line] = {}
        self._seen: tuple[int, int, int] | None = None
        self._known_prefix: str | None = None
        """The prefix of new ids, once found (forgotten when the file is read again)."""
        self._unsaved = False
        self._lock = asyncio.Lock()
        self._failed: BeadsFileError | None = None
        """The last write of the file that failed (its changes were dropped)."""
        self._failures = 0

    # -- reading ---------------------------------------------------------------

    async def get(self, issue_id: str) -> Issue | None:
        async with self._lock:
            await self._refresh()
            line = self._by_id.get(issue_id)
            return None if line is None else _view(line)

    async def list_issues(self, where: IssueFilter | None = None) -> list[Issue]:
        where = where or IssueFilter()
        async with self._lock:
            await self._refresh()
            found = [issue for issue in self._issues() if where.matches(issue)]
        return found if where.limit is None else found[: where.limit]

    async def search(self, query: str, limit: int = 50) -> list[Issue]:
        """Open issues whose id, title, description or notes hold every word of ``query``."""
        words = query.casefold().split()
        async with self._lock:
            await self._refresh()
            found = [
                issue
                for issue in self._issues()
                if issue.is_open and all(word in _haystack(issue) for word in words)
            ]
        found.sort(key=lambda issue: _ns(issue.updated_at), reverse=True)
        return found[:limit]

    async def ready(self, limit: int = 50) -> list[Issue]:
        """Open issues none of whose ``blocks`` dependencies is still open."""
        async with self._lock:
            await self._refresh()
            issues = {issue.id: issue for issue in self._issues()}
        ready = [
            issue
            for issue in issues.values()
            if issue.status in ("open", "in_progress")
            and not any(
                dep.type == "blocks"
                and dep.depends_on_id in issues
                and issues[dep.depends_on_id].is_open
                for dep in issue.dependencies
            )
        ]
        ready.sort(key=lambda issue: (issue.priority, _ns(issue.created_at)))
        return ready[:limit]

    # -- writing ---------------------------------------------------------------

    async def create(self, new: NewIssue) -> Issue:
        async with self._lock:
            await self._refresh()
            now = now_after()
            data: dict[str, Any] = {
                "id": self._new_id(new.title, now),
                "title": new.title,
                "status": "open",
                "priority": new.priority,
                "issue_type": new.issue_type,
                "created_at": now,
                "updated_at": now,
            }
            optional = {
                "description": new.description,
                "notes": new.notes,
                "assignee": new.assignee,
                "external_ref": new.external_ref,
                "labels": _unique(new.labels),
                "metadata": dict(new.metadata or {}),
            }
            data.update({key: value for key, value in optional.items() if value})
            line = Line("", data, changed=True)
            self._lines.append(line)
            self._by_id[data["id"]] = line
            await self._changed()
            return _view(line)

    async def update(self, issue_id: str, changes: IssueChanges) -> Issue:
        async with self._lock:
            await self._refresh()
            data = self._issue(issue_id)
            fields = {
                "title": changes.title,
                "description": changes.description,
                "notes": changes.notes,
                "priority": changes.priority,
                "issue_type": changes.issue_type,
                "assignee": changes.assignee,
            }
            data.update({key: value for key, value in fields.items() if value is not None})
            if changes.metadata is not None:
                _set_or_drop(data, "metadata", dict(changes.metadata))
            if changes.status is not None:
                _set_status(data, changes.status)
            labels = [
                label for label in data.get("labels") or [] if label not in changes.remove_labels
            ]
            _set_or_drop(data, "labels", _unique((*labels, *changes.add_labels)))
            return await self._touched(issue_id, data)

    async def close(self, issue_id: str, reason: str) -> Issue:
        async with self._lock:
            await self._refresh()
            data = self._issue(issue_id)
            _set_status(data, "closed", reason)
            return await self._touched(issue_id, data)

    async def add_dependency(self, issue_id: str, depends_on_id: str, kind: str) -> None:
        async with self._lock:
            await self._refresh()
            data = self._issue(issue_id)
            self._issue(depends_on_id)
            dependencies = list(data.get("dependencies") or [])
            if any(
                dep.get("depends_on_id") == depends_on_id and dep.get("type") == kind
                for dep in dependencies
            ):
                return
            now = now_after()
            dependencies.append(
                {
                    "issue_id": issue_id,
                    "depends_on_id": depends_on_id,
                    "type": kind,
                    "created_at": now,
                }
            )
            data["dependencies"] = dependencies
            await self._touched(issue_id, data)

    async def add_label(self, issue_id: str, label: str) -> None:
        await self.update(issue_id, IssueChanges(add_labels=(label,)))

    @asynccontextmanager
    async def batch(self) -> AsyncIterator[None]:
        """Raises ``BeadsFileError`` when the file could not be written at the end, or
        when a write that failed meanwhile (another task's) dropped this batch's changes."""
        batch = _Batch()
        token = _in_batch.set(batch)
        try:
            yield
        finally:
            _in_batch.reset(token)
            async with self._lock:
                if self._unsaved:
                    await self._save()
        first = batch.failures_at_first_change
        if first is not None and first != self._failures and self._failed is not None:
            raise BeadsFileError(self._failed.path, self._failed.cause)

    # -- the file --------------------------------------------------------------

    def _issues(self) -> list[Issue]:
        return [_view(line) for line in self._lines if line.issue is not None]

    def _issue(self, issue_id: str) -> dict[str, Any]:
        line = self._by_id.get(issue_id)
        if line is None or line.issue is None:
            raise IssueNotFound(f"no issue {issue_id!r}")
        return line.issue

    async def _touched(self, issue_id: str, data: dict[str, Any]) -> Issue:
        data["updated_at"] = now_after(data.get("updated_at"), data.get("closed_at"))
        line = self._by_id[issue_id]
        line.changed = True
        await self._changed()
        return _view(line)

    async def _changed(self) -> None:
        self._unsaved = True
        batch = _in_batch.get()
        if batch is None:
            await self._save()
        elif batch.failures_at_first_change is None:
            batch.failures_at_first_change = self._failures

    async def _save(self) -> None:
        """Write the file; when that fails (a full disk), drop what was not written, so
        the next read takes the file as it is and no later write carries a change that
        was refused."""
        try:
            await asyncio.to_thread(write_lines, self.path, self._lines)
        except OSError as error:
            self._unsaved, self._seen = False, None  # read the file again next time
            self._failed = BeadsFileError(self.path, error)
            self._failures += 1
            raise self._failed from error
        self._unsaved = False
        self._seen = _stamp(self.path)

    async def _refresh(self) -> None:
        """Read the file again if someone else changed it (and we have nothing unsaved)."""
        stamp = _stamp(self.path)
        if self._unsaved or (stamp == self._seen and self._seen is not None):
            return
        try:
            self._lines = await asyncio.to_thread(read_lines, self.path)
        except (OSError, UnicodeDecodeError) as error:
            raise BeadsError(f"could not read {self.path.name}: {error}") from error
        self._by_id = {line.issue["id"]: line for line in self._lines if line.issue is not None}
        self._seen = stamp
        self._known_prefix = None

    def _new_id(self, title: str, now: str) -> str:
        """``<prefix>-`` and 12 base-36 characters (62 bits, partly random): an id
        cannot be guessed or enumerated, so it tells nothing about who holds what."""
        prefix = self._prefix()
        seed = f"{title}\0{now}\0{os.getpid()}\0{secrets.token_hex(16)}"
        number = int.from_bytes(hashlib.sha256(seed.encode()).digest(), "big")
        encoded = ""
        while number:
            number, digit = divmod(number, 36)
            encoded += _BASE36[digit]
        for length in range(ID_LENGTH, ID_LENGTH + 5):
            candidate = f"{prefix}-{encoded[:length]}"
            if candidate not in self._by_id:
                return candidate
        raise BeadsError("could not find a free issue id")

    def _prefix(self) -> str:
        """The prefix of new ids, found once per reading of the file (counting every id's
        prefix for each new issue made mirroring a large file quadratic)."""
        if self._known_prefix is None:
            config = self.beads_dir / "config.yaml"
            match = (
                _PREFIX_SETTING.search(config.read_text(encoding="utf-8"))
                if config.exists()
                else None
            )
            self._known_prefix = (
                match.group(1) if match else common_prefix(list(self._by_id))
            ) or self.default_prefix
        return self._known_prefix


def prefixes_of(beads_dir: Path) -> set[str]:
    """The id prefixes of a beads database: its ``issue-prefix`` setting and every prefix
    its issues use (none when it has no file yet, or it cannot be read)."""
    found: set[str] = set()
    config = beads_dir / "config.yaml"
    try:
        if config.exists() and (match := _PREFIX_SETTING.search(config.read_text("utf-8"))):
            found.add(match.group(1))
        with (beads_dir / "issues.jsonl").open(encoding="utf-8") as lines:
            for text in lines:
                try:
                    issue_id = json.loads(text).get("id")
                except (ValueError, AttributeError):
                    continue
                if isinstance(issue_id, str) and (prefix := id_prefix(issue_id)):
                    found.add(prefix)
    except (OSError, UnicodeDecodeError):  # a damaged file is the sync agent's to name
        pass
    return found


def _view(line: Line) -> Issue:
    assert line.issue is not None
    return Issue.from_json(line.issue)


def _set_status(data: dict[str, Any], status: str, reason: str | None = None) -> None:
    """Keep bd's rule: ``closed_at`` is present exactly when the issue is closed."""
    data["status"] = status
    if status == "closed":
        data["closed_at"] = now_after(data.get("updated_at"))
        if reason:
            data["close_reason"] = reason
    else:
        data.pop("closed_at", None)
        data.pop("close_reason", None)


def _set_or_drop(data: dict[str, Any], key: str, value: Any) -> None:
    if value:
        data[key] = value
    else:
        data.pop(key, None)


def _unique(labels: tuple[str, ...] | list[str]) -> list[str]:
    return list(dict.fromkeys(labels))


def _haystack(issue: Issue) -> str:
    return f"{issue.id}\n{issue.title}\n{issue.description}\n{issue.notes}".casefold()


def _ns(timestamp: str) -> int:
    try:
        return nanoseconds(timestamp)
    except ValueError:
        return 0


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        status = path.stat()
    except FileNotFoundError:
        return None
    return (status.st_mtime_ns, status.st_size, status.st_ino)
