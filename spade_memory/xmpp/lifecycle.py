"""Start and stop SPADE agents without the hangs and zombies SPADE 4 allows.

- slixmpp retries a refused connection in a loop until the caller gives up, so a
  quick probe (``reachability``) first names why a server is missing or unfit.
- ``Agent.start()`` waits forever when no server answers, and SPADE's
  embedded server (pyjabber 0.4) sometimes drops a login halfway through
  STARTTLS (seen on first logins to a fresh server), so a start attempt is
  bounded, a stuck one is aborted, and it is tried again.
- SPADE enables XMPP keepalive pings without the handler that stops them on
  disconnect, so a stopped agent's next ping fails and slixmpp reconnects
  it; and neither SPADE nor slixmpp ends the tasks of a stopped agent:
  ``stop_agent`` turns the pings off and ends what is left.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from spade.agent import Agent, AuthenticationFailure, DisconnectedException
from spade.behaviour import CyclicBehaviour

from spade_memory.xmpp.connect_errors import (
    AgentStartError,
    WrongPassword,
    not_connected,
    refused_password,
)
from spade_memory.xmpp.output_task import end_output_task
from spade_memory.xmpp.reachability import PROBE_SECONDS, probe

__all__ = ["AgentStartError", "WakesWhenKilled", "WrongPassword", "start_agent", "stop_agent"]


async def start_agent(
    agent: Agent,
    *,
    attempt_timeout: float = 5.0,
    attempts: int = 3,
    auto_register: bool = True,
) -> None:
    """Start ``agent``, each attempt bounded by ``attempt_timeout`` seconds.

    Raises at once a named ``AgentStartError`` when a quick probe finds the server
    missing or unfit (see ``reachability``) and ``WrongPassword`` when the server
    refuses the password; ``AgentStartError`` (naming the server tried) after
    ``attempts`` attempts.
    """
    await probe(str(agent.jid.host), agent.xmpp_port, str(agent.jid.domain),
                min(attempt_timeout, PROBE_SECONDS), verify=agent.verify_security)  # fmt: skip
    for _ in range(attempts):
        try:
            await asyncio.wait_for(agent.start(auto_register=auto_register), attempt_timeout)
            return
        except AuthenticationFailure:
            await _abort(agent)
            raise refused_password(
                str(agent.jid.bare), str(agent.jid.host), agent.xmpp_port, auto_register
            ) from None
        except (asyncio.TimeoutError, DisconnectedException):
            await _abort(agent)
    raise not_connected(
        str(agent.jid), str(agent.jid.host), agent.xmpp_port, attempts, attempt_timeout
    )


async def stop_agent(agent: Agent, behaviours_timeout: float = 2.0) -> None:
    """Stop ``agent`` for good and end every task it left behind. Returns None.

    SPADE kills a behaviour by a flag its loop reads between two runs, and keeps no
    handle on the tasks it starts: a behaviour waiting in ``receive`` waits out its
    timeout (or for ever), and slixmpp's tasks of the connection (stanza handlers,
    the keepalive ping, the outgoing queue) go on after the disconnect. So the pings
    are turned off (or the next one would reconnect the agent), a ``receive`` still
    waiting is woken with None (as at its timeout), the behaviours get
    ``behaviours_timeout`` seconds to end, and what is left of the agent's tasks is
    cancelled and awaited."""
    behaviours = list(agent.behaviours)
    if agent.is_alive():
        await agent.stop()
    _stop_pings(agent)
    _cancel_timers(agent)
    await end_output_task(agent.client)
    for behaviour in behaviours:
        if behaviour.is_running:
            behaviour.queue.put_nowait(None)
    deadline = asyncio.get_running_loop().time() + behaviours_timeout
    while any(behaviour.is_running for behaviour in behaviours):
        if asyncio.get_running_loop().time() > deadline:
            break
        await asyncio.sleep(0.01)
    await _end_tasks(_tasks_of(agent, behaviours), behaviours_timeout)


async def _end_tasks(tasks: list[asyncio.Task[Any]], timeout: float) -> None:
    """Cancel ``tasks`` and wait (``timeout`` seconds at most) until they have ended."""
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.wait(tasks, timeout=timeout)


def _cancel_timers(agent: Agent) -> None:
    """Cancel what the agent's connection has scheduled: above all the timeouts of
    requests no one awaits (SPADE asks for the roster at every login and never reads
    the answer), whose ``IqTimeout`` would be lost half a minute after the stop."""
    client = agent.client
    for name in list(getattr(client, "scheduled_events", {})):
        client.cancel_schedule(name)


def _tasks_of(agent: Agent, behaviours: list[Any]) -> list[asyncio.Task[Any]]:
    """The running tasks (but this one) whose coroutine is a method of ``agent``'s
    connection, of one of its plugins, of one of ``behaviours`` or of one's mailbox
    (SPADE's ``receive`` waits on the mailbox in a task of its own)."""
    client = agent.client
    owners = {id(owner) for owner in (client, *behaviours) if owner is not None}
    owners |= {id(behaviour.queue) for behaviour in behaviours}
    found = []
    for task in asyncio.all_tasks():
        if task is asyncio.current_task() or task.done():
            continue
        frame = getattr(task.get_coro(), "cr_frame", None)
        owner = frame.f_locals.get("self") if frame is not None else None
        if owner is None:
            continue
        if id(owner) in owners or (client is not None and getattr(owner, "xmpp", None) is client):
            found.append(task)
    return found


class WakesWhenKilled(CyclicBehaviour):  # type: ignore[misc]
    """A behaviour that ends as soon as it is killed, not when its ``receive`` times out."""

    def kill(self, exit_code: object | None = None) -> None:
        """Kill it, and wake a ``receive`` waiting for a message (it gets None)."""
        super().kill(exit_code)
        self.queue.put_nowait(None)


async def _abort(agent: Agent) -> None:
    """Close a stuck connection and let its events pass before the next attempt.

    SPADE's handlers look up ``agent.client`` when an event fires, so a late
    "disconnected" from this client would otherwise fail the next attempt.
    """
    client = agent.client
    if client is None:
        return
    _stop_pings(agent)
    closed = client.disconnected
    client.abort()
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(asyncio.shield(closed), 2.0)
    _cancel_timers(agent)
    await end_output_task(agent.client)
    await _end_tasks(_tasks_of(agent, []), 2.0)  # the next attempt makes a new connection
    await asyncio.sleep(0)


def _stop_pings(agent: Agent) -> None:
    if agent.client is not None:
        agent.client["xep_0199"].disable_keepalive()
