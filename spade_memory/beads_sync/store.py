"""Memories kept as beads issues: what the beads sync agent does with its engine.

Reading rule (see ``access``): an agent reads its own memories, the memories
of sessions shared with it and those mirrored from spaces it belongs to.
Naming a session, or another agent, the sender may not read answers
``item-not-found`` (as one that does not exist), so an empty answer only ever
means "nothing there". Marking and linking another's memory takes a shared
``writer`` role, closing it ``admin``; a memory the sender may not read at all
answers ``item-not-found``. Issues that are not memories (the project's own
work) are only shown as ``ready_work``, and only to the members of the space the
deployment names for them (``project_space``; none by default).

What an agent stores here counts against its byte budget (``footprint``): a store
that would cross it is refused with the figures, and nothing is written.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from contextvars import ContextVar
from typing import Any

from spade_memory.beads import mapping as m
from spade_memory.beads.engine import BeadsEngine
from spade_memory.beads.errors import BeadsError, BeadsFileError
from spade_memory.beads.issue import Issue, IssueChanges, IssueFilter, NewIssue
from spade_memory.beads.timestamps import nanoseconds, now_after
from spade_memory.beads_sync import footprint
from spade_memory.beads_sync.forget import forget_all, redact
from spade_memory.beads_sync.read_rules import Reader, reader_of
from spade_memory.protocol.beads import (
    BeadsForgotten,
    BeadsMemories,
    BeadsMemory,
    BeadsMemoryStats,
    BeadsStats,
    BeadsStored,
    BeadsStoreMemory,
    DeleteBeadsMemory,
    Done,
    ForgetBeadsMemories,
    GetSessionContext,
    IssueSummary,
    Link,
    LinkMemories,
    MarkMemoryAccessed,
    MirroredMemory,
    RestoreSession,
    RetrieveMemories,
    SearchBeadsMemories,
    SessionContext,
    SessionShared,
    ShareSession,
    UnshareSession,
)
from spade_memory.protocol.errors import (
    BadRequest,
    InternalServerError,
    ItemNotFound,
    MemoryServiceError,
    NotAuthorized,
)
from spade_memory.protocol.limits import Limits
from spade_memory.protocol.memories import Change, Memory
from spade_memory.protocol.ops import PERSONAL, AppliesOps, Op, Outcome, Record, Request
from spade_memory.protocol.xml_chars import uncarriable_value
from spade_memory.spaces.directory import SpaceDirectory
from spade_memory.spaces.gate import Gate
from spade_memory.storage.answer_budget import AnswerBudget, over_budget
from spade_memory.storage.faults import serving_fault
from spade_memory.storage.quotas import check_bytes

logger = logging.getLogger("spade_memory.beads")
MEMORY_REFS = "memory_refs"
"""The work item's metadata key listing the ids of the memories linked to it."""
CLOSE_REASONS = {
    "": "deleted from the base memory",
    "expired": "expired in the base memory",
}
"""Why a mirrored memory's issue was closed, by the change's ``reason`` (a memory
``forgotten`` in the base memory has its issue redacted: see ``forget``)."""
SUPERSEDED = "superseded by"
"""How a superseded memory's issue's close reason starts (its successor's issue follows)."""
Handler = Callable[[str, Any, str | None], Awaitable[Record]]


