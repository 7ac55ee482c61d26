"""The ``memories`` verbs of the entity graph: the entities an agent's memories name, the
memories about one, and the memories related to one memory."""

from __future__ import annotations

import argparse

from rich import box
from rich.console import Console
from rich.table import Table

from spade_memory.client.memory_client import MemoryClient
from spade_memory.protocol.memories import (
    ListEntities,
    MemoriesAbout,
    MemoryList,
    RelatedMemories,
)
from spade_memory.server.shell.ids import resolve
from spade_memory.server.shell.views import memory_table, print_json


async def entities_verb(client: MemoryClient, args: argparse.Namespace, console: Console) -> int:
    """The entities the memories name, the most named first."""
    op = ListEntities(prefix=args.prefix, kind=args.kind, limit=args.limit, space=args.space)
    listed = await client.request(client.base_memory_jid, op)
    assert listed is not None  # a timeout raises: the client is not degraded
    if args.json:
        print_json(listed.model_dump(mode="json"))
        return 0
    if not listed.entities:
        console.print("no entities")
        return 0
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for column in ("name", "kind", "memories", "subject of", *(["space"] * (args.space == "*"))):
        table.add_column(column)
    for entity in listed.entities:
        row = [entity.name, entity.kind, str(entity.memories), str(entity.subject_of)]
        table.add_row(*row, *([entity.space or "personal"] * (args.space == "*")))
    console.print(table)
    return 0


async def about_verb(client: MemoryClient, args: argparse.Namespace, console: Console) -> int:
    """The memories naming one entity, those it is the subject of first."""
    op = MemoriesAbout(entity=args.entity, limit=args.limit, space=args.space, count_access=False)
    _show(console, args, await client.request(client.base_memory_jid, op), scores=False)
    return 0


async def related_verb(client: MemoryClient, args: argparse.Namespace, console: Console) -> int:
    """The memories naming what one memory names, the most shared first."""
    named = await resolve(client, args.id, args.space)
    op = RelatedMemories(id=named.id, limit=args.limit, space=named.space, count_access=False)
    _show(console, args, await client.request(client.base_memory_jid, op), scores=True)
    return 0


def _show(
    console: Console, args: argparse.Namespace, found: MemoryList | None, *, scores: bool
) -> None:
    assert found is not None  # a timeout raises: the client is not degraded
    if args.json:
        print_json({"memories": [memory.model_dump(mode="json") for memory in found.memories]})
    else:
        memory_table(console, found.memories, spaces=args.space == "*", scores=scores)
