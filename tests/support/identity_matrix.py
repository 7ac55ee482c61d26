"""The identity matrix: every op of every memory agent, tried by mallory on alice's things."""

from __future__ import annotations

import json
import uuid
from typing import Any

from spade.message import Message

from spade_memory import Clarification, EntityRef, Finding, Focus
from tests.support.harness import ClientAgent, send_raw

SECRETS = {
    "memory": "alice's bank PIN is 4921",
    "note": "alice told me her surgery is on Friday",
    "focus": "alice-private-module",
    "finding": "alice's unpatched CVE",
    "preference": "alice-prefers-secret-value",
    "knowledge": "alice's runbook: the root password lives in vault 7",
    "bead": "alice's beads secret: merger with Initech",
}


CONVERSATION, SESSION, USER, BEADS_SESSION = "conv-alice", "ws-alice", "u-alice", "s-alice"


class Alice:
    """alice's memories in every agent, and her own view of them."""

    def __init__(self, agent: ClientAgent) -> None:
        self.agent = agent
        self.memory_id = ""
        self.bead_ids: list[str] = []
        self.space = f"alice-{uuid.uuid4().hex[:8]}"

    async def seed(self) -> None:
        memory = self.agent.memory
        self.memory_id = str(await memory.store_memory("fact", SECRETS["memory"], "private"))
        await memory.add_information(CONVERSATION, SECRETS["note"])
        session = memory.session(SESSION)
        await session.create(user_id=USER)
        await session.set_focus(Focus(type="module", id=SECRETS["focus"], name="x"))
        await session.add_finding(Finding(type="security", title=SECRETS["finding"]))
        await memory.save_preferences(USER, {"secret": SECRETS["preference"]})
        await memory.save_knowledge("alice-runbook", SECRETS["knowledge"])
        await memory.create_space(self.space, "alice's space")
        await memory.space(self.space).store_memory("fact", SECRETS["memory"] + " (shared)")
        for text in (SECRETS["bead"], "alice's second bead"):
            stored = await memory.beads.store_memory(text, "decision", session=BEADS_SESSION)
            assert stored is not None
            self.bead_ids.append(stored.id)

    async def view(self) -> dict[str, Any]:
        """Everything alice can see of her own memories (access statistics left out)."""
        memory = self.agent.memory
        recent = await memory.get_recent_memories(limit=50)
        stats = await memory.get_memory_stats()
        session = await memory.session(SESSION).get()
        beads = await memory.beads.restore_session(BEADS_SESSION)
        context = await memory.search_context("runbook root password")
        info = await memory.space_info(self.space)
        return {
            "memories": [(m.id, m.category, m.content, m.context, m.confidence) for m in recent],
            "total": stats.total_memories if stats else None,
            "notes": await memory.get_information(CONVERSATION),
            "conversations": [c.conversation_id for c in await memory.get_all_conversations()],
            "working": session.model_dump(mode="json", exclude={"last_updated"}),
            "preferences": await memory.get_preferences(USER),
            "knowledge": [(entry.path, entry.text) for entry in context],
            "beads": [(b.id, b.content, b.status, b.session, b.agent) for b in beads],
            "space": [
                (m.id, m.content, m.author)
                for m in await memory.get_recent_memories(limit=50, space=self.space)
            ],
            "members": [(m.member, m.role) for m in info.members] if info else None,
        }


