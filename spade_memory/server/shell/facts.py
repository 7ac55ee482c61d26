"""The ``memories`` verbs of facts that change: supersede a memory, undo a supersede,
read its history (versions and supersede chain), consolidate a space."""

from __future__ import annotations

import argparse

from rich.console import Console

from spade_memory.client.memory_client import MemoryClient
from spade_memory.protocol.consolidation import ConsolidateMemories
from spade_memory.protocol.memories import MemoryHistoryOp, RestoreMemory, SupersedeMemory
from spade_memory.server.shell.errors import ShellError
from spade_memory.server.shell.ids import resolve
from spade_memory.server.shell.views import memory_detail, print_json, print_stored


async def supersede_verb(client: MemoryClient, args: argparse.Namespace, console: Console) -> int:
    """Replace a memory with what is true now: new content, or a memory already stored."""
    if (args.content is None) == (args.by is None):
        raise ShellError("say what is true now: the new content, or --by ID of a memory")
    named = await resolve(client, args.id, args.space)
    by = None if args.by is None else (await resolve(client, args.by, args.space)).id
    op = SupersedeMemory(
        id=named.id, content=args.content, by=by, context=args.context, space=named.space,
        valid_from=args.valid_from,
    )  # fmt: skip
    stored = await client.request(client.base_memory_jid, op)
    assert stored is not None  # a timeout raises: the client is not degraded
    print_stored(console, stored, args.json, None)
    return 0


async def restore_verb(client: MemoryClient, args: argparse.Namespace, console: Console) -> int:
    """Make a superseded (or merged) memory current again: its supersede was wrong."""
    named = await resolve(client, args.id, args.space)  # a superseded one: by its full id
    op = RestoreMemory(id=named.id, space=named.space)
    memory = await client.request(client.base_memory_jid, op)
    assert memory is not None  # a timeout raises: the client is not degraded
    memory_detail(console, memory, args.json)
    return 0


async def history_verb(client: MemoryClient, args: argparse.Namespace, console: Console) -> int:
    """A memory's versions, the memories it replaced and those that replaced it."""
    named = await resolve(client, args.id, args.space)  # a superseded one: by its full id
    history = await client.request(
        client.base_memory_jid, MemoryHistoryOp(id=named.id, space=named.space)
    )
    if history is None:
        raise ShellError("no answer")
    if args.json:
        print_json(history.model_dump(mode="json"))
        return 0
    for version in history.versions:
        console.print(
            f"v{version.version} {version.changed_at:%Y-%m-%d %H:%M} {version.changed_by}:"
            f" {version.content}",
            markup=False,
        )
    if history.valid_from or history.valid_to:
        console.print(f"valid: {history.valid_from or '…'} to {history.valid_to or '…'}")
    if history.supersedes:
        console.print(f"replaced: {' ← '.join(history.supersedes)}")
    if history.superseded_by:
        console.print(f"replaced by: {' → '.join(history.superseded_by)}")
    if history.deleted is not None:
        console.print(f"deleted by {history.deleted.deleted_by} at {history.deleted.deleted_at}")
    return 0


async def consolidate_verb(client: MemoryClient, args: argparse.Namespace, console: Console) -> int:
    """Merge a space's near-duplicates, or (``--dry-run``) show what would be merged."""
    op = ConsolidateMemories(space=args.space, dry_run=args.dry_run)
    done = await client.request(client.base_memory_jid, op)
    assert done is not None  # a timeout raises: the client is not degraded
    if args.json:
        print(done.model_dump_json())
        return 0
    verb = "would merge" if done.dry_run else "merged"
    for merge in done.merges:
        console.print(f"{merge.kept}: {merge.content}", markup=False)
        for merged in merge.merged:
            console.print(f"  {verb} {merged}", markup=False)
    console.print(
        f"{verb} {done.merged} of {done.compared} memories; replaced so far:"
        f" {done.superseded}, longest chain: {done.longest_chain}"
    )
    return 0
