"""Two agents of a team share what they know through a memory space.

Start the memory service first (``spade-memory run``), then:

    python examples/team.py

A researcher creates the space ``survey-team``, lets a writer in, and stores two
findings there; the writer, subscribed to the space, hears of each one as it is
stored, then finds both by search, each with its author. Neither agent sees the
other's personal memories. (``SPADE_MEMORY_PORT`` selects another XMPP port.)
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid

from spade.agent import Agent

from spade_memory import AgentStartError, Change, MemoryMixin, start_agent, stop_agent


class TeamAgent(MemoryMixin, Agent):  # type: ignore[misc]
    """Any SPADE agent: the mixin adds ``self.memory``."""


async def main() -> None:
    port = int(os.environ.get("SPADE_MEMORY_PORT", "5222"))
    space = f"survey-team-{uuid.uuid4().hex[:6]}"
    researcher = TeamAgent("researcher@localhost", "researcher-secret", port=port)
    writer = TeamAgent("writer@localhost", "writer-secret", port=port)
    for agent in (researcher, writer):
        await start_agent(agent)
    try:
        await researcher.memory.create_space(space, "what the survey found")
        await researcher.memory.grant(space, "writer@localhost", "writer")

        heard = asyncio.Queue[Change]()
        # returns once subscribed: the stores below are heard, with no pause before them
        follower = await writer.memory.on_change(space, heard.put_nowait)

        team = researcher.memory.space(space)
        await team.store_memory("fact", "The 2024 survey covered 1,200 firms")
        await team.store_memory("fact", "Most firms adopted the standard in 2025")
        for _ in range(2):
            change = await asyncio.wait_for(heard.get(), 10)
            print(f"heard: {change.kind} by {change.author}")
        follower.cancel()

        for memory in await writer.memory.search_memories("survey firms standard", space=space):
            print(f"found: {memory.content} (by {memory.author})")
        print("writer's own memories:", len(await writer.memory.get_recent_memories()))
        await researcher.memory.delete_space(space)
    finally:
        for agent in (writer, researcher):
            await stop_agent(agent)


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except AgentStartError as error:  # nothing listens there, a refused password, ...
        sys.exit(f"team: {error}")
    except KeyboardInterrupt:  # Ctrl-C: the agents were stopped on the way out
        print("team: interrupted", file=sys.stderr)
        sys.exit(130)
