"""Conversation notes through the interaction memory agent, in its own process, over XMPP."""

from __future__ import annotations

import asyncio
import json

from spade_memory import BadRequest, NotAuthorized, ResourceConstraint
from tests.support.harness import ClientAgent, condition_of


async def test_notes_summary_and_clear(alice: ClientAgent) -> None:
    memory = alice.memory
    confirmation = await memory.add_information("chat-1", "the user is called Ana")
    assert confirmation == "Remembered information about this interaction: the user is called Ana"
    await memory.add_information("chat-1", "Ana wants answers in Spanish")
    assert await memory.get_information("chat-1") == [
        "the user is called Ana",
        "Ana wants answers in Spanish",
    ]
    assert await memory.get_context_summary("chat-1") == (
        "Previous interactions:\n- the user is called Ana\n- Ana wants answers in Spanish"
    )
    assert await memory.get_context_summary("chat-2") is None
    assert [c.conversation_id for c in await memory.get_all_conversations()] == ["chat-1"]
    exported = await memory.export_conversation("chat-1")
    assert exported is not None and exported.agent_id == str(alice.jid.bare)
    assert [e.content for e in exported.interactions["chat-1"]] == await memory.get_information(
        "chat-1"
    )
    assert await memory.clear_conversation("chat-1") is True
    assert await memory.clear_conversation("chat-1") is False
    assert await memory.get_information("chat-1") == []


async def test_two_conversations_and_two_owners_stay_apart(
    alice: ClientAgent, bob: ClientAgent
) -> None:
    await alice.memory.add_information("shared-id", "alice's note")
    await alice.memory.add_information("other", "alice elsewhere")
    await bob.memory.add_information("shared-id", "bob's note")
    assert await alice.memory.get_information("shared-id") == ["alice's note"]
    assert await alice.memory.get_information("other") == ["alice elsewhere"]
    assert await bob.memory.get_information("shared-id") == ["bob's note"]
    assert await bob.memory.clear_conversation("other") is False
    assert await alice.memory.get_information("other") == ["alice elsewhere"]


async def test_two_hundred_concurrent_appends_all_arrive(alice: ClientAgent) -> None:
    texts = [f"fact number {n}" for n in range(200)]
    await asyncio.gather(*(alice.memory.add_information("busy", text) for text in texts))
    assert sorted(await alice.memory.get_information("busy")) == sorted(texts)


async def test_bad_input_gets_typed_failures_and_changes_nothing(alice: ClientAgent) -> None:
    memory = alice.memory
    await memory.add_information("kept", "the original note")
    bad = [
        ('{"op": "add_information", "conversation_id": "kept"}', BadRequest),
        ('{"op": "add_information", "conversation_id": 7, "information": "x"}', BadRequest),
        ('{"op": "add_information", "conversation_id": "", "information": "x"}', BadRequest),
        ('{"op": "store_memory", "category": "fact", "content": "x"}', BadRequest),
        ("not json at all", BadRequest),
        (json.dumps({"op": "add_information", "conversation_id": "kept",
                     "information": "z" * 20_000}), ResourceConstraint),
        ('{"op": "clear_conversation", "conversation_id": "kept",'
         ' "owner": "victim@localhost"}', NotAuthorized),
    ]  # fmt: skip
    for body, expected in bad:
        condition = await condition_of(memory, memory.interaction_memory_jid, body)
        assert condition == expected.condition.value, body
    assert await memory.get_information("kept") == ["the original note"]
