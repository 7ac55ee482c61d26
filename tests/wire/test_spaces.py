"""Shared memory spaces end to end: the memory agents in their own process (`spade-memory
run`), the team's agents in this one (and a subscriber in a third), so every request and
every change notice crosses the wire."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from pydantic import ValidationError

from spade_memory import BadRequest, Finding, Focus, ItemNotFound, MemoryServiceError, NotAuthorized
from spade_memory.protocol.errors import Conflict
from spade_memory.testing import ChildProcess, MemoryServiceProcess
from spade_memory.xmpp.lifecycle import stop_agent
from tests.support.command_line import run_once
from tests.support.harness import ClientAgent, condition_of, start_client, unique_jid
from tests.support.space_listener import READY
from tests.support.spaces import space_name


@pytest.fixture
async def team(
    memory_service: MemoryServiceProcess,
) -> AsyncIterator[tuple[ClientAgent, ClientAgent, ClientAgent]]:
    """A researcher, a writer and an outsider, connected."""
    agents = [
        await start_client(unique_jid(name), memory_service.port)
        for name in ("researcher", "writer", "outsider")
    ]
    yield agents[0], agents[1], agents[2]
    for agent in agents:
        await stop_agent(agent)


async def test_a_writer_finds_what_the_researcher_stored_in_their_space(
    team: tuple[ClientAgent, ClientAgent, ClientAgent],
) -> None:
    researcher, writer, _ = team
    space = space_name()
    await researcher.memory.create_space(space, "what the research found")
    await researcher.memory.grant(space, str(writer.jid.bare), "writer")
    team_space = researcher.memory.space(space)
    first = await team_space.store_memory("fact", "The 2024 survey covered 1,200 firms")
    second = await team_space.store_memory("fact", "Most firms adopted the standard in 2025")
    await researcher.memory.store_memory("fact", "my own private note on the survey")

    found = await writer.memory.search_memories("survey firms standard", space=space)
    assert {m.id for m in found} == {first, second}
    assert {(m.space, m.author) for m in found} == {(space, str(researcher.jid.bare))}
    assert not await writer.memory.search_memories("private note")  # the writer's own space
    everything = await writer.memory.get_recent_memories(limit=50, space="*")
    assert {m.id for m in everything} == {first, second}
    own_and_team = await researcher.memory.search_memories("survey", space=["personal", space])
    assert {m.space for m in own_and_team} == {"personal", space}

    mine = await writer.memory.space(space).store_memory("pattern", "Surveys undercount SMEs")
    spaces = {s.name: s.role for s in await writer.memory.list_spaces()}
    assert spaces[space] == "writer"
    info = await writer.memory.space_info(space)
    assert info is not None and info.memories == 3 and info.owner == str(researcher.jid.bare)
    assert (str(writer.jid.bare), "writer") in {(m.member, m.role) for m in info.members}
    # a writer changes what it stored, not what others stored; an admin (the owner) may
    assert await writer.memory.update_memory(mine, space=space, confidence=0.5)
    with pytest.raises(NotAuthorized):
        await writer.memory.delete_memory(first, space=space)
    with pytest.raises(NotAuthorized):
        await writer.memory.update_memory(first, space=space, content="rewritten")
    assert await researcher.memory.delete_memory(mine, space=space)
    assert (await writer.memory.get_memory(first, space=space)).content.startswith("The 2024")


async def test_roles_are_enforced_on_the_next_request(
    team: tuple[ClientAgent, ClientAgent, ClientAgent],
) -> None:
    researcher, writer, outsider = team
    space = space_name()
    await researcher.memory.create_space(space)
    await researcher.memory.grant(space, str(writer.jid.bare), "reader")
    kept = await researcher.memory.store_memory("fact", "only members read this", space=space)
    assert kept is not None
    with pytest.raises(NotAuthorized):  # a reader cannot store
        await writer.memory.store_memory("fact", "a reader's attempt", space=space)
    await researcher.memory.grant(space, str(writer.jid.bare), "writer")
    assert await writer.memory.store_memory("fact", "a writer's note", space=space)
    await researcher.memory.revoke(space, str(writer.jid.bare))
    with pytest.raises(ItemNotFound):  # revoked: refused at once, as a stranger
        await writer.memory.store_memory("fact", "after the revoke", space=space)
    with pytest.raises(ItemNotFound):
        await writer.memory.search_memories("members", space=space)
    # a non-member cannot tell the space from one that does not exist
    for name in (space, space_name("nothing")):
        with pytest.raises(ItemNotFound) as found:
            await outsider.memory.get_memory(kept, space=name)
        assert found.value.text == f"no space {name!r}"
        with pytest.raises(ItemNotFound):
            await outsider.memory.space_info(name)
        with pytest.raises(ItemNotFound):
            await outsider.memory.subscribe(name)
    with pytest.raises(ItemNotFound):
        await outsider.memory.get_memory(kept)  # nor is it in anyone's personal space
    with pytest.raises(Conflict):
        await outsider.memory.create_space(space)
    with pytest.raises(ItemNotFound):  # a stranger granting itself a role
        await outsider.memory.grant(space, str(outsider.jid.bare), "admin")
    await researcher.memory.grant(space, str(writer.jid.bare), "reader")
    with pytest.raises(NotAuthorized):  # a member below admin
        await writer.memory.grant(space, str(writer.jid.bare), "admin")


async def test_a_domain_grant_admins_and_leaving(
    team: tuple[ClientAgent, ClientAgent, ClientAgent],
) -> None:
    researcher, writer, outsider = team
    space = space_name()
    await researcher.memory.create_space(space)
    await researcher.memory.grant(space, "*@localhost", "reader")  # everyone of the domain
    stored = await researcher.memory.store_memory("fact", "open to the domain", space=space)
    assert [m.id for m in await outsider.memory.get_recent_memories(space=space)] == [stored]
    with pytest.raises(BadRequest, match="through \\*@localhost"):
        await outsider.memory.leave_space(space)
    await researcher.memory.grant(space, str(writer.jid.bare), "admin")
    await writer.memory.grant(space, str(outsider.jid.bare), "writer")  # an admin grants
    assert await outsider.memory.store_memory("fact", "the outsider writes now", space=space)
    with pytest.raises(NotAuthorized):
        await writer.memory.delete_space(space)  # owner only
    assert await outsider.memory.leave_space(space)
    await researcher.memory.revoke(space, "*@localhost")
    with pytest.raises(ItemNotFound):
        await outsider.memory.get_recent_memories(space=space)
    assert await researcher.memory.delete_space(space)
    with pytest.raises(ItemNotFound):
        await writer.memory.get_recent_memories(space=space)
    with pytest.raises(ItemNotFound):
        await researcher.memory.get_memory(stored, space=space)
    again = await outsider.memory.create_space(space)  # the name is free; nothing came back
    assert again is not None and again.memories == 0


@pytest.mark.parametrize(
    ("body", "condition"),
    [
        ({"op": "create_space", "name": "a/b"}, "bad-request"),
        ({"op": "create_space", "name": "nul\u0000"}, "bad-request"),
        ({"op": "create_space", "name": "x" * 10_000}, "bad-request"),
        ({"op": "create_space", "name": "personal"}, "bad-request"),
        ({"op": "create_space", "name": "../../etc"}, "bad-request"),
        ({"op": "grant", "space": "SPACE", "member": "not a jid", "role": "writer"}, "bad-request"),
        ({"op": "grant", "space": "SPACE", "member": "x@y", "role": "god"}, "bad-request"),
        ({"op": "grant", "space": "SPACE", "member": "OWNER", "role": "reader"}, "bad-request"),
        ({"op": "revoke", "space": "SPACE", "member": "OWNER"}, "bad-request"),
        ({"op": "revoke", "space": "SPACE", "member": "nobody@localhost"}, "item-not-found"),
        ({"op": "store_memory", "category": "fact", "content": "x", "space": "*"}, "bad-request"),
        ({"op": "search_memories", "query": "x", "space": ["a/b"]}, "bad-request"),
        ({"op": "space_info", "space": "never-created-space"}, "item-not-found"),
        ({"op": "grant", "space": "SPACE", "member": "x@y", "role": "writer", "owner": "a@b"},
         "not-authorized"),
    ],
)  # fmt: skip
async def test_bad_space_requests_get_a_typed_failure_and_change_nothing(
    team: tuple[ClientAgent, ClientAgent, ClientAgent], body: dict[str, object], condition: str
) -> None:
    researcher, _, _ = team
    space = space_name()
    await researcher.memory.create_space(space)
    await researcher.memory.store_memory("fact", "kept as it was", space=space)
    before = await researcher.memory.space_info(space)
    owner = str(researcher.jid.bare)
    text = json.dumps(body).replace('"SPACE"', json.dumps(space)).replace('"OWNER"', f'"{owner}"')
    assert await condition_of(researcher.memory, researcher.memory.base_memory_jid, text) == (
        condition
    )
    after = await researcher.memory.space_info(space)
    assert after == before


async def test_a_shared_working_memory_session_changed_by_two_agents_in_turn(
    team: tuple[ClientAgent, ClientAgent, ClientAgent],
) -> None:
    researcher, writer, outsider = team
    space = space_name()
    await researcher.memory.create_space(space)
    await researcher.memory.grant(space, str(writer.jid.bare), "writer")
    await researcher.memory.grant(space, str(outsider.jid.bare), "reader")
    theirs = researcher.memory.space(space).session("incident-7")
    mine = writer.memory.space(space).session("incident-7")
    await theirs.set_focus(Focus(type="module", id="billing", name="Billing"))
    await mine.add_finding(Finding(type="cause", title="the cache expired early"))
    await theirs.set_focus(Focus(type="module", id="cache", name="Cache"))
    state = await outsider.memory.space(space).session("incident-7").get()
    assert state is not None and state.space == space
    working = state.working_memory
    assert working.current_focus is not None and working.current_focus.id == "cache"
    assert [f.id for f in working.focus_history] == ["billing"]
    assert [f.title for f in working.findings] == ["the cache expired early"]
    with pytest.raises(NotAuthorized):  # a reader reads it, and only reads it
        await (
            outsider.memory.space(space)
            .session("incident-7")
            .add_finding(Finding(type="x", title="a reader's finding"))
        )
    with pytest.raises(ItemNotFound):  # the writer's own session of that name is another one
        await writer.memory.session("incident-7").get()
    await writer.memory.space(space).save_knowledge("runbook", "Flush the cache after deploys")
    found = await outsider.memory.space(space).search_context("flush cache deploys")
    assert [entry.text for entry in found] == ["Flush the cache after deploys"]
    assert await outsider.memory.search_context("flush cache deploys") == []


def listener(port: int, jid: str, space: str, after: int | None = None) -> ChildProcess:
    command = [sys.executable, "-m", "tests.support.space_listener", jid, str(port), space]
    return ChildProcess([*command, *([] if after is None else [str(after)])], READY)


def changes_in(process: ChildProcess, count: int, timeout: float = 30.0) -> list[list[str]]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = [line.split(" ", 5) for line in process.output if line.startswith("change ")]
        if len(lines) >= count:
            return lines
        time.sleep(0.05)
    raise AssertionError(f"{count} changes expected; the listener printed {process.output}")


async def test_a_subscriber_in_another_process_hears_every_change_and_catches_up(
    memory_service: MemoryServiceProcess, team: tuple[ClientAgent, ClientAgent, ClientAgent]
) -> None:
    researcher, _, _ = team
    space = space_name()
    jid = unique_jid("subscriber")
    await researcher.memory.create_space(space)
    await researcher.memory.grant(space, jid, "reader")
    process = listener(memory_service.port, jid, space)
    await asyncio.to_thread(process.start)
    try:
        first = await researcher.memory.store_memory("fact", "heard at once", space=space)
        (seq, kind, memory_id, author, content) = changes_in(process, 1)[0][1:]
        assert (kind, memory_id, author, content.strip()) == (
            "stored",
            first,
            str(researcher.jid.bare),
            "heard at once",
        )
        await researcher.memory.update_memory(first, space=space, content="heard, then changed")
        await researcher.memory.delete_memory(first, space=space)
        kinds = [line[2] for line in changes_in(process, 3)]
        assert kinds == ["stored", "updated", "deleted"]
        cursor = int(changes_in(process, 3)[-1][1])
    finally:
        process.stop()
    missed = [
        await researcher.memory.store_memory("fact", f"stored while it was away {n}", space=space)
        for n in range(3)
    ]  # the subscriber is offline: its notices go nowhere
    back = listener(memory_service.port, jid, space, after=cursor)
    await asyncio.to_thread(back.start)
    try:
        caught_up = changes_in(back, 3)
        assert [line[3] for line in caught_up] == missed
        assert all(int(line[1]) > cursor for line in caught_up)
        live = await researcher.memory.store_memory("fact", "after coming back", space=space)
        assert changes_in(back, 4)[-1][3] == live
        assert int(seq) <= cursor
    finally:
        back.stop()


async def test_grants_and_memories_survive_a_restart(tmp_path: Path) -> None:
    service = MemoryServiceProcess(tmp_path / "data", "--services", "base-memory")
    service.start()
    space = space_name()
    owner = await start_client(unique_jid("owner"), service.port)
    member = await start_client(unique_jid("member"), service.port)
    try:
        await owner.memory.create_space(space)
        await owner.memory.grant(space, str(member.jid.bare), "writer")
        stored = await member.memory.store_memory("fact", "written before the restart", space=space)
    finally:
        await stop_agent(owner)
        await stop_agent(member)
        service.stop()
    service.start()
    member = await start_client(str(member.jid.bare), service.port)
    try:
        found = await member.memory.get_recent_memories(space=space)
        assert [m.id for m in found] == [stored]
        assert await member.memory.store_memory("fact", "written after it", space=space)
        assert {s.name: s.role for s in await member.memory.list_spaces()} == {space: "writer"}
    finally:
        await stop_agent(member)
        service.stop()


async def test_a_subscription_an_older_version_kept_under_a_bad_address_is_dropped(
    tmp_path: Path,
) -> None:
    """An older server took any account name, so spaces.db may hold a subscriber address
    that does not parse (issue 47, item 3): the notifier dropped dead on it, and no other
    subscriber heard anything again. Now that subscription is dropped with a log line."""
    service = MemoryServiceProcess(tmp_path / "data", "--services", "base-memory")
    service.start()
    space = space_name()
    owner = await start_client(unique_jid("owner"), service.port)
    odd = unique_jid("odd")
    try:
        await owner.memory.create_space(space)
        await owner.memory.grant(space, odd, "reader")
        odd_client = await start_client(odd, service.port)
        await odd_client.memory.subscribe(space)
        await stop_agent(odd_client)
    finally:
        await stop_agent(owner)
        service.stop()
    with sqlite3.connect(tmp_path / "data" / "spaces.db") as database:
        database.execute(
            "UPDATE subscriptions SET address = 'a@b@localhost/x' WHERE subscriber = ?", (odd,)
        )
    service.start()
    owner = await start_client(str(owner.jid.bare), service.port)
    heard_by = unique_jid("listener")
    listening = listener(service.port, heard_by, space)
    try:
        await owner.memory.grant(space, heard_by, "reader")
        await asyncio.to_thread(listening.start)
        for n in range(2):
            stored = await owner.memory.store_memory("fact", f"heard {n}", space=space)
            assert changes_in(listening, n + 1)[-1][3] == stored
        said = "".join(service.output)
        assert said.count(f"the subscription of {odd} is dropped") == 1
        assert (await owner.memory.space_info(space)).subscribers == 1
    finally:
        listening.stop()
        await stop_agent(owner)
        service.stop()


async def test_quotas_are_answered_with_the_figures(tmp_path: Path) -> None:
    service = MemoryServiceProcess(
        tmp_path / "data", "--services", "base-memory", "--max-memories-per-space", "2",
        "--max-bytes-per-owner", "300",
    )  # fmt: skip
    service.start()
    owner = await start_client(unique_jid("owner"), service.port)
    try:
        space = space_name()
        await owner.memory.create_space(space)
        for n in range(2):
            await owner.memory.store_memory("fact", f"shared {n}", space=space)
        with pytest.raises(MemoryServiceError, match="holds 2 of 2 memories") as full:
            await owner.memory.store_memory("fact", "one too many", space=space)
        assert full.value.condition.value == "resource-constraint"
        await owner.memory.store_memory("fact", "x" * 200)  # personal: the owner's bytes
        with pytest.raises(MemoryServiceError, match="of 300 bytes"):
            await owner.memory.store_memory("fact", "y" * 200)
        stats = await owner.memory.get_memory_stats()
        assert stats is not None and stats.used_memories == 3 and stats.max_bytes == 300
        info = await owner.memory.space_info(space)
        assert info is not None and (info.memories, info.max_memories) == (2, 2)
    finally:
        await stop_agent(owner)
        service.stop()


async def test_a_shared_beads_session_reads_at_its_role_and_nothing_else(
    team: tuple[ClientAgent, ClientAgent, ClientAgent],
) -> None:
    researcher, writer, outsider = team
    session = f"s-{uuid.uuid4().hex[:8]}"
    beads = researcher.memory.beads
    ids = []
    for text in ("the survey's method", "the survey's sample"):
        stored = await beads.store_memory(text, "learning", session=session)
        assert stored is not None
        ids.append(stored.id)
    await writer.memory.beads.store_memory("the writer's own draft", session=session)
    who = str(researcher.jid.bare)
    # not shared: the session and the researcher's memories are "not there", not "empty"
    for attempt in (
        outsider.memory.beads.restore_session(session),
        outsider.memory.beads.retrieve_memories(session=session, agent=who),
        outsider.memory.beads.get_session_context(session),
        outsider.memory.beads.mark_memory_accessed(ids[0]),
    ):
        with pytest.raises(ItemNotFound):
            await attempt
    assert await outsider.memory.beads.search_memories("survey") == []
    # the writer took part in the session: it sees its own memory only
    assert [m.content for m in await writer.memory.beads.restore_session(session)] == [
        "the writer's own draft"
    ]

    await beads.share_session(session, str(outsider.jid.bare), "reader")
    restored = await outsider.memory.beads.restore_session(session)
    assert [(m.id, m.agent) for m in restored] == [(ids[0], who), (ids[1], who)]
    retrieved = await outsider.memory.beads.retrieve_memories(session=session, agent=who)
    assert {m.id for m in retrieved} == set(ids)
    assert {m.id for m in await outsider.memory.beads.search_memories("survey")} == set(ids)
    with pytest.raises(NotAuthorized):  # a reader of the session does not change it
        await outsider.memory.beads.mark_memory_accessed(ids[0])
    with pytest.raises(NotAuthorized):
        await outsider.memory.beads.delete_memory(ids[0])
    with pytest.raises(ItemNotFound):  # only the shared session, not the researcher's others
        await outsider.memory.beads.retrieve_memories(session="s-other", agent=who)

    await beads.share_session(session, "*@localhost", "admin")  # a whole domain, as admin
    assert await writer.memory.beads.delete_memory(ids[1])
    assert await writer.memory.beads.mark_memory_accessed(ids[0])
    await beads.unshare_session(session, "*@localhost")
    await beads.unshare_session(session, str(outsider.jid.bare))
    with pytest.raises(ItemNotFound):
        await outsider.memory.beads.restore_session(session)
    assert [m.status for m in await beads.restore_session(session)] == ["open", "closed"]
    with pytest.raises(ValidationError):  # checked before it is sent
        await beads.share_session(session, "not a jid", "reader")
    refused = await condition_of(
        researcher.memory, researcher.memory.beads.jid,
        json.dumps({"op": "share_session", "session": session, "member": who}),
    )  # fmt: skip
    assert refused == "bad-request"  # with itself


async def test_space_memories_reach_beads_with_their_space_label(
    team: tuple[ClientAgent, ClientAgent, ClientAgent],
) -> None:
    researcher, writer, outsider = team
    space = space_name()
    await researcher.memory.create_space(space)
    await researcher.memory.grant(space, str(writer.jid.bare), "reader")
    stored = await researcher.memory.store_memory("fact", f"mirrored into {space}", space=space)
    deadline = time.monotonic() + 30
    found: list[object] = []
    while time.monotonic() < deadline and not found:  # the mirror writes after its debounce
        found = await writer.memory.beads.search_memories(space)
        await asyncio.sleep(0.25)
    assert [(m.base_memory_id, m.space, m.agent) for m in found] == [  # type: ignore[attr-defined]
        (stored, space, str(researcher.jid.bare))
    ]
    assert await outsider.memory.beads.search_memories(space) == []


TEAM_TOML = """
[[spaces]]
name = "NAME"
owner = "OWNER"
description = "fixed in configuration"
max_memories = 5
members = { "MEMBER" = "writer", "*@localhost" = "reader" }
"""


async def test_declared_spaces_are_created_at_start_and_domain_grants_warned_of(
    tmp_path: Path,
) -> None:
    space, owner, member = space_name(), unique_jid("owner"), unique_jid("member")
    declared = tmp_path / "spaces.toml"
    declared.write_text(
        TEAM_TOML.replace("NAME", space).replace("OWNER", owner).replace("MEMBER", member)
    )
    service = MemoryServiceProcess(
        tmp_path / "data", "--services", "base-memory", "--spaces", str(declared)
    )
    service.start()
    agent = await start_client(member, service.port)
    try:
        assert any("grants *@localhost" in line for line in service.output)
        assert await agent.memory.store_memory("fact", "in a declared space", space=space)
        info = await agent.memory.space_info(space)
        assert info is not None and (info.owner, info.role, info.max_memories) == (
            owner,
            "writer",
            5,
        )
        assert info.description == "fixed in configuration"
    finally:
        await stop_agent(agent)
        service.stop()
    service.start()  # applied again at every start: nothing is duplicated or lost
    agent = await start_client(member, service.port)
    try:
        assert len(await agent.memory.get_recent_memories(space=space)) == 1
    finally:
        await stop_agent(agent)
        service.stop()


@pytest.mark.parametrize(
    ("name", "text", "problem"),
    [
        ("bad.yaml", "spaces:\n  - name: a/b\n    owner: o@localhost\n", "spaces.0.name"),
        ("bad.yaml", "spaces:\n  - name: t\n    owner: o@x\n    members: {m@x: god}\n", "god"),
        ("bad.toml", "[[spaces]\nname = 1", "bad.toml"),
        ("bad.yaml", "spaces:\n  - name: t\n    owner: '*@localhost'\n", "not a domain"),
    ],
)
def test_a_bad_spaces_file_stops_run_with_one_line(
    tmp_path: Path, name: str, text: str, problem: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    result = run_once(tmp_path / "data", "--spaces", str(path))
    assert result.returncode == 1
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"spade-memory: {path}") and problem in line, line
