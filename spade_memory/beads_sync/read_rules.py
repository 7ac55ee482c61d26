"""What one agent may read and change of the beads file.

An agent reads its own memories; the memories of a session another agent
shared with it (``share_session``), at the role it was given; and the memories
mirrored from a space it belongs to (label ``space:NAME``, and the space's id kept
with it: a space made later under a deleted one's name reads none of the old one's;
read-only here, the base memory agent is where they change). A session or agent the sender may not
read answers ``item-not-found`` (as one that does not exist), never an empty list.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from spade_memory.beads import mapping as m
from spade_memory.beads.issue import Issue
from spade_memory.protocol.space_names import rank
from spade_memory.spaces.gate import Gate


@dataclass(frozen=True)
class Reader:
    """One sender's access to the beads file, read from the directory for one request."""

    jid: str
    sessions: dict[tuple[str, str], str] = field(default_factory=dict)
    """(owner, session) shared with the sender → its role there."""
    spaces: Mapping[str, str] = field(default_factory=dict)
    """The spaces the sender reads: name → id."""

    def role(self, issue: Issue) -> str | None:
        """The sender's role for one memory issue (``owner`` for its own; None: none)."""
        agent = m.label_value(issue, m.AGENT_LABEL)
        if agent == self.jid:
            return "owner"
        space = m.label_value(issue, m.SPACE_LABEL)
        if space is not None:  # a deleted space's closed issues stay their author's
            key = self.spaces.get(space)
            mirrored_from = m.ours(issue).get("space_key")  # None: mirrored before ids
            same = key is not None and mirrored_from in (None, key)
            return "reader" if issue.is_open and same else None
        session = m.label_value(issue, m.SESSION_LABEL)
        if agent is None or session is None:
            return None
        return self.sessions.get((agent, session))

    def may(self, issue: Issue, role: str = "reader") -> bool:
        """Whether the sender's role for ``issue`` is at least ``role``."""
        return rank(self.role(issue)) >= rank(role)

    def shares_session(self, session: str, agent: str | None = None) -> bool:
        """Whether ``session`` (of ``agent``, when named) is shared with the sender."""
        return any(s == session and agent in (None, a) for a, s in self.sessions)

    def shares_from(self, agent: str) -> bool:
        """Whether ``agent`` shared any session with the sender."""
        return any(a == agent for a, _ in self.sessions)


async def reader_of(jid: str, gate: Gate) -> Reader:
    """``jid``'s access as the spaces' gate has it now (its own memories only, when the
    deployment keeps no directory)."""
    spaces = {place.name: place.key for place in await gate.readable(jid)}
    return Reader(jid, await gate.shared_sessions(jid), spaces)
