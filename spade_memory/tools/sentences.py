"""What a model reads back from a memory tool: short sentences, never an exception.

A memory is shown with its id, so a model that found it can read, change or forget
it by that id, and with its author and space, its text quoted: what memory answers is
information from the memory service, never instructions (``provenance``).
"""

from __future__ import annotations

from spade_memory.protocol.errors import MemoryServiceError, MemoryTimeout, PendingApproval
from spade_memory.protocol.memories import (
    Deleted,
    DeleteMemory,
    ListMemories,
    MemoriesAbout,
    Memory,
    MemoryHistory,
    MemoryList,
    RelatedMemories,
    SearchMemories,
    Stored,
    StoreMemory,
    SupersedeMemory,
)
from spade_memory.protocol.notes import AddInformation, Confirmation
from spade_memory.protocol.ops import PERSONAL, Op
from spade_memory.protocol.spaces import SpaceDetails, SpaceList
from spade_memory.protocol.working import WorkingMemoryState
from spade_memory.tools.provenance import FROM_MEMORY, provenance, quoted


def said_stored(op: StoreMemory | SupersedeMemory, result: Stored) -> str:
    if isinstance(op, SupersedeMemory) and op.by is not None:
        return f"Memory {result.id} now replaces memory {op.id}, which is no longer current."
    where = "" if op.space in (None, PERSONAL) else f" in space {op.space}"
    kind = result.category or op.category
    lines = [f"Stored {kind} memory{where}: {op.content} (id {result.id})"]
    if result.supersedes is not None:
        lines.append(f"It replaces memory {result.supersedes}, which is no longer current.")
    for conflict in result.conflicts:
        lines.append(
            f"Possible conflict: memory {conflict.id} says {quoted(conflict.content)}"
            f" ({conflict.subject}: {conflict.was!r}, now {conflict.now!r}). If it is no"
            f" longer true, supersede it with supersede_memory."
        )
    return "\n".join(lines)


def memory_line(memory: Memory, *, with_category: bool = True) -> list[str]:
    """A memory as one line, its text quoted, with its space, author and id (and its
    context on a second line)."""
    head = f"- [{memory.category}] " if with_category else "- "
    lines = [f"{head}{quoted(memory.content)} ({provenance(memory)}; id {memory.id})"]
    if memory.context:
        lines.append(f"  Context: {quoted(memory.context)}")
    return lines


def _memory_lines(result: MemoryList, *, with_category: bool) -> list[str]:
    lines = [
        line
        for memory in result.memories
        for line in memory_line(memory, with_category=with_category)
    ]
    if result.note is not None and "--max-answer-bytes" in result.note:
        lines.append(CUT_SHORT)
    return lines


CUT_SHORT = "(More were found than one answer carries: ask for fewer, or narrow it down.)"
"""Said under memories an answer stopped at its bytes, so the model does not take them
for all there is."""


def said_found(op: SearchMemories, result: MemoryList) -> str:
    count = len(result.memories)
    return _said_memories(
        result, f"No memories found for query: {op.query}",
        f"Found {count} memories for '{op.query}' ({FROM_MEMORY}):",
    )  # fmt: skip


def said_listed(op: ListMemories, result: MemoryList) -> str:
    if not result.memories:
        return f"No {op.category} memories found."
    shown = "shown" if result.next_offset is not None else "total"
    head = f"My {op.category} memories ({len(result.memories)} {shown}; {FROM_MEMORY}):"
    return "\n".join([head, *_memory_lines(result, with_category=False)])


def said_about(op: MemoriesAbout, result: MemoryList) -> str:
    count = len(result.memories)
    return _said_memories(
        result, f"I remember nothing about {op.entity}.",
        f"What I remember about {op.entity} ({count}; {FROM_MEMORY}):",
    )  # fmt: skip


def said_related(op: RelatedMemories, result: MemoryList) -> str:
    count = len(result.memories)
    return _said_memories(
        result, f"No memory names what memory {op.id} names.",
        f"Memories naming what {op.id} names ({count}, most shared first; {FROM_MEMORY}):",
    )  # fmt: skip


def _said_memories(result: MemoryList, none: str, head: str) -> str:
    """``none`` for an empty answer, else ``head`` over the memories with their category."""
    if not result.memories:
        return none
    return "\n".join([head, *_memory_lines(result, with_category=True)])


def said_remembered(_op: AddInformation, result: Confirmation) -> str:
    return result.text


def said_memory(_op: Op[Memory], memory: Memory) -> str:
    """One memory read: its line, confidence, tags, version."""
    return _said_one(f"Memory {memory.id}", memory)


