"""Memories kept as beads issues: what the beads sync agent does with its engine.

Reading rule: an agent reads its own memories only, whatever session they
are in; another agent's memory in the same session stays private (naming a
session is no proof of being invited to it). A session's context lists the
agents active in it, to its participants. Changing, closing and linking a
memory (child and parent) is for its owner only; another agent's memory
answers ``item-not-found``, exactly as one that does not exist. Issues that are not memories
(the project's own work) are only shown as ``ready_work``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

from ..base_memory.ops import Change, Memory
from ..beads import mapping as m
from ..beads.engine import BeadsEngine
from ..beads.errors import BeadsError
from ..beads.issue import Issue, IssueChanges, IssueFilter, NewIssue
from ..beads.timestamps import nanoseconds, now_after
from ..errors import InternalServerError, ItemNotFound, MemoryServiceError
from ..ops import AppliesOps, Op, Outcome, Record, Request
from .ops import (
    BeadsMemories,
    BeadsMemory,
    BeadsStored,
    BeadsStoreMemory,
    DeleteBeadsMemory,
    Done,
    GetSessionContext,
    IssueSummary,
    Link,
    LinkMemories,
    MarkMemoryAccessed,
    RestoreSession,
    RetrieveMemories,
    SearchBeadsMemories,
    SessionContext,
)

logger = logging.getLogger("spade_memory.beads")
Handler = Callable[[str, Any, str | None], Awaitable[Record]]


class BeadsMemoryStore(AppliesOps):
    """The memories of one beads project, for many owners."""

    def __init__(self, engine: BeadsEngine, session: str) -> None:
        self.engine = engine
        self.session = session
        """The current session: where memories go when a request names none."""
        self._handlers: dict[type[Op[Any]], Handler] = {
            BeadsStoreMemory: self.store,
            RetrieveMemories: lambda owner, op, _id: self.retrieve(owner, op),
            RestoreSession: lambda owner, op, _id: self.restore_session(owner, op.session_id),
            GetSessionContext: lambda owner, op, _id: self.session_context(owner, op.session_id),
            MarkMemoryAccessed: lambda owner, op, _id: self.mark_accessed(owner, op.memory_id),
            LinkMemories: lambda owner, op, _id: self.link(owner, op),
            DeleteBeadsMemory: lambda owner, op, _id: self.delete(owner, op.memory_id, op.reason),
            SearchBeadsMemories: lambda owner, op, _id: self.search(owner, op.query, op.limit),
        }

    async def batch(self, owner: str, requests: Sequence[Request]) -> list[Outcome]:
        """Apply the ops in order; the native engine writes its file once, at the end."""
        outcomes: list[Outcome] = []
        async with self.engine.batch():
            for request in requests:
                try:
                    handler = self._handlers[type(request.op)]
                    outcomes.append(await handler(owner, request.op, request.id))
                except MemoryServiceError as error:
                    outcomes.append(error)
                except BeadsError as error:
                    logger.error("beads operation %s failed: %s", request.op.tag(), error)
                    failed = "the beads tracker could not be read or written"
                    outcomes.append(InternalServerError(failed))
                except Exception:
                    if len(requests) == 1:
                        raise  # the serving behaviour logs it and answers for it
                    logger.exception("a batched %s failed", request.op.tag())
                    outcomes.append(InternalServerError("the memory agent failed"))
        return outcomes

    # -- writes by agents --------------------------------------------------------

    async def store(
        self, owner: str, op: BeadsStoreMemory, request_id: str | None = None
    ) -> BeadsStored:
        """Create the memory's issue; a request id already applied (recorded in the
        issue, so across restarts too) returns the issue it created."""
        if request_id is not None:
            where = IssueFilter(labels=(m.AGENT_LABEL + owner,), include_closed=True)
            for issue in await self.engine.list_issues(where):
                if m.ours(issue).get("request_id") == request_id:
                    stored_in = m.label_value(issue, m.SESSION_LABEL) or self.session
                    return BeadsStored(id=issue.id, session=stored_in)
        session = op.session or self.session
        new = NewIssue(
            title=op.title or m.title_of(op.content),
            description=op.content,
            issue_type=m.issue_type_of(op.memory_type),
            priority=m.priority_of(op.importance),
            assignee=owner,
            labels=m.labels_for(op.memory_type, owner, session, tuple(op.tags)),
            metadata=m.with_ours(
                op.metadata, importance=op.importance, access_count=0, request_id=request_id
            ),
        )
        issue = await self.engine.create(new)
        return BeadsStored(id=issue.id, session=session)

    async def mark_accessed(self, owner: str, memory_id: str) -> BeadsMemory:
        issue = await self._owned(owner, memory_id)
        count = int(m.ours(issue).get("access_count", 0)) + 1
        metadata = m.with_ours(issue.metadata, access_count=count, last_accessed=now_after())
        return _memory(await self.engine.update(issue.id, IssueChanges(metadata=metadata)))

    async def link(self, owner: str, op: LinkMemories) -> Done:
        child = await self._owned(owner, op.child)
        await self._readable(owner, op.parent)
        await self.engine.add_dependency(child.id, op.parent, op.relationship)
        return Done(id=child.id)

    async def delete(self, owner: str, memory_id: str, reason: str | None) -> Done:
        issue = await self._owned(owner, memory_id)
        if issue.is_open:
            await self.engine.close(issue.id, reason or f"memory deleted by {owner}")
        return Done(id=issue.id)

    # -- reads ---------------------------------------------------------------------

    async def retrieve(self, owner: str, op: RetrieveMemories) -> BeadsMemories:
        session = None if op.all_sessions else (op.session or self.session)
        agent = op.agent or owner
        labels = [m.AGENT_LABEL + agent]
        if session is not None:
            labels.append(m.SESSION_LABEL + session)
        if op.memory_type is not None:
            labels.append(m.MEMORY_LABEL + op.memory_type)
        where = IssueFilter(labels=tuple(labels), labels_any=tuple(op.tags))
        found = sorted(await self.engine.list_issues(where), key=_newest_first)
        if agent != owner:
            readable = await self._readable_ids(owner)
            found = [issue for issue in found if issue.id in readable]
        return BeadsMemories(memories=[_memory(i) for i in found[: op.limit]], session=session)

    async def restore_session(self, owner: str, session: str) -> BeadsMemories:
        issues = _owned_by(owner, await self._session_issues(owner, session))
        return BeadsMemories(memories=[_memory(issue) for issue in issues], session=session)

    async def session_context(self, owner: str, session: str | None) -> SessionContext:
        session = session or self.session
        everyone = await self._session_issues(owner, session)
        issues = _owned_by(owner, everyone)
        readable = await self._readable_ids(owner)
        ready = [
            issue
            for issue in await self.engine.ready(limit=200)
            if not m.is_memory(issue) or issue.id in readable
        ]
        agents = sorted({a for i in everyone if (a := m.label_value(i, m.AGENT_LABEL))})
        return SessionContext(
            session_id=session,
            memories=[_memory(issue) for issue in issues],
            active_agents=agents,
            open_issues=[_summary(issue) for issue in issues if issue.is_open],
            ready_work=[_summary(issue) for issue in ready[:20]],
            metadata={
                "memory_count": len(issues),
                "started_at": issues[0].created_at if issues else None,
                "last_activity": max((i.updated_at for i in issues), default=None),
                "current_session": session == self.session,
                "engine": self.engine.name,
            },
        )

    async def search(self, owner: str, query: str, limit: int) -> BeadsMemories:
        readable = await self._readable_ids(owner)
        found = [i for i in await self.engine.search(query, limit=10 * limit) if i.id in readable]
        return BeadsMemories(memories=[_memory(issue) for issue in found[:limit]])

    # -- the base memory agent's changes ------------------------------------------

    async def mirror(self, changes: Iterable[Change]) -> int:
        """Apply committed base memory changes; each applies once, however often it comes."""
        mirrored = await self.engine.list_issues(IssueFilter(include_closed=True))
        by_ref = {i.external_ref: i for i in mirrored if i.external_ref}
        applied = 0
        async with self.engine.batch():
            for change in changes:
                issue = by_ref.get(m.EXTERNAL_REF_PREFIX + change.memory_id)
                if change.kind == "deleted":
                    if issue is not None and issue.is_open:
                        await self.engine.close(issue.id, "deleted from the base memory")
                        applied += 1
                elif change.memory is not None:
                    written = await self._mirror_memory(change.memory, issue)
                    by_ref[m.EXTERNAL_REF_PREFIX + change.memory_id] = written
                    applied += 1
        return applied

    async def _mirror_memory(self, memory: Memory, issue: Issue | None) -> Issue:
        memory_type = m.CATEGORY_MEMORY_TYPE.get(memory.category, "learning")
        labels = m.labels_for(memory_type, memory.owner, None, category=memory.category)
        ours = {"confidence": memory.confidence, "source": "base-memory"}
        if issue is None:
            return await self.engine.create(
                NewIssue(
                    title=m.title_of(memory.content),
                    description=memory.content,
                    issue_type=m.issue_type_of(memory_type),
                    assignee=memory.owner,
                    labels=labels,
                    notes=memory.context or "",
                    external_ref=m.EXTERNAL_REF_PREFIX + memory.id,
                    metadata=m.with_ours({}, **ours),
                )
            )
        stale = tuple(
            label for label in issue.labels if label.startswith(m.RESERVED_LABEL_PREFIXES)
        )
        changes = IssueChanges(
            title=m.title_of(memory.content),
            description=memory.content,
            notes=memory.context or "",
            issue_type=m.issue_type_of(memory_type),
            metadata=m.with_ours(issue.metadata, **ours),
            remove_labels=tuple(label for label in stale if label not in labels),
            add_labels=tuple(label for label in labels if label not in issue.labels),
        )
        return await self.engine.update(issue.id, changes)

    # -- access ----------------------------------------------------------------------

    async def _owned(self, owner: str, memory_id: str) -> Issue:
        """The owner's memory; another's answers exactly as one that does not exist."""
        issue = await self.engine.get(memory_id)
        if issue is None or not m.is_memory(issue) or m.label_value(issue, m.AGENT_LABEL) != owner:
            raise ItemNotFound(f"no memory {memory_id!r}")
        return issue

    async def _readable(self, owner: str, memory_id: str) -> Issue:
        issue = await self.engine.get(memory_id)
        if (
            issue is None
            or not m.is_memory(issue)
            or issue.id not in await self._readable_ids(owner)
        ):
            raise ItemNotFound(f"no memory {memory_id!r}")
        return issue

    async def _readable_ids(self, owner: str) -> set[str]:
        every_type = tuple(m.MEMORY_LABEL + memory_type for memory_type in m.MEMORY_TYPES)
        where = IssueFilter(labels_any=every_type, include_closed=True)
        memories = await self.engine.list_issues(where)
        return {i.id for i in _owned_by(owner, memories)}

    async def _session_issues(self, owner: str, session: str) -> list[Issue]:
        where = IssueFilter(labels=(m.SESSION_LABEL + session,), include_closed=True)
        issues = [i for i in await self.engine.list_issues(where) if m.is_memory(i)]
        if not any(m.label_value(i, m.AGENT_LABEL) == owner for i in issues):
            return []  # not a participant: nothing to see
        return sorted(issues, key=_oldest_first)


def _owned_by(owner: str, issues: list[Issue]) -> list[Issue]:
    return [issue for issue in issues if m.label_value(issue, m.AGENT_LABEL) == owner]


def _memory(issue: Issue) -> BeadsMemory:
    ours = m.ours(issue)
    importance = ours.get("importance")
    return BeadsMemory(
        id=issue.id,
        title=issue.title,
        content=issue.description,
        memory_type=m.memory_type_of(issue),
        agent=m.label_value(issue, m.AGENT_LABEL),
        session=m.label_value(issue, m.SESSION_LABEL),
        tags=m.tags_of(issue),
        metadata=m.user_metadata(issue),
        importance=importance if isinstance(importance, int) else m.importance_of(issue.priority),
        status=issue.status,
        created_at=issue.created_at,
        updated_at=issue.updated_at,
        parent=m.parent_of(issue),
        links=[Link(memory_id=d.depends_on_id, relationship=d.type) for d in issue.dependencies],
        access_count=int(ours.get("access_count", 0)),
        last_accessed=ours.get("last_accessed"),
        category=m.label_value(issue, m.CATEGORY_LABEL),
        base_memory_id=_base_memory_id(issue),
    )


def _base_memory_id(issue: Issue) -> str | None:
    ref = issue.external_ref or ""
    return (
        ref.removeprefix(m.EXTERNAL_REF_PREFIX) if ref.startswith(m.EXTERNAL_REF_PREFIX) else None
    )


def _summary(issue: Issue) -> IssueSummary:
    return IssueSummary(
        id=issue.id,
        title=issue.title,
        status=issue.status,
        priority=issue.priority,
        issue_type=issue.issue_type,
    )


def _oldest_first(issue: Issue) -> tuple[int, str]:
    return (_ns(issue.created_at), issue.id)


def _newest_first(issue: Issue) -> tuple[int, str]:
    ns, issue_id = _oldest_first(issue)
    return (-ns, issue_id)


def _ns(timestamp: str) -> int:
    try:
        return nanoseconds(timestamp)
    except ValueError:
        return 0