def attacks(alice: Alice) -> dict[str, list[dict[str, Any]]]:
    """One request per op of each agent, aimed at alice's memories."""
    memory_id, bead, other_bead = alice.memory_id, alice.bead_ids[0], alice.bead_ids[1]
    space = alice.space
    focus = {"type": "module", "id": "mallory-was-here", "name": "m"}
    return {
        "base-memory": [
            {"op": "store_memory", "category": "fact", "content": "planted by mallory"},
            {"op": "get_memory", "id": memory_id},
            {"op": "search_memories", "query": "bank PIN"},
            {"op": "list_memories", "category": "fact"},
            {"op": "recent_memories"},
            {"op": "update_memory", "id": memory_id, "content": "overwritten by mallory"},
            {"op": "supersede_memory", "id": memory_id, "content": "replaced by mallory"},
            {"op": "restore_memory", "id": memory_id},
            {"op": "consolidate_memories", "dry_run": False},
            {"op": "delete_memory", "id": memory_id},
            {"op": "memory_stats"},
            {"op": "changes_since", "after": 0},
            {"op": "memory_history", "id": memory_id},
            {"op": "memory_refs", "work_id": "E2-241"},
            {"op": "entities", "space": "*"},
            {"op": "memories_about", "entity": "bank", "space": "*"},
            {"op": "related_memories", "id": memory_id},
            {"op": "forget_memories", "category": "fact", "dry_run": False},
            {"op": "forget_all_memories"},
            {"op": "create_space", "name": f"mallory-{uuid.uuid4().hex[:8]}"},
            {"op": "grant", "space": space, "member": "mallory@localhost", "role": "admin"},
            {"op": "revoke", "space": space, "member": "alice@localhost"},
            {"op": "leave_space", "space": space},
            {"op": "list_spaces"},
            {"op": "space_info", "space": space},
            {"op": "delete_space", "space": space},
            {"op": "subscribe", "space": space},
            {"op": "unsubscribe", "space": space},
            {"op": "govern", "space": space, "governed": False},
            {"op": "list_proposals", "space": space},
            {"op": "decide_proposal", "space": space, "proposal": "p", "approve": True},
        ],
        "interaction-memory": [
            {"op": "add_information", "conversation_id": CONVERSATION, "information": "planted"},
            {"op": "get_information", "conversation_id": CONVERSATION},
            {"op": "get_context_summary", "conversation_id": CONVERSATION},
            {"op": "clear_conversation", "conversation_id": CONVERSATION},
            {"op": "get_all_conversations"},
            {"op": "export_conversation", "conversation_id": CONVERSATION},
            {"op": "create_working_memory", "session_id": SESSION},
            {"op": "get_working_memory", "session_id": SESSION},
            {"op": "recent_entities", "session_id": SESSION},
            {"op": "list_working_memories"},
            {"op": "set_focus", "session_id": SESSION, "focus": focus},
            {"op": "clear_focus", "session_id": SESSION},
            {
                "op": "add_entity",
                "session_id": SESSION,
                "entity": EntityRef(type="file", id="m.py", name="m").model_dump(mode="json"),
            },
            {
                "op": "add_finding",
                "session_id": SESSION,
                "finding": Finding(type="x", title="planted").model_dump(mode="json"),
            },
            {
                "op": "set_clarification",
                "session_id": SESSION,
                "clarification": Clarification(question="planted?").model_dump(mode="json"),
            },
            {"op": "clear_clarification", "session_id": SESSION},
            {"op": "update_context", "session_id": SESSION, "values": {"k": "planted"}},
            {
                "op": "merge_working_memory",
                "session_id": SESSION,
                "update": {"session_id": SESSION, "user_id": USER, "current_focus": focus},
            },
            {"op": "end_conversation", "conversation_id": CONVERSATION, "clear": True},
            {"op": "save_preferences", "user": USER, "preferences": {"secret": "planted"}},
            {"op": "get_preferences", "user": USER},
            {"op": "save_knowledge", "name": "alice-runbook", "content": "planted runbook"},
            {"op": "search_context", "query": "runbook root password"},
            {"op": "forget_interactions"},
            {"op": "interaction_stats"},
            {"op": "join_room", "room": f"{space}@conference.localhost", "space": space},
            {"op": "leave_room", "room": f"{space}@conference.localhost"},
            {"op": "list_rooms"},
            {"op": "search_room", "room": f"{space}@conference.localhost", "query": "secret"},
        ],
        "beads-sync": [
            {"op": "store_memory", "content": "planted bead", "session": BEADS_SESSION},
            {"op": "retrieve_memories", "session": BEADS_SESSION, "agent": str(alice.agent.jid)},
            {"op": "retrieve_memories", "all_sessions": True},
            {"op": "restore_session", "session_id": BEADS_SESSION},
            {"op": "get_session_context", "session_id": BEADS_SESSION},
            {"op": "mark_memory_accessed", "memory_id": bead},
            {"op": "link_memories", "child": bead, "parent": other_bead},
            {"op": "delete_memory", "memory_id": bead},
            {"op": "forget_all_memories"},
            {"op": "search_memories", "query": "merger Initech"},
            {"op": "share_session", "session": BEADS_SESSION, "member": "x@localhost"},
            {"op": "unshare_session", "session": BEADS_SESSION, "member": "x@localhost"},
            {"op": "memory_stats"},
            {"op": "mirrored_memory", "base_memory_id": memory_id},
        ],
    }