def said_updated(_op: Op[Memory], memory: Memory) -> str:
    return _said_one(f"Updated memory {memory.id}", memory)


def said_restored(_op: Op[Memory], memory: Memory) -> str:
    return _said_one(f"Memory {memory.id} is current again", memory)


def _said_one(head: str, memory: Memory) -> str:
    details = [f"confidence {memory.confidence:g}", f"version {memory.version}"]
    if memory.tags:
        details.append(f"tags {', '.join(quoted(tag) for tag in memory.tags)}")
    lines = [f"{head} ({FROM_MEMORY}):", *memory_line(memory), f"  ({'; '.join(details)})"]
    return "\n".join(lines)


def said_deleted(_op: DeleteMemory, result: Deleted) -> str:
    return f"Deleted memory {result.id}."


def said_history(_op: Op[MemoryHistory], history: MemoryHistory) -> str:
    kept = len(history.versions)
    lines = [f"History of memory {history.id} ({kept} versions kept; {FROM_MEMORY}):"]
    for version in history.versions:
        lines.append(
            f"- version {version.version}, by {version.changed_by} at"
            f" {version.changed_at.isoformat(timespec='seconds')}: [{version.category}]"
            f" {quoted(version.content)}"
        )
    if history.supersedes:
        lines.append(f"It replaced: {', '.join(history.supersedes)} (the latest first).")
    if history.superseded_by:
        lines.append(f"Replaced by: {', '.join(history.superseded_by)} (the first first).")
    if history.deleted is not None:
        why = f" ({history.deleted.reason})" if history.deleted.reason else ""
        lines.append(
            f"Deleted by {history.deleted.deleted_by} at"
            f" {history.deleted.deleted_at.isoformat(timespec='seconds')}{why}."
        )
    return "\n".join(lines)


def said_spaces(_op: Op[SpaceList], result: SpaceList) -> str:
    if not result.spaces:
        return "I belong to no shared space (only my personal one)."
    lines = [f"My shared spaces ({len(result.spaces)}):"]
    for space in result.spaces:
        about = f": {space.description}" if space.description else ""
        lines.append(f"- {space.name} (my role: {space.role}; owner {space.owner}){about}")
    return "\n".join(lines)


def said_space(_op: Op[SpaceDetails], space: SpaceDetails) -> str:
    quota = f" of at most {space.max_memories}" if space.max_memories is not None else ""
    lines = [
        f"Space {space.name} (owner {space.owner}; my role: {space.role}):"
        f" {space.memories} memories{quota}",
        *(f"- {member.member}: {member.role}" for member in space.members),
    ]
    if space.description:
        lines.insert(1, space.description)
    return "\n".join(lines)


def said_working_memory(_op: Op[WorkingMemoryState], state: WorkingMemoryState) -> str:
    """A session's working memory, most useful parts first."""
    memory = state.working_memory
    where = "" if state.space == PERSONAL else f" (space {state.space})"
    lines = [f"Working memory of session {memory.session_id}{where} ({FROM_MEMORY}):"]
    focus = memory.current_focus
    lines.append(
        "Focus: none" if focus is None else f"Focus: {focus.type} {focus.name} ({focus.id})"
    )
    if memory.focus_history:
        earlier = ", ".join(f"{item.type} {item.name}" for item in memory.focus_history[-5:])
        lines.append(f"Earlier focus: {earlier}")
    for finding in memory.findings:
        at = f" at {finding.location}" if finding.location else ""
        lines.append(
            f"- finding [{finding.severity}] {quoted(finding.title)}{at}:"
            f" {quoted(finding.description)}"
        )
    for entity in memory.entities[-10:]:
        lines.append(f"- entity {entity.type} {entity.name} ({entity.id})")
    if state.pending_clarification is not None:
        lines.append(f"Waiting for an answer: {state.pending_clarification.question}")
    return "\n".join(lines)


def said_failure(name: str, error: MemoryServiceError, to: str, timeout: float) -> str:
    """Why ``name`` was not done (``to`` did not answer within ``timeout``, or answered
    with ``error``), and what the model should do about it."""
    if isinstance(error, MemoryTimeout):
        return (
            f"{name} was not done: memory is unavailable right now ({to} did not answer"
            f" within {timeout:g} s). Continue without it."
        )
    if isinstance(error, PendingApproval):
        return f"{name} is not done yet, it waits for an admin's approval: {error.text}."
    return f"{name} was not done: {error.text} ({error.condition.value})."
