"""A busy group chat: how fast the interaction memory agent records a room, and how soon
a room message can be found.

    python -m benchmarks.rooms [--messages 2000] [--probes 200]

Needs Debian's ``prosody`` (with ``mod_muc``, as the repository's configuration loads
it). Prosody, ``spade-memory run`` and the room's people run in three processes, and
every message crosses the server.

1. Recording: one speaker says ``--messages`` messages as fast as its connection takes
   them; printed: notes recorded per second, from the first message sent to the last
   one searchable (the agent records in order, so the last one found means all are),
   against ``add_information`` requests per second sent one after another by a client
   in the same run (the rate of notes a client writes itself).
2. Delay: ``--probes`` times, one message, then ``search_room`` for it until it is
   found; printed: the delay from saying it to finding it, p50 and p99, against the
   round trip of one ``search_room`` in the same run (the delay cannot be measured
   finer than that).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import tempfile
import time
import uuid
from pathlib import Path

from rich.console import Console
from rich.table import Table
from slixmpp import JID

from spade_memory.server.registry import SERVICES
from spade_memory.server.runtime import PASSWORD_ENV, use_uvloop
from spade_memory.testing import MemoryServiceProcess, ProsodyProcess
from spade_memory.xmpp.lifecycle import start_agent, stop_agent

from .stats import summary_ms
from .wire import Requester

PROSODY_DIR = Path(__file__).parent.parent / "prosody"
AGENTS_PASSWORD = "bench-agents"
PEOPLE = ("owner@localhost", "speaker@localhost")
FOUND_WITHIN = 120.0


async def _in_room(agent: Requester, room: str, nick: str) -> None:
    if "xep_0045" not in agent.client.plugin:
        agent.client.register_plugin("xep_0045")
    muc = agent.client.plugin["xep_0045"]
    await muc.join_muc_wait(
        JID(room), nick, maxstanzas=0, timeout=20,
        presence_options={"pfrom": agent.client.boundjid},
    )  # fmt: skip


async def _found(agent: Requester, room: str, token: str) -> bool:
    return any(token in n.text for n in await agent.memory.search_room(room, token, limit=1))


async def _until_found(agent: Requester, room: str, token: str) -> float:
    deadline = time.perf_counter() + FOUND_WITHIN
    while not await _found(agent, room, token):
        if time.perf_counter() > deadline:
            raise TimeoutError(f"{token} not found within {FOUND_WITHIN:g} s")
    return time.perf_counter()


async def bench(messages: int, probes: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        accounts = " ".join(f"{s.node}:{AGENTS_PASSWORD}" for s in SERVICES)
        server = ProsodyProcess(PROSODY_DIR, Path(tmp) / "prosody", {
            "PROSODY_ACCOUNTS": accounts, "PROSODY_UNLIMITED": " ".join(PEOPLE),
        })  # fmt: skip
        server.start()
        service = MemoryServiceProcess(
            Path(tmp) / "memory", "--external-server", port=server.port,
            env={PASSWORD_ENV: AGENTS_PASSWORD},
        )  # fmt: skip
        people = []
        try:
            service.start()
            for jid in PEOPLE:
                server.register(jid, "bench")
                people.append(Requester(jid, "bench", port=server.port))
                await start_agent(people[-1])
            owner, speaker = people
            space, room = f"bench-{uuid.uuid4().hex[:8]}", "busy@conference.localhost"
            await _in_room(owner, room, "owner")
            await owner.memory.create_space(space)
            await owner.memory.join_room(room, space)
            await _in_room(speaker, room, "speaker")

            started = time.perf_counter()
            for n in range(200):
                await owner.memory.add_information("baseline", f"a note of its own, number {n}")
            client_rate = 200 / (time.perf_counter() - started)

            started = time.perf_counter()
            for n in range(messages):
                speaker.client.send_message(
                    mto=JID(room), mbody=f"busy message {n} token{n}x", mtype="groupchat"
                )
            await _until_found(owner, room, f"token{messages - 1}x")
            room_rate = messages / (time.perf_counter() - started)

            round_trips, delays = [], []
            for n in range(probes):
                started = time.perf_counter()
                await _found(owner, room, f"missing{n}y")
                round_trips.append(time.perf_counter() - started)
                token = f"probe{n}z"
                said = time.perf_counter()
                speaker.client.send_message(
                    mto=JID(room), mbody=f"probe {token}", mtype="groupchat"
                )
                delays.append(await _until_found(owner, room, token) - said)
            return {
                "room_rate": room_rate, "client_rate": client_rate,
                "delays": delays, "round_trips": round_trips,
            }  # fmt: skip
        finally:
            for agent in people:
                await stop_agent(agent)
            service.stop()
            server.stop()


async def main(args: argparse.Namespace) -> None:
    console = Console()
    with console.status(f"a room of {args.messages:,} messages, then {args.probes} probes ..."):
        figures = await bench(args.messages, args.probes)
    room_rate, client_rate = figures["room_rate"], figures["client_rate"]
    assert isinstance(room_rate, float) and isinstance(client_rate, float)
    table = Table("recorded", "per second", "vs a client's add_information", title="A busy room")
    table.add_row(
        f"{args.messages:,} room messages", f"{room_rate:,.0f}", f"{room_rate / client_rate:.2f}x"
    )
    table.add_row("200 add_information, one after another", f"{client_rate:,.0f}", "1.00x")
    console.print(table)
    delays, round_trips = figures["delays"], figures["round_trips"]
    assert isinstance(delays, list) and isinstance(round_trips, list)
    d50, d99 = summary_ms(delays)
    r50, r99 = summary_ms(round_trips)
    table = Table(
        "from a room message", "p50 ms", "p99 ms", "p50 vs one search_room",
        title=f"{args.probes} probes",
    )  # fmt: skip
    table.add_row(
        "to its being found by search_room", f"{d50:.1f}", f"{d99:.1f}", f"{d50 / r50:.2f}x"
    )
    table.add_row("one search_room round trip (a miss)", f"{r50:.1f}", f"{r99:.1f}", "1.00x")
    console.print(table)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--probes", type=int, default=200)
    logging.getLogger("spade.Agent").setLevel(logging.ERROR)  # the room's echoes, unmatched
    use_uvloop()
    asyncio.run(main(parser.parse_args()))
