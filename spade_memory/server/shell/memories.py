"""The ``memories`` verbs that read or change single memories: list, search, show, add,
update, delete, stats. Reads do not count as a use (see ``reading``); ids may be short
(see ``ids``)."""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.table import Table

from spade_memory.client.memory_client import MemoryClient
from spade_memory.protocol.memories import (
    DeleteMemory,
    GetMemory,
    ListMemories,
    MemoryList,
    MemoryStatsOp,
    RecentMemories,
    SearchMemories,
    StoreMemory,
    UpdateMemory,
)
from spade_memory.server.shell.errors import ShellError
from spade_memory.server.shell.ids import resolve
from spade_memory.server.shell.moments import moments
from spade_memory.server.shell.views import memory_detail, memory_table, print_json, print_stored


async def list_verb(client: MemoryClient, args: argparse.Namespace, console: Console) -> int:
    """A page of memories, most recently used first, with the next page's offset."""
    page_op: ListMemories | RecentMemories
    if args.category:
        page_op = ListMemories(
            category=args.category, limit=args.limit, offset=args.offset, space=args.space,
            count_access=False, **moments(args),
        )  # fmt: skip
    else:
        page_op = RecentMemories(
            limit=args.limit, offset=args.offset, space=args.space, count_access=False,
            **moments(args),
        )  # fmt: skip
    page = await _memories(client, page_op)
    if args.json:
        print_json({"memories": _dumped(page), "next_offset": page.next_offset})
        return 0
    memory_table(console, page.memories, spaces=args.space == "*")
    if page.next_offset is not None:
        console.print(f"more: --offset {page.next_offset}")
    return 0


async def search_verb(client: MemoryClient, args: argparse.Namespace, console: Console) -> int:
    """The best matches of a query, with their scores."""
    op = SearchMemories(
        query=args.query, limit=args.limit, category=args.category, space=args.space,
        count_access=False, **moments(args),
    )  # fmt: skip
    found = await _memories(client, op)
    if args.json:
        print_json({"memories": _dumped(found)})
    else:
        memory_table(console, found.memories, spaces=args.space == "*", scores=True)
    return 0


async def show_verb(client: MemoryClient, args: argparse.Namespace, console: Console) -> int:
    """One memory in full, by its id or a unique start or end of it."""
    named = await resolve(client, args.id, args.space)
    op = GetMemory(id=named.id, space=named.space, count_access=False, **moments(args))
    memory = await client.request(client.base_memory_jid, op)
    assert memory is not None  # a timeout raises: the client is not degraded
    memory_detail(console, memory, args.json)
    return 0


async def add_verb(client: MemoryClient, args: argparse.Namespace, console: Console) -> int:
    """Store one memory (the service classifies it when no category is given)."""
    op = StoreMemory(
        content=args.content, category=args.category, context=args.context,
        confidence=args.confidence, space=args.space, tags=args.tag or [],
        supersedes=args.supersedes, valid_from=args.valid_from, valid_to=args.valid_to,
        conflicts=args.conflicts,
    )  # fmt: skip
    stored = await client.request(client.base_memory_jid, op)
    assert stored is not None
    print_stored(console, stored, args.json, args.category)
    return 0


async def update_verb(client: MemoryClient, args: argparse.Namespace, console: Console) -> int:
    """Change a memory's content, category, context or confidence."""
    changes = {
        name: getattr(args, name)
        for name in ("content", "category", "context", "confidence")
        if getattr(args, name) is not None
    }
    if not changes:
        raise ShellError("say what to change: --content, --category, --context or --confidence")
    named = await resolve(client, args.id, args.space)
    op = UpdateMemory.model_validate({"id": named.id, "space": named.space, **changes})
    memory = await client.request(client.base_memory_jid, op)
    assert memory is not None
    memory_detail(console, memory, args.json)
    return 0


async def delete_verb(client: MemoryClient, args: argparse.Namespace, console: Console) -> int:
    """Forget one memory."""
    named = await resolve(client, args.id, args.space)
    await client.request(client.base_memory_jid, DeleteMemory(id=named.id, space=named.space))
    if args.json:
        print_json({"id": named.id, "deleted": True})
    else:
        console.print(f"deleted {named.id}")
    return 0


async def stats_verb(client: MemoryClient, args: argparse.Namespace, console: Console) -> int:
    """How many memories, by category, and the state of search."""
    stats = await client.request(client.base_memory_jid, MemoryStatsOp(space=args.space))
    assert stats is not None
    if args.json:
        print(stats.model_dump_json())
        return 0
    table = Table(show_header=False, box=None)
    table.add_row("memories", str(stats.total_memories))
    for category, count in sorted(stats.category_counts.items()):
        table.add_row(f"  {category}", str(count))
    if stats.avg_confidence is not None:
        table.add_row("average confidence", f"{stats.avg_confidence:.2f}")
    table.add_row("oldest", str(stats.oldest_memory or "-"))
    table.add_row("newest", str(stats.newest_memory or "-"))
    table.add_row("search", stats.search)
    console.print(table)
    return 0


async def _memories(
    client: MemoryClient, op: ListMemories | RecentMemories | SearchMemories
) -> MemoryList:
    found = await client.request(client.base_memory_jid, op)
    assert found is not None
    return found


def _dumped(memories: MemoryList) -> list[dict[str, object]]:
    return [memory.model_dump(mode="json") for memory in memories.memories]
