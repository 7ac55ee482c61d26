"""``spade-memory spaces …``: the shared spaces the agent belongs to, made and shared from
the shell (list, info, create, grant, revoke), through the base memory agent like any
member's calls, so every rule of spaces applies."""

from __future__ import annotations

import argparse

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from spade_memory.client.memory_client import MemoryClient
from spade_memory.protocol.ops import Op
from spade_memory.protocol.spaces import (
    CreateSpace,
    Grant,
    ListSpaces,
    Revoke,
    SpaceDetails,
    SpaceInfo,
)
from spade_memory.server.shell.views import print_json


async def list_verb(client: MemoryClient, args: argparse.Namespace, console: Console) -> int:
    """The spaces the agent belongs to, with its role in each."""
    listed = await client.request(client.base_memory_jid, ListSpaces())
    assert listed is not None
    if args.json:
        print_json({"spaces": [space.model_dump(mode="json") for space in listed.spaces]})
        return 0
    if not listed.spaces:
        console.print("no spaces")
        return 0
    table = Table("name", "role", "owner", "description", box=box.SIMPLE_HEAD, show_edge=False)
    for space in listed.spaces:
        row = (space.name, space.role, space.owner, space.description or "")
        table.add_row(*(Text(cell) for cell in row))
    console.print(table)
    return 0


async def info_verb(client: MemoryClient, args: argparse.Namespace, console: Console) -> int:
    """A space's owner, members, counts and quota."""
    return await _details(client, SpaceInfo(space=args.name), args, console)


async def create_verb(client: MemoryClient, args: argparse.Namespace, console: Console) -> int:
    """A new space owned by the agent."""
    op = CreateSpace(name=args.name, description=args.description)
    return await _details(client, op, args, console)


async def grant_verb(client: MemoryClient, args: argparse.Namespace, console: Console) -> int:
    """Give a member (a bare JID, or ``*@domain``) a role in a space."""
    op = Grant(space=args.name, member=args.member, role=args.role)
    return await _details(client, op, args, console)


async def revoke_verb(client: MemoryClient, args: argparse.Namespace, console: Console) -> int:
    """Take a member's role in a space away."""
    op = Revoke(space=args.name, member=args.member)
    return await _details(client, op, args, console)


async def _details(
    client: MemoryClient, op: Op[SpaceDetails], args: argparse.Namespace, console: Console
) -> int:
    details = await client.request(client.base_memory_jid, op)
    assert details is not None
    if args.json:
        print(details.model_dump_json())
        return 0
    table = Table(show_header=False, box=None)
    table.add_column(no_wrap=True)
    table.add_column(overflow="fold")
    quota = f"{details.max_memories or '-'} memories, {details.max_bytes or '-'} bytes"
    rows = [
        ("space", details.name), ("owner", details.owner), ("your role", details.role),
        ("description", details.description or "-"),
        ("memories", f"{details.memories} ({details.bytes} bytes)"), ("quota", quota),
        ("subscribers", str(details.subscribers)),
    ]  # fmt: skip
    rows += [("members", "")] + [(f"  {m.member}", m.role) for m in details.members]
    for name, value in rows:
        table.add_row(name, Text(value))
    console.print(table)
    return 0
