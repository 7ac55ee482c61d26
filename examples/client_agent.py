"""A plain SPADE agent that remembers and recalls through the base memory agent.

Start the memory service first (``spade-memory run``), then:

    python examples/client_agent.py

(``SPADE_MEMORY_PORT`` selects another XMPP port than 5222.)
"""

from __future__ import annotations

import asyncio
import os
import sys

from spade.agent import Agent

from spade_memory import AgentStartError, MemoryMixin, start_agent, stop_agent


class Assistant(MemoryMixin, Agent):  # type: ignore[misc]
    """Any SPADE agent: the mixin adds ``self.memory`` once it is connected."""


async def main() -> None:
    port = int(os.environ.get("SPADE_MEMORY_PORT", "5222"))
    agent = Assistant("assistant@localhost", "secret", port=port)
    await start_agent(agent)
    try:
        memory_id = await agent.memory.store_memory(
            "preference", "The user prefers answers in Spanish", context="first chat"
        )
        print("stored", memory_id)
        for memory in await agent.memory.search_memories("which language does the user prefer"):
            print(f"recalled [{memory.category}] {memory.content} (used {memory.access_count}x)")
        print(await agent.memory.get_memory_stats())
    finally:
        await stop_agent(agent)


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except AgentStartError as error:  # nothing listens there, a refused password, ...
        sys.exit(f"client_agent: {error}")
    except KeyboardInterrupt:  # Ctrl-C: the agents were stopped on the way out
        print("client_agent: interrupted", file=sys.stderr)
        sys.exit(130)
