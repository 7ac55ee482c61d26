"""``spade-memory spaces rooms|bind|unbind|hear``: the group-chat rooms bound to the agent's
spaces, bound and unbound from the shell, and what was said in one found again, through
the interaction memory agent like any member's calls."""

from __future__ import annotations

import argparse

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from spade_memory.client.memory_client import MemoryClient
from spade_memory.server.shell.views import print_json


async def rooms_verb(client: MemoryClient, args: argparse.Namespace, console: Console) -> int:
    """The rooms bound to the spaces the agent reads."""
    rooms = await client.list_rooms()
    if args.json:
        print_json({"rooms": [room.model_dump(mode="json") for room in rooms]})
        return 0
    if not rooms:
        console.print("no rooms")
        return 0
    table = Table("room", "space", "nick", "there now", box=box.SIMPLE_HEAD, show_edge=False)
    for room in rooms:
        row = (room.room, room.space, room.nick, "yes" if room.present else "no")
        table.add_row(*(Text(cell, overflow="fold") for cell in row))
    console.print(table)
    return 0


async def bind_verb(client: MemoryClient, args: argparse.Namespace, console: Console) -> int:
    """Bind a room to a space: the interaction memory agent joins it and keeps its talk."""
    room = await client.join_room(args.room, args.name, nick=args.nick)
    assert room is not None
    if args.json:
        print_json(room.model_dump(mode="json"))
    else:
        console.print(Text(f"{room.room} is kept in {room.space} (as {room.nick})"))
    return 0


async def unbind_verb(client: MemoryClient, args: argparse.Namespace, console: Console) -> int:
    """Unbind a room: the agent leaves it; its notes stay in the space."""
    left = await client.leave_room(args.room)
    if args.json:
        print_json({"left": left})
    else:
        console.print(Text(f"{args.room} {'unbound' if left else 'was not bound'}"))
    return 0


async def hear_verb(client: MemoryClient, args: argparse.Namespace, console: Console) -> int:
    """What was said in a bound room about a question, best first."""
    notes = await client.search_room(args.room, args.query, limit=args.limit)
    if args.json:
        print_json({"notes": [note.model_dump(mode="json") for note in notes]})
        return 0
    if not notes:
        console.print("nothing said about that")
        return 0
    table = Table("said at", "by", "text", box=box.SIMPLE_HEAD, show_edge=False)
    for note in notes:
        by = f"{note.nick} ({note.author})" if note.author else note.nick
        row = (note.said_at[:16].replace("T", " "), by, note.text)
        table.add_row(*(Text(cell, overflow="fold") for cell in row))
    console.print(table)
    return 0
