"""XEP-0050 ad-hoc commands on the base memory agent, run through slixmpp's own xep_0050
client as a person's desktop client would: list the commands, fill in a form, read the
result form. Over the wire, on SPADE's embedded server and on Prosody."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from slixmpp.exceptions import IqError

from spade_memory import PendingApproval
from spade_memory.protocol.memories import MemoryStatsOp
from spade_memory.testing import MemoryServiceProcess
from spade_memory.xmpp import wire
from spade_memory.xmpp.lifecycle import stop_agent
from tests.support.harness import ClientAgent, start_client, unique_jid


class Person:
    """A client running commands at the base memory agent's full JID."""

    def __init__(self, agent: ClientAgent, memory: str) -> None:
        self.agent, self.memory = agent, memory
        self.commands = agent.client["xep_0050"]
        self.forms = agent.client["xep_0004"]

    async def run(self, node: str, **values: str) -> Any:
        """Start ``node``; fill in its form with ``values`` when it has one; the result."""
        first = await self.commands.send_command(self.memory, node, timeout=10)
        if first["command"]["status"] == "completed":
            return first["command"]["form"]
        asked = set(first["command"]["form"].get_fields())
        assert set(values) <= asked, (values, asked)
        filled = self.forms.make_form(ftype="submit")
        for var, value in values.items():
            filled.add_field(var=var, value=value)
        done = await self.commands.send_command(
            self.memory, node, sessionid=first["command"]["sessionid"], payload=filled,
            action="complete", timeout=10,
        )  # fmt: skip
        assert done["command"]["status"] == "completed"
        return done["command"]["form"]


@pytest.fixture
async def person(any_memory_service: MemoryServiceProcess) -> AsyncIterator[Person]:
    agent = await start_client(unique_jid("person"), any_memory_service.port)
    agent.client.register_plugin("xep_0004")
    agent.client.register_plugin("xep_0050")
    to = agent.memory.jids["base-memory"]
    reply = await agent.memory.transport.round_trip(
        wire.request_message(to, MemoryStatsOp(), "find-it")
    )
    assert reply is not None
    yield Person(agent, str(reply.sender))  # commands live at the agent's full JID
    await stop_agent(agent)


def value(form: Any, var: str) -> str:
    return str(form.get_fields()[var]["value"])


def rows(form: Any) -> list[dict[str, str]]:
    return [{var: str(value) for var, value in item.items()} for item in form["items"]]


async def test_the_commands_are_listed(person: Person) -> None:
    listed = await person.commands.get_commands(person.memory, timeout=10)
    nodes = {item[1] for item in listed["disco_items"]["items"]}
    assert nodes == {
        "search", "store", "recent", "stats", "spaces", "grant", "proposals", "decide"
    }  # fmt: skip


async def test_store_search_recent_and_stats_from_forms(person: Person) -> None:
    stored = await person.run("store", category="preference", content="prefers green tea")
    memory_id = value(stored, "id")
    assert memory_id
    await person.run("store", category="fact", content="the staging API is at /api/v2")

    found = rows(await person.run("search", query="green tea"))
    assert [(r["id"], r["category"], r["content"]) for r in found] == [
        (memory_id, "preference", "prefers green tea")
    ]
    recent = rows(await person.run("recent", limit="5"))
    assert {r["content"] for r in recent} == {"prefers green tea", "the staging API is at /api/v2"}
    stats = await person.run("stats")
    assert value(stats, "total_memories") == "2"
    assert value(stats, "category:preference") == "1"

    mine = await person.agent.memory.get_recent_memories(10)  # the same owner over messages
    assert {m.id for m in mine} >= {memory_id}


async def test_spaces_list_and_grant(person: Person) -> None:
    name = f"team-{unique_jid('x').split('@')[0]}"
    await person.agent.memory.create_space(name)
    spaces = rows(await person.run("spaces"))
    assert {"name": name, "owner": str(person.agent.jid.bare), "role": "owner"} in spaces
    granted = await person.run("grant", space=name, member="colleague@localhost", role="writer")
    assert {"member": "colleague@localhost", "role": "writer"} in rows(granted)


async def test_a_governed_spaces_proposals_decided_from_forms(
    person: Person, any_memory_service: MemoryServiceProcess
) -> None:
    name = f"rules-{unique_jid('x').split('@')[0]}"
    writer = await start_client(unique_jid("writer"), any_memory_service.port)
    try:
        await person.agent.memory.create_space(name, governed=True)
        await person.agent.memory.grant(name, str(writer.jid.bare), "writer")
        waiting = []
        for content in ("Freeze deploys on Fridays", "Deploy whenever"):
            with pytest.raises(PendingApproval) as pending:
                await writer.memory.space(name).store_memory("fact", content)
            waiting.append(pending.value.proposal)
        listed = rows(await person.run("proposals", space=name))
        assert [(r["id"], r["proposer"]) for r in listed] == [
            (proposal, str(writer.jid.bare)) for proposal in waiting
        ]
        approved = await person.run("decide", space=name, proposal=waiting[0], decision="approve")
        assert value(approved, "state") == "approved" and value(approved, "memory")
        rejected = await person.run(
            "decide", space=name, proposal=waiting[1], decision="reject", reason="no"
        )
        assert (value(rejected, "state"), value(rejected, "note")) == ("rejected", "no")
        with pytest.raises(IqError) as again:
            await person.run("decide", space=name, proposal=waiting[1], decision="approve")
        assert again.value.iq["error"]["condition"] == "conflict"
        found = await writer.memory.search_memories("deploys", space=name)
        assert [m.content for m in found] == ["Freeze deploys on Fridays"]
    finally:
        await stop_agent(writer)


async def test_a_bad_form_is_an_error_and_changes_nothing(person: Person) -> None:
    with pytest.raises(IqError) as refused:
        await person.run("store", category="fact")  # no content
    assert refused.value.iq["error"]["condition"] == "bad-request"
    assert "content" in refused.value.iq["error"]["text"]
    with pytest.raises(IqError) as refused:
        await person.run("search", query="tea", limit="5000")
    assert refused.value.iq["error"]["condition"] == "resource-constraint"
    stats = await person.run("stats")
    assert value(stats, "total_memories") == "0"
