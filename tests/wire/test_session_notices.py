"""A member subscribed to a shared space hears when a working session kept there
changes: the interaction memory agent (another process) tells the space's subscribers
after each committed change, and only then."""

from __future__ import annotations

import asyncio

from spade_memory.protocol.working import SessionChanged
from spade_memory.protocol.working_memory import Finding, Focus
from tests.support.harness import ClientAgent

WAIT = 60.0
"""Seconds to wait for a notice: a loaded machine is slow, not wrong."""


async def test_a_members_session_change_is_told_to_the_spaces_subscribers(
    alice: ClientAgent, bob: ClientAgent
) -> None:
    space = "incident-42"
    await alice.memory.create_space(space)
    await alice.memory.grant(space, str(bob.jid.bare), "writer")
    heard: list[SessionChanged] = []
    arrived = asyncio.Event()

    def listener(change: SessionChanged) -> None:
        heard.append(change)
        arrived.set()

    stop = alice.memory.on_session_change(space, listener)
    async with alice.memory.changes(space):  # subscribed: the notices come
        shared = bob.memory.space(space).session("triage")
        await shared.set_focus(Focus(type="module", id="billing", name="billing"))
        await shared.get()  # a read tells no one
        await bob.memory.session("triage").set_focus(Focus(type="file", id="x", name="x"))
        await shared.add_finding(Finding(type="bug", title="double charge"))
        while len(heard) < 2:
            arrived.clear()
            await asyncio.wait_for(arrived.wait(), WAIT)
        stop()
    bob_jid = str(bob.jid.bare)
    assert heard == [
        SessionChanged(space=space, session_id="triage", author=bob_jid, op="set_focus"),
        SessionChanged(space=space, session_id="triage", author=bob_jid, op="add_finding"),
    ]


async def test_no_notice_without_a_subscription(alice: ClientAgent, bob: ClientAgent) -> None:
    """A member that is not subscribed to the space hears nothing of its sessions (the
    base memory agent's subscription is what the interaction memory agent reads)."""
    space = "quiet-room"
    await alice.memory.create_space(space)
    await alice.memory.grant(space, str(bob.jid.bare), "writer")
    heard: list[SessionChanged] = []
    alice.memory.on_session_change(space, heard.append)
    await bob.memory.space(space).session("s").set_focus(Focus(type="file", id="a", name="a"))
    # a later change that alice does hear, once subscribed, comes after any earlier notice
    arrived = asyncio.Event()
    alice.memory.on_session_change(space, lambda _change: arrived.set())
    async with alice.memory.changes(space):
        await bob.memory.space(space).session("s").add_finding(Finding(type="bug", title="t"))
        await asyncio.wait_for(arrived.wait(), WAIT)
    assert [change.op for change in heard] == ["add_finding"]
