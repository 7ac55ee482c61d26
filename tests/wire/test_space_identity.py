"""Identity in shared spaces: every op that names a space (or shares a beads session),
for every role, on both servers, each sent twice: with a forged ``from`` naming the
space's owner, then plainly.

alice owns a space with a memory per member, a working-memory session and a
knowledge file in it, and a beads session with a bead per member, shared at the
same roles. reader, writer and admin hold those roles; ``revoked`` held writer
until it was revoked; ``stranger`` never held one. Each of them sends every op;
the answer must be what its role allows: ``inform`` when it may, ``not-authorized``
for a member whose role is too small, ``item-not-found`` for anyone else (as for a
space that does not exist). A forged ``from`` must change nothing: the server
stamps the real sender, so the answer is the role's. Strangers and the revoked
never see alice's secrets. With the access check off, this test fails (see
``test_the_matrix_fails_without_the_access_check``).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from spade_memory import Finding, Focus
from spade_memory.protocol.beads import ShareSession, UnshareSession
from spade_memory.protocol.ops import Op, op_types
from spade_memory.protocol.space_names import rank
from spade_memory.protocol.spaces import SPACE_OPS
from spade_memory.server.registry import SERVICES
from spade_memory.testing import MemoryServiceProcess
from spade_memory.xmpp.lifecycle import stop_agent
from tests.support.harness import ClientAgent, send_raw, start_client, unique_jid
from tests.support.paths import SUPPORT

ROLES = ("reader", "writer", "admin", "revoked", "stranger")
SECRET = "alice's team secret: the merger closes in May"
SESSION, BEADS_SESSION = "ws-team", "bs-team"


@dataclass(frozen=True)
class Attempt:
    service: str
    body: dict[str, Any]
    needs: str
    """The least role that may (``anyone``: every sender, it acts on its own things)."""
    once: bool = False
    """It changes what it acts on: a second success answers ``again``."""
    again: str = "item-not-found"
    allowed: str = "inform"
    """The answer when the role may (a proposal that does not exist: not found)."""


class Team:
    """alice's space, its members, and what each of them will try."""

    def __init__(self, alice: ClientAgent, members: dict[str, ClientAgent], space: str) -> None:
        self.alice, self.members, self.space = alice, members, space
        self.memories: dict[str, str] = {}
        self.beads: dict[str, str] = {}

    async def seed(self) -> None:
        memory, space = self.alice.memory, self.space
        await memory.create_space(space)
        team = memory.space(space)
        for role, agent in self.members.items():
            jid = str(agent.jid.bare)
            self.memories[role] = str(await team.store_memory("fact", f"{SECRET} ({role})"))
            stored = await memory.beads.store_memory(f"{SECRET} bead {role}", session=BEADS_SESSION)
            assert stored is not None
            self.beads[role] = stored.id
            if role == "stranger":
                continue
            grant = "writer" if role == "revoked" else role
            await memory.grant(space, jid, grant)
            await memory.beads.share_session(BEADS_SESSION, jid, grant)
        session = team.session(SESSION)
        await session.set_focus(Focus(type="module", id="merger", name=SECRET))
        await session.add_finding(Finding(type="deal", title=SECRET))
        await team.save_knowledge("deal-runbook", f"{SECRET}: the runbook")
        revoked = str(self.members["revoked"].jid.bare)
        await memory.revoke(space, revoked)
        await memory.beads.unshare_session(BEADS_SESSION, revoked)

    def attempts(self, role: str) -> list[Attempt]:
        space, alice = self.space, str(self.alice.jid.bare)
        memory_id, bead = self.memories[role], self.beads[role]
        other_bead = self.beads["stranger"]
        focus = {"type": "module", "id": f"{role}-focus", "name": "f"}
        base, interaction, beads = "base-memory", "interaction-memory", "beads-sync"

        def working(op: str, needs: str, **fields: Any) -> Attempt:
            return Attempt(
                interaction, {"op": op, "session_id": SESSION, "space": space, **fields}, needs
            )

        return [
            Attempt(base, {"op": "create_space", "name": space}, "nobody"),
            Attempt(base, {"op": "list_spaces"}, "anyone"),
            Attempt(base, {"op": "space_info", "space": space}, "reader"),
            Attempt(base, {"op": "subscribe", "space": space}, "reader"),
            Attempt(base, {"op": "unsubscribe", "space": space}, "reader"),
            Attempt(base, {"op": "get_memory", "id": memory_id, "space": space}, "reader"),
            Attempt(base, {"op": "search_memories", "query": "merger", "space": space}, "reader"),
            Attempt(base, {"op": "list_memories", "category": "fact", "space": space}, "reader"),
            Attempt(base, {"op": "recent_memories", "space": space}, "reader"),
            Attempt(base, {"op": "memory_stats", "space": space}, "reader"),
            Attempt(base, {"op": "changes_since", "space": space, "after": 0}, "reader"),
            Attempt(base, {"op": "memory_history", "id": memory_id, "space": space}, "reader"),
            Attempt(base, {"op": "memory_refs", "work_id": "DEAL-1", "space": space}, "reader"),
            Attempt(base, {"op": "entities", "space": space}, "reader"),
            Attempt(base, {"op": "memories_about", "entity": "merger", "space": space}, "reader"),
            Attempt(base, {"op": "related_memories", "id": memory_id, "space": space}, "reader"),
            Attempt(
                base,
                {"op": "forget_memories", "space": space, "tags_any": ["none"], "dry_run": True},
                "writer",
            ),
            Attempt(
                base,
                {"op": "store_memory", "category": "fact", "content": f"by {role}", "space": space},
                "writer",
            ),
            Attempt(
                base,
                {
                    "op": "update_memory",
                    "id": memory_id,
                    "space": space,
                    "content": f"rewritten by {role}",
                },
                "admin",
            ),
            Attempt(
                base,
                {"op": "grant", "space": space, "member": "nobody@localhost", "role": "reader"},
                "admin",
            ),
            Attempt(
                base,
                {"op": "revoke", "space": space, "member": "nobody@localhost"},
                "admin",
                once=True,
            ),
            Attempt(base, {"op": "delete_space", "space": space}, "owner"),
            Attempt(base, {"op": "consolidate_memories", "space": space}, "admin"),
            Attempt(base, {"op": "govern", "space": space, "governed": False}, "admin"),
            Attempt(base, {"op": "list_proposals", "space": space}, "reader"),
            Attempt(
                base,
                {"op": "decide_proposal", "space": space, "proposal": "p", "approve": True},
                "admin",
                allowed="item-not-found",
            ),
            Attempt(
                base,
                {
                    "op": "supersede_memory",
                    "id": memory_id,
                    "space": space,
                    "content": f"replaced by {role}",
                },
                "admin",
                once=True,
                again="conflict",  # superseded already
            ),
            Attempt(
                base,
                {"op": "restore_memory", "id": memory_id, "space": space},
                "admin",
                once=True,
                again="conflict",  # current again: nothing to restore
            ),
            Attempt(
                base, {"op": "delete_memory", "id": memory_id, "space": space}, "admin", once=True
            ),
            working("get_working_memory", "reader"),
            working("recent_entities", "reader"),
            Attempt(interaction, {"op": "list_working_memories", "space": space}, "reader"),
            working("create_working_memory", "writer"),
            working("set_focus", "writer", focus=focus),
            working("clear_focus", "writer"),
            working("add_entity", "writer", entity={"type": "file", "id": "x.py", "name": "x"}),
            working("add_finding", "writer", finding={"type": "x", "title": f"by {role}"}),
            working("set_clarification", "writer", clarification={"question": "why?"}),
            working("clear_clarification", "writer"),
            working("update_context", "writer", values={"by": role}),
            working(
                "merge_working_memory",
                "writer",
                update={"session_id": SESSION, "user_id": "u", "current_focus": focus},
            ),
            Attempt(
                interaction,
                {"op": "search_context", "query": "runbook merger", "space": space},
                "reader",
            ),
            Attempt(interaction, {"op": "interaction_stats", "space": space}, "reader"),
            Attempt(
                interaction,
                {
                    "op": "save_knowledge",
                    "name": f"{role}-notes",
                    "content": "notes",
                    "space": space,
                },
                "writer",
            ),
            Attempt(beads, {"op": "restore_session", "session_id": BEADS_SESSION}, "reader"),
            Attempt(beads, {"op": "get_session_context", "session_id": BEADS_SESSION}, "reader"),
            Attempt(
                beads,
                {"op": "retrieve_memories", "session": BEADS_SESSION, "agent": alice},
                "reader",
            ),
            Attempt(beads, {"op": "mark_memory_accessed", "memory_id": bead}, "writer"),
            Attempt(beads, {"op": "link_memories", "child": bead, "parent": other_bead}, "writer"),
            Attempt(
                beads,
                {
                    "op": "share_session",
                    "session": BEADS_SESSION,
                    "member": "nobody@localhost",
                    "role": "admin",
                },
                "anyone",
            ),
            Attempt(
                beads,
                {"op": "unshare_session", "session": BEADS_SESSION, "member": "nobody@localhost"},
                "anyone",
            ),
            Attempt(
                beads, {"op": "delete_memory", "memory_id": bead}, "admin"
            ),  # closing twice: done
            Attempt(base, {"op": "leave_space", "space": space}, "reader", once=True),
        ]


