"""Forgetting everything one agent keeps at the beads sync agent: its beads memories are
redacted, not deleted, and the answers kept for its retries go.

Redacted, because an issue of ``issues.jsonl`` is referred to by id: by other issues'
dependencies (a memory's links, a work item it was discovered from), by bd's own
database and by the copies of the file in other clones, which a merge would bring back
if the line were simply gone. So each issue stays with its id, closed with the reason
``forgotten``, and loses its text (see ``beads.mapping.redaction``). Earlier versions
of the file in git still hold the text: rewriting a repository's history is its
owner's to do.
"""

from __future__ import annotations

from spade_memory.beads import mapping as m
from spade_memory.beads.engine import BeadsEngine
from spade_memory.beads.issue import Issue, IssueFilter


async def forget_all(engine: BeadsEngine, owner: str, dry_run: bool = False) -> int:
    """Redact every memory of ``owner`` not redacted yet, open or closed (unless
    ``dry_run``). Returns how many there were."""
    where = IssueFilter(labels=(m.AGENT_LABEL + owner,), include_closed=True)
    found = [
        issue
        for issue in await engine.list_issues(where)
        if m.is_memory(issue)
        and m.label_value(issue, m.SPACE_LABEL) is None
        and not m.is_forgotten(issue)
    ]
    if not dry_run:
        for issue in found:
            await redact(engine, issue)
    return len(found)


async def redact(engine: BeadsEngine, issue: Issue) -> Issue:
    """The issue redacted and closed with the reason ``forgotten``; returns it as it is now."""
    await engine.update(issue.id, m.redaction(issue))
    return await engine.close(issue.id, m.FORGOTTEN_REASON)
