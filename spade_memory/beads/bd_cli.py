"""The bd engine: every operation is one ``bd --json …`` command in the project.

Flags are those of bd's own commands (``create``, ``update``, ``close``,
``show``, ``list``, ``dep add``, ``label add``, ``search``, ``ready``), always
in ``--flag=value`` form so a value that starts with ``-`` is never read as a
flag, and stdin is empty so bd never waits for a description on it.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from spade_memory.beads.errors import BeadsError, IssueNotFound
from spade_memory.beads.issue import Issue, IssueChanges, IssueFilter, NewIssue


class BdCliEngine:
    """Issues of the beads project at ``project``, through the bd binary."""

    name = "bd"

    def __init__(self, project: Path, bd: str = "bd", timeout: float = 30.0) -> None:
        self.project = project
        self.bd = bd
        self.timeout = timeout

    async def create(self, new: NewIssue) -> Issue:
        args = ["create", f"--title={new.title}", f"--type={new.issue_type}"]
        args += [f"--priority={new.priority}", f"--description={new.description}"]
        args += _optional(assignee=new.assignee, notes=new.notes, external_ref=new.external_ref)
        args += [f"--labels={label}" for label in new.labels]
        created = _one(await self._run(args))
        if new.metadata:
            return await self.update(created.id, IssueChanges(metadata=new.metadata))
        return created

    async def get(self, issue_id: str) -> Issue | None:
        try:
            return _one(await self._run(["show", issue_id]))
        except IssueNotFound:
            return None

    async def list_issues(self, where: IssueFilter | None = None) -> list[Issue]:
        where = where or IssueFilter()
        args = ["list", f"--limit={where.limit or 0}"]
        if where.status is not None:
            args.append(f"--status={where.status}")
        elif where.include_closed:
            args.append("--all")
        args += _optional(assignee=where.assignee, type=where.issue_type)
        args += [f"--label={label}" for label in where.labels]
        args += [f"--label-any={label}" for label in where.labels_any]
        return _many(await self._run(args))

    async def update(self, issue_id: str, changes: IssueChanges) -> Issue:
        args = ["update", issue_id]
        args += _optional(
            title=changes.title,
            description=changes.description,
            notes=changes.notes,
            status=changes.status,
            type=changes.issue_type,
            assignee=changes.assignee,
        )
        if changes.priority is not None:
            args.append(f"--priority={changes.priority}")
        if changes.metadata is not None:
            args.append(f"--metadata={json.dumps(dict(changes.metadata), ensure_ascii=False)}")
        args += [f"--add-label={label}" for label in changes.add_labels]
        args += [f"--remove-label={label}" for label in changes.remove_labels]
        return _one(await self._run(args))

    async def close(self, issue_id: str, reason: str) -> Issue:
        return _one(await self._run(["close", issue_id, f"--reason={reason}"]))

    async def add_dependency(self, issue_id: str, depends_on_id: str, kind: str) -> None:
        await self._run(["dep", "add", issue_id, depends_on_id, f"--type={kind}"])

    async def add_label(self, issue_id: str, label: str) -> None:
        await self._run(["label", "add", issue_id, label])

    async def search(self, query: str, limit: int = 50) -> list[Issue]:
        return _many(
            await self._run(["search", f"--query={query}", "--status=open", f"--limit={limit}"])
        )

    async def ready(self, limit: int = 50) -> list[Issue]:
        return _many(await self._run(["ready", f"--limit={limit}"]))

    @asynccontextmanager
    async def batch(self) -> AsyncIterator[None]:
        yield  # bd writes each command itself

    async def _run(self, args: Sequence[str]) -> Any:
        # a thread, not asyncio's subprocesses: those need the loop policy's child watcher,
        # which SPADE's uvloop policy lacks when it is set under a running asyncio loop
        try:
            done = await asyncio.to_thread(
                subprocess.run, [self.bd, "--json", *args], cwd=self.project,
                stdin=subprocess.DEVNULL, capture_output=True, timeout=self.timeout,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            raise BeadsError(f"bd {args[0]} did not finish in {self.timeout:g} s") from None
        message = done.stderr.decode(errors="replace").strip()
        if done.returncode != 0:
            if "not found" in message.lower():
                raise IssueNotFound(message or f"bd {args[0]} found no such issue")
            raise BeadsError(f"bd {args[0]} failed: {message[-500:]}")
        try:
            return json.loads(done.stdout) if done.stdout.strip() else None
        except ValueError:
            raise BeadsError(f"bd {args[0]} printed something that is not JSON") from None


def _optional(**values: str | None) -> list[str]:
    return [f"--{name.replace('_', '-')}={value}" for name, value in values.items() if value]


def _many(output: Any) -> list[Issue]:
    if output is None:
        return []
    items = output if isinstance(output, list) else [output]
    return [Issue.from_json(item) for item in items if isinstance(item, dict) and "id" in item]


def _one(output: Any) -> Issue:
    issues = _many(output)
    if not issues:
        raise BeadsError("bd printed no issue")
    return issues[0]
