"""``stop_agent`` ends everything a SPADE agent started, which SPADE and slixmpp leave
running after ``Agent.stop()``: a behaviour waiting in a long ``receive``, a handler
of the connection still at work, and what the connection has scheduled (real agents
on the embedded XMPP server)."""

from __future__ import annotations

import asyncio

from spade.behaviour import CyclicBehaviour
from spade.template import Template

from spade_memory.testing import MemoryServiceProcess
from spade_memory.xmpp.lifecycle import stop_agent
from tests.support.harness import start_client, unique_jid

FOR_AN_HOUR = 3600


class WaitsAnHour(CyclicBehaviour):  # type: ignore[misc]
    """SPADE's own kind of behaviour: killed, it ends only once its ``receive`` returns."""

    async def run(self) -> None:
        await self.receive(timeout=FOR_AN_HOUR)


async def test_a_stopped_agent_leaves_no_behaviour_handler_or_timer_running(
    memory_service: MemoryServiceProcess,
) -> None:
    agent = await start_client(unique_jid("stopped"), memory_service.port)
    sender = await start_client(unique_jid("sender"), memory_service.port)
    waiting = WaitsAnHour()
    agent.add_behaviour(waiting, Template(metadata={"for": "no one"}))  # it hears nothing
    handling = asyncio.Event()
    handler_ended = asyncio.Event()

    async def handle_for_an_hour(_: object) -> None:
        handling.set()
        try:
            await asyncio.sleep(FOR_AN_HOUR)
        finally:
            handler_ended.set()

    agent.client.add_event_handler("message", handle_for_an_hour)
    agent.client.schedule("a timer of the connection", FOR_AN_HOUR, lambda: None)
    try:
        sender.client.send_message(mto=agent.jid, mbody="keep busy", mtype="chat")
        await asyncio.wait_for(handling.wait(), 30)
        assert waiting.is_running
    finally:
        await stop_agent(agent)
        await stop_agent(sender)
    assert not waiting.is_running
    assert handler_ended.is_set()
    assert agent.client.scheduled_events == {}