class BeadsMemoryStore(AppliesOps):
    """The memories of one beads project, for many owners."""

    def __init__(
        self,
        engine: BeadsEngine,
        session: str,
        directory: SpaceDirectory | None = None,
        limits: Limits | None = None,
        project_space: str | None = None,
    ) -> None:
        self.engine = engine
        self.project_space = project_space
        """The space whose members see the project's own issues (None: no one)."""
        self.limits = limits or Limits()
        """Its byte budget per owner."""
        self._storing = asyncio.Lock()
        """Held from a store's quota check to its write (two stores never both fit)."""
        self.session = session
        """The current session: where memories go when a request names none."""
        self.directory = directory
        """Where shared sessions and spaces are kept (None: each agent reads its own only)."""
        self.gate = Gate(directory)
        self._forgetting = asyncio.Lock()
        """Held by ``forget`` and ``mirror``: a mirror pass never writes into an issue
        from what it read before a ``forget`` redacted it."""
        self._handlers: dict[type[Op[Any]], Handler] = {
            BeadsStoreMemory: self.store,
            RetrieveMemories: lambda owner, op, _id: self.retrieve(owner, op),
            RestoreSession: lambda owner, op, _id: self.restore_session(
                owner, op.session_id, op.offset
            ),
            GetSessionContext: lambda owner, op, _id: self.session_context(owner, op.session_id),
            MarkMemoryAccessed: lambda owner, op, _id: self.mark_accessed(owner, op.memory_id),
            LinkMemories: lambda owner, op, _id: self.link(owner, op),
            DeleteBeadsMemory: lambda owner, op, _id: self.delete(owner, op.memory_id, op.reason),
            ForgetBeadsMemories: lambda owner, op, _id: self.forget(owner, op.dry_run),
            SearchBeadsMemories: lambda owner, op, _id: self.search(owner, op.query, op.limit),
            ShareSession: lambda owner, op, _id: self.share(owner, op),
            UnshareSession: lambda owner, op, _id: self.unshare(owner, op),
            BeadsMemoryStats: lambda owner, _op, _id: self.stats(owner),
            MirroredMemory: lambda owner, op, _id: self.mirrored(owner, op.base_memory_id),
        }

    async def batch(self, owner: str, requests: Sequence[Request]) -> list[Outcome]:
        """Apply the ops in order; the native engine writes its file once, at the end."""
        outcomes: list[Outcome] = []
        _budget.set(AnswerBudget(self.limits.max_answer_bytes))  # this task's batch alone
        try:
            async with self.engine.batch():
                for request in requests:
                    outcomes.append(await self._outcome(owner, request, alone=len(requests) == 1))
        except BeadsFileError as error:  # written at the end: none of the batch is in the file
            failure = beads_failure(error)
            logger.warning("beads batch not written: %s", failure.text)
            return [failure] * len(requests)
        return outcomes

    async def _outcome(self, owner: str, request: Request, *, alone: bool) -> Outcome:
        try:
            return await self._handlers[type(request.op)](owner, request.op, request.id)
        except MemoryServiceError as error:
            return error
        except BeadsError as error:
            failure = beads_failure(error)
            logger.error("beads operation %s failed: %s", request.op.tag(), error)
            return failure
        except Exception:
            if alone:
                raise  # the serving behaviour logs it and answers for it
            logger.exception("a batched %s failed", request.op.tag())
            return InternalServerError("the memory agent failed")

    # -- writes by agents --------------------------------------------------------

    async def store(
        self, owner: str, op: BeadsStoreMemory, request_id: str | None = None
    ) -> BeadsStored:
        """Create the memory's issue; a request id already applied (recorded in the
        issue, so across restarts too) returns the issue it created.

        Raises ``ResourceConstraint`` with the figures, nothing written, when the issue
        would take the sender over its byte budget."""
        async with self._storing:
            return await self._store(owner, op, request_id)

    async def _store(self, owner: str, op: BeadsStoreMemory, request_id: str | None) -> BeadsStored:
        where = IssueFilter(labels=(m.AGENT_LABEL + owner,), include_closed=True)
        mine = await self.engine.list_issues(where)
        for issue in mine if request_id is not None else ():
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
        held = footprint.held_by(mine, owner)[2]
        check_bytes(owner, held, self.limits.max_bytes_per_owner, footprint.bytes_of(new))
        issue = await self.engine.create(new)
        return BeadsStored(id=issue.id, session=session)

    async def stats(self, owner: str) -> BeadsStats:
        """How many memories ``owner`` stored here, and the bytes they hold."""
        where = IssueFilter(labels=(m.AGENT_LABEL + owner,), include_closed=True)
        opened, closed, size = footprint.held_by(await self.engine.list_issues(where), owner)
        return BeadsStats(
            open_memories=opened, closed_memories=closed, used_bytes=size,
            max_bytes=self.limits.max_bytes_per_owner,
        )  # fmt: skip

    async def mark_accessed(self, owner: str, memory_id: str) -> BeadsMemory:
        issue = await self._allowed(owner, memory_id, "writer")
        count = int(m.ours(issue).get("access_count", 0)) + 1
        metadata = m.with_ours(issue.metadata, access_count=count, last_accessed=now_after())
        return _memory(await self.engine.update(issue.id, IssueChanges(metadata=metadata)))

    async def link(self, owner: str, op: LinkMemories) -> Done:
        child = await self._allowed(owner, op.child, "writer")
        await self._allowed(owner, op.parent, "reader")
        await self.engine.add_dependency(child.id, op.parent, op.relationship)
        return Done(id=child.id)

    async def delete(self, owner: str, memory_id: str, reason: str | None) -> Done:
        issue = await self._allowed(owner, memory_id, "admin")
        if issue.is_open:
            await self.engine.close(issue.id, reason or f"memory deleted by {owner}")
        return Done(id=issue.id)

    async def forget(self, owner: str, dry_run: bool = False) -> BeadsForgotten:
        """Redact every memory of ``owner`` (see ``forget``); a dry run counts them."""
        async with self._forgetting:
            issues = await forget_all(self.engine, owner, dry_run)
        return BeadsForgotten(issues=issues, dry_run=dry_run)

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
            reader = await self._reader(owner)
            found = [issue for issue in found if reader.may(issue)]
            shared = (
                reader.shares_from(agent)
                if session is None
                else reader.shares_session(session, agent)
            )
            if not found and not shared:
                raise ItemNotFound(f"no memories of {agent} to read")
        memories, cut = _fitting(found[: op.limit])
        return BeadsMemories(
            memories=memories, session=session, note=_cut(memories) if cut else None
        )

    async def mirrored(self, owner: str, base_memory_id: str) -> BeadsMemory:
        """The issue mirroring a base memory, if the sender may read it."""
        ref = m.EXTERNAL_REF_PREFIX + base_memory_id
        every = await self.engine.list_issues(IssueFilter(include_closed=True))
        issue = next((i for i in every if i.external_ref == ref), None)
        if issue is None or not (await self._reader(owner)).may(issue):
            raise ItemNotFound(f"no beads issue mirrors memory {base_memory_id!r}")
        return _memory(issue)

    async def restore_session(self, owner: str, session: str, offset: int = 0) -> BeadsMemories:
        issues = await self._session_issues(owner, session)
        memories, cut = _fitting(issues[offset:])
        return BeadsMemories(
            memories=memories, session=session, note=_cut(memories) if cut else None,
            next_offset=offset + len(memories) if cut else None,
        )  # fmt: skip

    async def session_context(self, owner: str, session: str | None) -> SessionContext:
        session = session or self.session
        reader = await self._reader(owner)
        issues, everyone = await self._session_issues_and_agents(reader, session)
        project = self.project_space is not None and self.project_space in reader.spaces
        ready = [
            issue
            for issue in await self.engine.ready(limit=200)
            if (reader.may(issue) if m.is_memory(issue) else project)
        ]
        memories, cut = _fitting(issues)
        return SessionContext(
            session_id=session,
            memories=memories,
            note=_cut(memories) if cut else None,
            active_agents=everyone,
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
        reader = await self._reader(owner)
        found = [
            issue
            for issue in await self.engine.search(query, limit=10 * limit)
            if m.is_memory(issue) and reader.may(issue)
        ]
        memories, cut = _fitting(found[:limit])
        return BeadsMemories(memories=memories, note=_cut(memories) if cut else None)

    # -- sharing -------------------------------------------------------------------

    async def share(self, owner: str, op: ShareSession) -> SessionShared:
        """Share the sender's memories of a session (its own only: nothing else moves)."""
        if op.member == owner:
            raise BadRequest("a session is always shared with its own agent")
        await self._directory().share_session(owner, op.session, op.member, op.role)
        return SessionShared(session=op.session, member=op.member, role=op.role)

    async def unshare(self, owner: str, op: UnshareSession) -> SessionShared:
        await self._directory().unshare_session(owner, op.session, op.member)
        return SessionShared(session=op.session, member=op.member, role=None)

    def _directory(self) -> SpaceDirectory:
        if self.directory is None:
            raise BadRequest("sessions cannot be shared: this deployment keeps no directory")
        return self.directory

    # -- the base memory agent's changes ------------------------------------------

    async def mirror(self, changes: Iterable[Change]) -> int:
        """Apply committed base memory changes; each applies once, however often it comes.
        A memory ``forgotten`` there has its issue redacted; a redacted issue is never
        written again."""
        async with self._forgetting:
            return await self._mirror(changes)

    async def _mirror(self, changes: Iterable[Change]) -> int:
        mirrored = await self.engine.list_issues(IssueFilter(include_closed=True))
        by_ref = {i.external_ref: i for i in mirrored if i.external_ref}
        by_id = {i.id: i for i in mirrored}
        applied = 0
        async with self.engine.batch():
            for change in changes:
                ref = m.EXTERNAL_REF_PREFIX + change.memory_id
                issue = by_ref.get(ref)
                if issue is not None and m.is_forgotten(issue):
                    continue
                if change.kind == "deleted" and issue is not None:
                    if change.reason == "forgotten":
                        by_ref[ref] = by_id[issue.id] = await redact(self.engine, issue)
                        applied += 1
                    elif issue.is_open:
                        reason = CLOSE_REASONS.get(change.reason or "", CLOSE_REASONS[""])
                        await self.engine.close(issue.id, reason)
                        applied += 1
                elif change.kind != "deleted" and change.memory is not None:
                    uncarriable = uncarriable_value(change.memory.model_dump(mode="json"))
                    if uncarriable is not None:  # stored by an older version
                        logger.warning(
                            "memory %s is not mirrored into beads: %s",
                            change.memory_id,
                            uncarriable,
                        )
                        continue
                    written = await self._mirror_memory(change.memory, issue, change.space_key)
                    written = await self._mirror_supersede(change.memory, written, by_ref)
                    by_ref[ref] = written
                    by_id[written.id] = written
                    await self._link_work_items(change.memory, written, by_id, by_ref)
                    applied += 1
        return applied

    async def _mirror_memory(
        self, memory: Memory, issue: Issue | None, space_key: str | None = None
    ) -> Issue:
        """Create or update the issue mirroring ``memory``; a shared space's issue keeps
        the space's id (``space_key``) beside its name, so that a space made later under
        the same name never reads it (``read_rules``)."""
        memory_type = m.CATEGORY_MEMORY_TYPE.get(memory.category, "learning")
        space = None if memory.space == PERSONAL else memory.space
        labels = m.labels_for(
            memory_type, memory.owner, None, tuple(memory.tags), memory.category, space
        )
        ours = {
            "confidence": memory.confidence, "source": "base-memory",
            "memory_source": memory.source, "work_items": memory.work_items or None,
            "expires_at": None if memory.expires_at is None else memory.expires_at.isoformat(),
            "version": memory.version, "space_key": None if space is None else space_key,
        }  # fmt: skip
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
                    metadata=m.with_ours(memory.metadata, **ours),
                )
            )
        kept = {key: issue.metadata[key] for key in (MEMORY_REFS,) if key in issue.metadata}
        was_ours = {k: v for k, v in m.ours(issue).items() if k not in ours}
        changes = IssueChanges(
            title=m.title_of(memory.content),
            description=memory.content,
            notes=memory.context or "",
            issue_type=m.issue_type_of(memory_type),
            metadata=m.with_ours({**kept, **memory.metadata}, **was_ours, **ours),
            remove_labels=tuple(label for label in issue.labels if label not in labels),
            add_labels=tuple(label for label in labels if label not in issue.labels),
        )
        return await self.engine.update(issue.id, changes)

    async def _mirror_supersede(
        self, memory: Memory, issue: Issue, by_ref: dict[str, Issue]
    ) -> Issue:
        """A superseded memory's issue as ``bd supersede`` leaves one: a ``supersedes``
        dependency on its successor's issue, and closed with the reason; reopened once
        the successor is deleted (the memory is current again). Returns the issue."""
        newer = memory.superseded_by
        if newer is None:
            if not issue.is_open and (issue.close_reason or "").startswith(SUPERSEDED):
                return await self.engine.update(issue.id, IssueChanges(status="open"))
            return issue
        successor = by_ref.get(m.EXTERNAL_REF_PREFIX + newer)
        if successor is None:
            # not mirrored yet: the change that superseded it comes after the successor's
            # own in the feed, and closes it then
            return issue
        if not any(
            dep.depends_on_id == successor.id and dep.type == "supersedes"
            for dep in issue.dependencies
        ):
            await self.engine.add_dependency(issue.id, successor.id, "supersedes")
        if issue.is_open:
            return await self.engine.close(issue.id, f"{SUPERSEDED} {successor.id}")
        return await self.engine.get(issue.id) or issue

    async def _link_work_items(
        self, memory: Memory, issue: Issue, by_id: dict[str, Issue], by_ref: dict[str, Issue]
    ) -> None:
        """A ``discovered-from`` dependency from the memory's issue to each work item's
        issue in this database (found by id, or by ``external_ref``), and the memory's id
        in the work item's ``metadata.memory_refs``; a work item not here is left to
        ``memory_refs``."""
        for work_id in memory.work_items:
            work = by_id.get(work_id) or by_ref.get(work_id)
            if work is None or work.id == issue.id:
                continue
            if not any(
                dep.depends_on_id == work.id and dep.type == "discovered-from"
                for dep in issue.dependencies
            ):
                await self.engine.add_dependency(issue.id, work.id, "discovered-from")
            refs = work.metadata.get(MEMORY_REFS)
            refs = list(refs) if isinstance(refs, list) else []
            if memory.id not in refs:
                metadata = {**work.metadata, MEMORY_REFS: [*refs, memory.id]}
                by_id[work.id] = await self.engine.update(work.id, IssueChanges(metadata=metadata))

    # -- access ----------------------------------------------------------------------

    async def _reader(self, owner: str) -> Reader:
        return await reader_of(owner, self.gate)

    async def _allowed(self, owner: str, memory_id: str, role: str) -> Issue:
        """A memory the sender holds ``role`` for; one it may not read answers exactly
        as one that does not exist, one it only reads ``not-authorized``."""
        issue = await self.engine.get(memory_id)
        reader = await self._reader(owner)
        if issue is None or not m.is_memory(issue) or not reader.may(issue):
            raise ItemNotFound(f"no memory {memory_id!r}")
        if not reader.may(issue, role):
            raise NotAuthorized(f"changing {memory_id!r} takes a {role} share of its session")
        return issue

    async def _session_issues(self, owner: str, session: str) -> list[Issue]:
        """What the sender may read of ``session``, oldest first; ``item-not-found`` when it
        neither took part in it nor had it shared (the current session always answers)."""
        return (await self._session_issues_and_agents(await self._reader(owner), session))[0]

    async def _session_issues_and_agents(
        self, reader: Reader, session: str
    ) -> tuple[list[Issue], list[str]]:
        """``_session_issues``, and every agent active in the session (told to those who
        read some of it: its participants and those it was shared with)."""
        where = IssueFilter(labels=(m.SESSION_LABEL + session,), include_closed=True)
        issues = [i for i in await self.engine.list_issues(where) if m.is_memory(i)]
        readable = [issue for issue in issues if reader.may(issue)]
        if not readable and session != self.session and not reader.shares_session(session):
            raise ItemNotFound(f"no session {session!r}")
        agents = (
            sorted({a for i in issues if (a := m.label_value(i, m.AGENT_LABEL))})
            if readable or reader.shares_session(session)
            else []
        )
        return sorted(readable, key=_oldest_first), agents


