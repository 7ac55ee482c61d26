"""Governed spaces end to end: `spade-memory run` in its own process, the owner, a writer,
a reader and an outsider in this one, so every write, proposal, decision and chat message
crosses the wire."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from spade_memory import ItemNotFound, NotAuthorized, PendingApproval
from spade_memory.llm.tools import MemoryConnection, memory_tools
from spade_memory.protocol.errors import Conflict
from spade_memory.protocol.services import BASE_MEMORY
from spade_memory.testing import MemoryServiceProcess
from spade_memory.xmpp.lifecycle import stop_agent
from tests.support.harness import ClientAgent, jid, send_raw, start_client, unique_jid
from tests.support.spaces import TOLD_WITHIN, inbox, space_name


async def people(port: int) -> list[ClientAgent]:
    return [
        await start_client(unique_jid(name), port)
        for name in ("owner", "writer", "reader", "outsider")
    ]


@pytest.fixture
async def team(memory_service: MemoryServiceProcess) -> AsyncIterator[list[ClientAgent]]:
    """An owner, a writer, a reader and an outsider, connected."""
    agents = await people(memory_service.port)
    yield agents
    for agent in agents:
        await stop_agent(agent)


async def test_a_writers_store_waits_for_the_admin_who_approves_it_from_the_message(
    team: list[ClientAgent],
) -> None:
    owner, writer, reader, _ = team
    owner_inbox, writer_inbox = inbox(owner), inbox(writer)
    name = space_name("policy")
    details = await owner.memory.create_space(name, "vetted facts", governed=True)
    assert details is not None and details.governed
    await owner.memory.grant(name, jid(writer), "writer")
    await owner.memory.grant(name, jid(reader), "reader")

    with pytest.raises(PendingApproval) as waiting:
        await writer.memory.space(name).store_memory("fact", "The deploy freeze starts Friday")
    proposal = waiting.value.proposal
    assert proposal and proposal in waiting.value.text
    assert not await reader.memory.search_memories("deploy freeze", space=name)  # not yet
    with pytest.raises(NotAuthorized):
        await reader.memory.space(name).store_memory("fact", "a reader writes nothing")
    assert [p.id for p in await writer.memory.list_proposals(name)] == [proposal]
    info = await owner.memory.space_info(name)
    assert info is not None and info.pending == 1

    asked = await owner_inbox.next()  # a chat message any client shows
    assert jid(writer) in asked and "The deploy freeze starts Friday" in asked
    approve = next(line for line in asked.splitlines() if line.startswith("Approve: "))
    reply = await send_raw(owner.memory, owner.memory.jids[BASE_MEMORY], approve[9:])
    assert reply.get_metadata("performative") == "inform", reply.body
    decided = json.loads(reply.body)
    assert decided["proposal"]["state"] == "approved"
    stored = decided["result"]["id"]

    told = await writer_inbox.next()
    assert proposal in told and "approved" in told and stored in told
    found = await reader.memory.search_memories("deploy freeze", space=name)
    assert [(m.id, m.author) for m in found] == [(stored, jid(writer))]  # the writer's own
    with pytest.raises(Conflict):
        await owner.memory.decide_proposal(name, proposal, approve=True)  # decided once
    assert await owner.memory.list_proposals(name) == []
    deadline = time.monotonic() + TOLD_WITHIN
    mirrored: list[object] = []
    while time.monotonic() < deadline and not mirrored:  # after the mirror's debounce
        mirrored = await reader.memory.beads.search_memories("deploy freeze")
        await asyncio.sleep(0.25)
    assert [m.base_memory_id for m in mirrored] == [stored]  # type: ignore[attr-defined]


async def test_updates_deletes_rejections_and_what_a_writer_may_not_propose(
    team: list[ClientAgent],
) -> None:
    owner, writer, _, outsider = team
    writer_inbox = inbox(writer)
    name = space_name("vetted")
    await owner.memory.create_space(name)
    await owner.memory.grant(name, jid(writer), "writer")
    mine = await writer.memory.space(name).store_memory("fact", "Staging runs on port 8080")
    theirs = await owner.memory.space(name).store_memory("fact", "Production runs on port 443")
    governed = await owner.memory.govern(name)
    assert governed is not None and governed.governed
    assert {s.name: s.governed for s in await writer.memory.list_spaces()}[name]

    with pytest.raises(PendingApproval) as update:
        await writer.memory.update_memory(mine, space=name, content="Staging runs on 8081")
    with pytest.raises(PendingApproval) as delete:
        await writer.memory.delete_memory(mine, space=name)
    with pytest.raises(NotAuthorized):  # not its own: no admin is asked about it
        await writer.memory.update_memory(theirs, space=name, content="Production on 80")
    with pytest.raises(NotAuthorized):  # waits for no one
        await writer.memory.supersede_memory(mine, "Staging moved", space=name)
    with pytest.raises(NotAuthorized):  # the interaction agent takes no proposals
        await writer.memory.space(name).save_knowledge("ports", "8080 and 443")
    with pytest.raises(NotAuthorized):
        await writer.memory.decide_proposal(name, update.value.proposal, approve=True)
    with pytest.raises(ItemNotFound):
        await outsider.memory.list_proposals(name)
    with pytest.raises(ItemNotFound):
        await owner.memory.decide_proposal(name, "no-such-proposal", approve=True)
    assert [p.op["op"] for p in await owner.memory.list_proposals(name)] == [
        "update_memory", "delete_memory",
    ]  # fmt: skip

    rejected = await owner.memory.decide_proposal(
        name, update.value.proposal, approve=False, reason="8080 is right"
    )
    assert rejected is not None and rejected.proposal.state == "rejected"
    told = await writer_inbox.next()
    assert "rejected" in told and "8080 is right" in told
    kept = await owner.memory.space(name).get_memory(mine)
    assert kept is not None and kept.content == "Staging runs on port 8080"

    approved = await owner.memory.decide_proposal(name, delete.value.proposal, approve=True)
    assert approved is not None and approved.proposal.state == "approved"
    with pytest.raises(ItemNotFound):
        await owner.memory.space(name).get_memory(mine)
    assert "approved" in await writer_inbox.next()

    # an admin's own writes do not wait; without governing, a writer's do not either
    assert await owner.memory.space(name).store_memory("fact", "Admins write at once")
    await owner.memory.govern(name, governed=False)
    assert await writer.memory.space(name).store_memory("fact", "Ungoverned writes land")


async def test_a_retried_write_makes_one_proposal_and_a_revoked_writer_none_applied(
    team: list[ClientAgent],
) -> None:
    owner, writer, _, _ = team
    name = space_name("retry")
    await owner.memory.create_space(name, governed=True)
    await owner.memory.grant(name, jid(writer), "writer")
    to = writer.memory.jids[BASE_MEMORY]
    body = json.dumps({"op": "store_memory", "content": "Sent twice", "space": name})
    first = json.loads((await send_raw(writer.memory, to, body, thread="same-id")).body)
    again = json.loads((await send_raw(writer.memory, to, body, thread="same-id")).body)
    assert first["condition"] == again["condition"] == "pending-approval"
    assert first["proposal"] == again["proposal"]
    assert len(await owner.memory.list_proposals(name)) == 1

    await owner.memory.revoke(name, jid(writer))
    failed = await owner.memory.decide_proposal(name, first["proposal"], approve=True)
    assert failed is not None and failed.proposal.state == "failed" and failed.result is None
    assert failed.proposal.note  # why: the proposer is no member any more
    assert not await owner.memory.search_memories("Sent twice", space=name)


async def test_proposals_survive_a_restart_and_expire(tmp_path: Path) -> None:
    data = tmp_path / "data"
    service = MemoryServiceProcess(data, "--registrations-per-minute", "0")
    service.start()
    name = space_name("kept")
    owner_jid, writer_jid = unique_jid("owner"), unique_jid("writer")
    try:
        owner = await start_client(owner_jid, service.port)
        writer = await start_client(writer_jid, service.port)
        await owner.memory.create_space(name, governed=True)
        await owner.memory.grant(name, writer_jid, "writer")
        with pytest.raises(PendingApproval) as kept:
            await writer.memory.space(name).store_memory("fact", "Kept across a restart")
        for agent in (owner, writer):
            await stop_agent(agent)
    finally:
        service.stop()

    # the same data, proposals now waiting a tenth of a minute
    service = MemoryServiceProcess(data, "--proposal-hours", "0.0003")
    service.start()
    try:
        owner = await start_client(owner_jid, service.port)
        writer = await start_client(writer_jid, service.port)
        writer_inbox = inbox(writer)
        assert [p.id for p in await owner.memory.list_proposals(name)] == [kept.value.proposal]
        approved = await owner.memory.decide_proposal(name, kept.value.proposal, approve=True)
        assert approved is not None and approved.proposal.state == "approved"
        assert "approved" in await writer_inbox.next()

        with pytest.raises(PendingApproval) as late:
            await writer.memory.space(name).store_memory("fact", "Nobody decides this one")
        told = await writer_inbox.next()  # the sweep runs every half lifetime
        assert late.value.proposal in told and "expired" in told
        assert await owner.memory.list_proposals(name) == []
        with pytest.raises(Conflict):
            await owner.memory.decide_proposal(name, late.value.proposal, approve=True)
        for agent in (owner, writer):
            await stop_agent(agent)
    finally:
        service.stop()


async def test_an_llm_agents_store_tool_says_its_write_waits(team: list[ClientAgent]) -> None:
    owner, writer, _, _ = team
    name = space_name("llm")
    await owner.memory.create_space(name, governed=True)
    await owner.memory.grant(name, jid(writer), "writer")
    connection = MemoryConnection(default_space=name)
    tools = memory_tools(connection=connection)
    store = next(tool for tool in tools if tool.name == "store_memory")
    store.set_agent(writer)
    said = await store.call(content="The on-call rotation is weekly", category="fact")
    assert said.startswith("store_memory is not done yet, it waits for an admin's approval")
    (proposal,) = await owner.memory.list_proposals(name)
    assert proposal.id in said and proposal.op["content"] == "The on-call rotation is weekly"
