"""``spade-memory spaces …``: the shared spaces the agent belongs to, made and shared from
the shell (list, info, create, grant, revoke, govern), and a governed space's proposals
listed, approved and rejected, through the base memory agent like any member's calls, so
every rule of spaces applies."""

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
    DecideProposal,
    Govern,
    Grant,
    ListProposals,
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
    table = Table(
        "name", "role", "owner", "governed", "description", box=box.SIMPLE_HEAD, show_edge=False
    )
    for space in listed.spaces:
        governed = "yes" if space.governed else ""
        row = (space.name, space.role, space.owner, governed, space.description or "")
        table.add_row(*(Text(cell) for cell in row))
    console.print(table)
    return 0


async def info_verb(client: MemoryClient, args: argparse.Namespace, console: Console) -> int:
    """A space's owner, members, counts and quota."""
    return await _details(client, SpaceInfo(space=args.name), args, console)


async def create_verb(client: MemoryClient, args: argparse.Namespace, console: Console) -> int:
    """A new space owned by the agent."""
    op = CreateSpace(name=args.name, description=args.description, governed=args.governed)
    return await _details(client, op, args, console)


async def govern_verb(client: MemoryClient, args: argparse.Namespace, console: Console) -> int:
    """Make a space's writers' writes wait for an admin (``--off``: stop)."""
    return await _details(client, Govern(space=args.name, governed=not args.off), args, console)


async def proposals_verb(client: MemoryClient, args: argparse.Namespace, console: Console) -> int:
    """The writes of a governed space waiting for an admin (an admin sees all of them)."""
    listed = await client.request(client.base_memory_jid, ListProposals(space=args.name))
    assert listed is not None
    if args.json:
        print(listed.model_dump_json())
        return 0
    if not listed.proposals:
        console.print("no proposals waiting")
        return 0
    table = Table(box=box.SIMPLE_HEAD, show_edge=False)
    table.add_column("id", no_wrap=True)
    table.add_column("proposer", overflow="fold")
    table.add_column("write", overflow="fold")
    for proposal in listed.proposals:
        op = proposal.op
        write = f"{op['op']} {op.get('content') or op.get('id', '')}"
        table.add_row(*(Text(cell) for cell in (proposal.id, proposal.proposer, write)))
    console.print(table)
    return 0


async def approve_verb(client: MemoryClient, args: argparse.Namespace, console: Console) -> int:
    """Approve a proposal: its write is applied as its proposer's own."""
    return await _decide(client, args, console, approve=True)


async def reject_verb(client: MemoryClient, args: argparse.Namespace, console: Console) -> int:
    """Reject a proposal (``--reason`` is told to its proposer)."""
    return await _decide(client, args, console, approve=False)


async def _decide(
    client: MemoryClient, args: argparse.Namespace, console: Console, approve: bool
) -> int:
    op = DecideProposal(
        space=args.name, proposal=args.proposal, approve=approve,
        reason=getattr(args, "reason", None),
    )  # fmt: skip
    decided = await client.request(client.base_memory_jid, op)
    assert decided is not None
    if args.json:
        print(decided.model_dump_json())
        return 0
    proposal = decided.proposal
    said = f"proposal {proposal.id}: {proposal.state}"
    if decided.result is not None and "id" in decided.result:
        said += f" (memory {decided.result['id']})"
    if proposal.note:
        said += f": {proposal.note}"
    console.print(Text(said))
    return 0


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
        ("governed", f"yes, {details.pending} waiting" if details.governed else "no"),
    ]  # fmt: skip
    rows += [("members", "")] + [(f"  {m.member}", m.role) for m in details.members]
    for name, value in rows:
        table.add_row(name, Text(value))
    console.print(table)
    return 0