def beads_failure(error: BeadsError) -> MemoryServiceError:
    """The typed failure for a beads error: the file's named fault when it could not be
    written (``resource-constraint`` "disk full: issues.jsonl cannot grow" on a full disk,
    as the stores answer theirs), else ``internal-server-error``."""
    if isinstance(error, BeadsFileError):
        fault = serving_fault(error.path, error.cause)
        if fault is not None:
            return fault
    return InternalServerError("the beads tracker could not be read or written")


_budget: ContextVar[AnswerBudget] = ContextVar("beads_answer_budget")
"""What the answers of the batch being applied may still carry (``batch`` sets it)."""


def _fitting(issues: Iterable[Issue]) -> tuple[list[BeadsMemory], bool]:
    """The memories of ``issues``, in order, while their JSON fits what the batch's
    answers may still carry (``Limits.max_answer_bytes``), which they spend; and whether
    they stopped there. Raises ``ResourceConstraint`` when not even the first fits."""
    budget = _budget.get(None) or AnswerBudget(Limits.max_answer_bytes)
    kept: list[BeadsMemory] = []
    for issue in issues:
        memory = _memory(issue)
        if not budget.spend(len(memory.model_dump_json().encode("utf-8", "surrogatepass"))):
            if not kept:
                raise over_budget()
            return kept, True
        kept.append(memory)
    return kept, False


def _cut(kept: Sequence[BeadsMemory]) -> str:
    """The note of an answer that ``_fitting`` stopped."""
    return (
        f"{len(kept)} memories fit the bytes one answer may carry (run --max-answer-bytes);"
        " ask for fewer, in a batch of its own, or (restore_session) from the next offset"
    )


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
        space=m.label_value(issue, m.SPACE_LABEL),
        labels=list(issue.labels),
        priority=issue.priority,
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