def expected(role: str, attempt: Attempt, succeeded_before: bool) -> str:
    """``inform`` or the failure condition ``role``'s answer to ``attempt`` must be."""
    member = role in ("reader", "writer", "admin")
    if attempt.needs == "anyone":
        return "inform"
    if attempt.needs == "nobody":  # alice's space name is taken, for everyone
        return "conflict"
    if not member:
        return "item-not-found"
    if rank(role) < rank(attempt.needs):
        return "not-authorized"
    return attempt.again if succeeded_before and attempt.once else attempt.allowed


def kind(reply_body: str, performative: str) -> str:
    return "inform" if performative == "inform" else str(json.loads(reply_body)["condition"])


def test_the_matrix_covers_every_op_that_names_a_space() -> None:
    alice = type("A", (), {"jid": type("J", (), {"bare": "alice@localhost"})()})()
    team = Team(alice, {}, "s")
    team.memories = dict.fromkeys(ROLES, "m")
    team.beads = dict.fromkeys(ROLES, "b")
    covered = {(a.service, a.body["op"]) for a in team.attempts("reader")}
    wanted = {
        (svc.name, op.tag())
        for svc in SERVICES
        for op in op_types(svc.union)
        if _names_a_space(op) or op in SPACE_OPS or op in (ShareSession, UnshareSession)
    }
    assert wanted <= covered, wanted - covered


