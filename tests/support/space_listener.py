"""A subscriber in its own process: ``python -m tests.support.space_listener JID PORT SPACE
[AFTER]``.

It follows the space's changes (catching up after the cursor AFTER when given) and
prints ``change <seq> <kind> <memory id> <author> <content>`` for each, then keeps
listening until SIGINT.
"""

from __future__ import annotations

import asyncio
import signal
import sys

from spade.agent import Agent

from spade_memory import MemoryMixin
from spade_memory.xmpp.lifecycle import start_agent, stop_agent

READY = "listener subscribed"


class Listener(MemoryMixin, Agent):  # type: ignore[misc]
    pass


async def main(jid: str, port: str, space: str, after: str | None = None) -> None:
    agent = Listener(jid, "listener-secret", port=int(port))
    await start_agent(agent)
    changes = agent.memory.changes(space, None if after is None else int(after))
    await changes.start()
    print(READY, flush=True)
    stop = asyncio.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(signum, stop.set)

    async def follow() -> None:
        async for change in changes:
            content = change.memory.content if change.memory else "-"
            print(f"change {change.seq} {change.kind} {change.memory_id} {change.author} "
                  f"{content}", flush=True)  # fmt: skip

    following = asyncio.create_task(follow())
    await stop.wait()
    following.cancel()
    await asyncio.gather(following, return_exceptions=True)
    await stop_agent(agent)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
