"""The ``memories`` verbs of facts that change: supersede a memory, read its history
(versions and supersede chain), consolidate a space, and the ``--as-of`` / ``--known-at``
times the reading verbs take."""

from __future__ import annotations

import argparse
from datetime import datetime, timezone
from typing import Any

from rich.console import Console

from spade_memory.client.memory_client import MemoryClient
from spade_memory.protocol.consolidation import ConsolidateMemories
from spade_memory.protocol.memories import MemoryHistoryOp, Stored, SupersedeMemory
from spade_memory.server.shell.errors import ShellError
from spade_memory.server.shell.ids import resolve
from spade_memory.server.shell.views import print_json


def moment(text: str) -> datetime:
    """An ``--as-of`` or ``--known-at`` time: ISO 8601, UTC when it names no zone."""
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is no time: write it as 2026-05-01 or 2026-05-01T09:30+02:00"
        ) from None
    return when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)


def add_moment_options(parser: argparse.ArgumentParser) -> None:
    """``--as-of`` and ``--known-at`` on a reading verb."""
    parser.add_argument(
        "--as-of", type=moment, metavar="TIME",
        help="what was valid then (ISO 8601, UTC unless a zone is given; default: now)",
    )  # fmt: skip
    parser.add_argument("--known-at", type=moment, metavar="TIME", help="what the store held then")


def moments(args: argparse.Namespace) -> dict[str, Any]:
    """The op fields of a reading verb's ``--as-of`` and ``--known-at``."""
    return {"as_of": getattr(args, "as_of", None), "known_at": getattr(args, "known_at", None)}


def print_stored(console: Console, stored: Stored, as_json: bool, fallback: str | None) -> None:
    """What a store or a supersede did: the id, what it replaced, what it conflicts with."""
    if as_json:
        print(stored.model_dump_json())
        return
    how = "already there" if stored.deduplicated else "stored"
    chosen = " (classified)" if stored.classified else ""
    console.print(f"{how}: {stored.id} {stored.category or fallback}{chosen}")
    if stored.supersedes is not None:
        console.print(f"supersedes: {stored.supersedes}")
    for conflict in stored.conflicts:
        console.print(
            f"possible conflict: {conflict.id} ({conflict.subject}: {conflict.was!r} →"
            f" {conflict.now!r}); to replace it: memories supersede {conflict.id} TEXT",
            markup=False,
        )


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
