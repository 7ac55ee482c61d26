"""An agent that logs in only to carry memory requests: for a shell command acting as an
agent, and for spade_llm's memory classes when the caller hands them no agent. A JID may
hold several connections at once (resources), so this one can run beside the agent's own.
"""

from __future__ import annotations

from spade.agent import Agent

from spade_memory.client.mixin import MemoryMixin
from spade_memory.xmpp.lifecycle import start_agent


class LoginAgent(MemoryMixin, Agent):  # type: ignore[misc]
    """A SPADE agent with ``self.memory`` and nothing else to do."""


async def log_in(
    jid: str, password: str, *, port: int = 5222, timeout: float = 10.0, register: bool = True
) -> LoginAgent:
    """Connect as ``jid``; ``agent.memory`` is then its client (``timeout`` per request).
    ``register`` False never makes the account on a server that lets clients register
    (a login of a person checks an account that exists).

    Returns the started agent (stop it with ``lifecycle.stop_agent``); raises
    ``WrongPassword`` when the server refuses the password, ``AgentStartError`` when no
    server answers within ``timeout`` seconds.
    """
    agent = LoginAgent(jid, password, port=port, memory_timeout=timeout)
    await start_agent(agent, attempt_timeout=timeout, attempts=1, auto_register=register)
    return agent