async def attempt(
    mallory: ClientAgent, to: str, body: dict[str, Any], sender: str | None
) -> Message:
    # A forged sender must be replaced by the server with mallory's JID: the reply comes to her.
    return await send_raw(mallory.memory, to, json.dumps(body), sender=sender)


def with_missing_ids(body: dict[str, Any], alice: Alice) -> dict[str, Any]:
    """The same request about memories that do not exist (ids of the same shape)."""
    text = json.dumps(body).replace(alice.memory_id, "00000000-0000-4000-8000-000000000000")
    text = text.replace(alice.space, "nobody-" + alice.space.removeprefix("alice-"))
    for bead in alice.bead_ids:
        text = text.replace(bead, bead.split("-")[0] + "-000000000000")
    replaced: dict[str, Any] = json.loads(text)
    return replaced


def answer_kind(reply: Message) -> tuple[str, str | None]:
    """What a reply tells about what exists: its performative and failure condition."""
    performative = str(reply.get_metadata("performative"))
    if performative == "inform":
        return performative, None
    return performative, str(json.loads(reply.body)["condition"])


async def no_cross_owner_attempt_succeeds(alice: Alice, mallory: ClientAgent) -> None:
    """Every op of every agent, sent by ``mallory`` at ``alice``'s things (with a forged
    sender, a claim in the body, both), twice over: nothing leaks, every claim is refused,
    nothing tells alice's items from missing ones, and alice's view is unchanged."""
    before = await alice.view()
    assert SECRETS["memory"] in json.dumps(before) and SECRETS["bead"] in json.dumps(before)
    alice_full = str(alice.agent.client.boundjid.full)
    owner = str(alice.agent.jid.bare)
    tried = refused = 0
    for _round in range(2):  # reads again after mallory's own writes
        for service, bodies in attacks(alice).items():
            to = f"{service}@{alice.agent.jid.domain}"
            for body in bodies:
                for sender, claim in ((alice_full, False), (None, True), (alice_full, True)):
                    sent = {**body, "owner": owner} if claim else body
                    reply = await attempt(mallory, to, sent, sender)
                    tried += 1
                    leaked = [name for name, text in SECRETS.items() if text in (reply.body or "")]
                    assert not leaked, f"{service} {body['op']} leaked {leaked}: {reply.body}"
                    if claim:
                        assert reply.get_metadata("performative") == "refuse", reply.body
                        assert json.loads(reply.body)["condition"] == "not-authorized"
                        refused += 1
                    else:  # "alice's" and "does not exist" must not be told apart
                        twin = await attempt(mallory, to, with_missing_ids(body, alice), sender)
                        assert answer_kind(reply) == answer_kind(twin), (body, reply.body)
    assert tried == 2 * 3 * sum(len(b) for b in attacks(alice).values())
    assert refused == tried * 2 // 3
    assert await alice.view() == before