def _names_a_space(op: type[Op[Any]]) -> bool:
    return op.need is not None


@pytest.fixture
async def team(any_memory_service: MemoryServiceProcess) -> AsyncIterator[Team]:
    port = any_memory_service.port
    alice = await start_client(unique_jid("alice"), port)
    members = {role: await start_client(unique_jid(role), port) for role in ROLES}
    try:
        team = Team(alice, members, f"deal-{os.urandom(4).hex()}")
        await team.seed()
        yield team
    finally:
        for agent in (alice, *members.values()):
            await stop_agent(agent)


async def run_matrix(team: Team) -> list[str]:
    """Every role's every attempt, forged then plain; the mismatches, described."""
    alice_full = str(team.alice.client.boundjid.full)
    wrong: list[str] = []
    for role in ROLES:
        agent = team.members[role]
        for attempt in team.attempts(role):
            succeeded = False
            for sender in (alice_full, None):
                reply = await send_raw(
                    agent.memory, f"{attempt.service}@localhost", json.dumps(attempt.body),
                    sender=sender,
                )  # fmt: skip
                got = kind(reply.body, str(reply.get_metadata("performative")))
                want = expected(role, attempt, succeeded)
                succeeded = succeeded or got == "inform"
                if got != want:
                    wrong.append(
                        f"{role} {attempt.body['op']} forged={bool(sender)}: {got} != {want}"
                    )
                if role in ("revoked", "stranger") and SECRET in (reply.body or ""):
                    wrong.append(f"{role} {attempt.body['op']} leaked the secret")
    return wrong


async def test_every_role_gets_what_it_may_and_nothing_more(team: Team) -> None:
    before = await team.alice.memory.space_info(team.space)
    assert before is not None and len(before.members) == 4  # alice and three members
    wrong = await run_matrix(team)
    assert not wrong, "\n".join(wrong)
    after = await team.alice.memory.space_info(team.space)
    assert after is not None  # nobody deleted alice's space, whatever they tried
    assert {m.member for m in after.members} == {str(team.alice.jid.bare)}  # all three left
    memories = await team.alice.memory.get_recent_memories(limit=50, space=team.space)
    survivors = {m.id for m in memories} & set(team.memories.values())
    assert survivors == {team.memories[r] for r in ("reader", "writer", "revoked", "stranger")}


UNGATED = SUPPORT / "ungated_service.py"


@pytest.mark.slow
async def test_the_matrix_fails_without_the_access_check(tmp_path: Path) -> None:
    """The same matrix against a service whose access check lets everything through."""
    service = MemoryServiceProcess(tmp_path / "data")
    service.command = [sys.executable, str(UNGATED), *service.command[4:]]  # after "run"
    service.start()
    port = service.port
    alice = await start_client(unique_jid("alice"), port)
    members = {role: await start_client(unique_jid(role), port) for role in ROLES}
    try:
        team = Team(alice, members, "deal-ungated")
        await team.seed()
        wrong = await run_matrix(team)
        # the reader goes first: it stores, grants and at last deletes the space (everyone
        # after it then finds nothing, as the check-free service lets it)
        for expected_wrong in ("reader store_memory", "reader grant", "reader delete_space"):
            assert any(line.startswith(expected_wrong) for line in wrong), wrong
    finally:
        for agent in (alice, *members.values()):
            await stop_agent(agent)
        service.stop()
