"""``spade-memory memories …`` and ``spade-memory forget``: one agent's data from the shell.

Each command logs in as that agent (``--jid`` or ``$SPADE_MEMORY_JID``, its password
from ``$SPADE_MEMORY_AGENT_PASSWORD``) and goes through the running service like any
peer, so the owner is who XMPP says it is and every rule of the service applies (spaces,
limits, the beads mirror and change notices hear of every change). Tables in a
terminal, JSON with ``--json``; export and import are JSON lines, one memory each.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import AbstractContextManager, asynccontextmanager, nullcontext
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from spade_memory.client.login import log_in
from spade_memory.client.memories import FetchedMemories
from spade_memory.client.memory_client import MemoryClient
from spade_memory.protocol.beads import BeadsForgotten, ForgetBeadsMemories
from spade_memory.protocol.errors import MemoryServiceError, MemoryTimeout
from spade_memory.protocol.interaction_forget import ForgetInteractions
from spade_memory.protocol.memories import (
    DeleteMemory,
    ForgetAllMemories,
    Memory,
    RecentMemories,
    Stored,
    StoreMemory,
)
from spade_memory.protocol.ops import Op, Record
from spade_memory.xmpp.lifecycle import AgentStartError, WrongPassword, stop_agent

JID_ENV = "SPADE_MEMORY_JID"
PASSWORD_ENV = "SPADE_MEMORY_AGENT_PASSWORD"
PAGE = 1000
"""Memories per request when a command reads them all (the service's default
``max_results``)."""
BATCH = 100
"""Ops per message when a command writes many (the service's default ``max_batch_ops``)."""
CATEGORIES = ("fact", "pattern", "preference", "capability")


class ShellError(Exception):
    """A mistake a person can mend: printed as one sentence, exit status 1."""


def add_commands(commands: Any) -> None:
    """Add ``memories`` (with its verbs) and ``forget`` to the ``spade-memory`` parser."""
    memories = commands.add_parser(
        "memories", help="list, search, show, change, export or import an agent's memories"
    )
    verbs = memories.add_subparsers(dest="verb", required=True)
    listing = _verb(verbs, "list", "memories, most recently used first, a page at a time")
    listing.add_argument("--category", choices=CATEGORIES)
    listing.add_argument("--limit", type=int, default=20, help="memories per page (20)")
    listing.add_argument("--offset", type=int, default=0, help="memories to skip (0)")
    listing.add_argument("--space", help="a shared space (default: the agent's own)")
    search = _verb(verbs, "search", "ranked search")
    search.add_argument("query")
    search.add_argument("--limit", type=int, default=10)
    search.add_argument("--category", choices=CATEGORIES)
    search.add_argument("--space")
    show = _verb(verbs, "show", "one memory in full")
    show.add_argument("id")
    show.add_argument("--space")
    update = _verb(verbs, "update", "change a memory's content, category, context or confidence")
    update.add_argument("id")
    update.add_argument("--content")
    update.add_argument("--category", choices=CATEGORIES)
    update.add_argument("--context")
    update.add_argument("--confidence", type=float)
    update.add_argument("--space")
    delete = _verb(verbs, "delete", "forget one memory")
    delete.add_argument("id")
    delete.add_argument("--space")
    _verb(verbs, "stats", "how many memories, by category")
    export = _verb(verbs, "export", "every memory of the agent's own space, as JSON lines")
    export.add_argument("file", nargs="?", default="-", help="default: standard output")
    load = _verb(verbs, "import", "store the memories of a JSON lines file (as export wrote)")
    load.add_argument("file", help="a file, or - for standard input")
    forget = commands.add_parser(
        "forget",
        help="delete an agent's memories, notes, working memory, context files and beads"
        " memories, and the replies kept for its retries (asks first)",
    )
    _connection(forget)
    forget.add_argument("--yes", action="store_true", help="do not ask")


def _verb(verbs: Any, name: str, help_text: str) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = verbs.add_parser(name, help=help_text)
    _connection(parser)
    return parser


def _connection(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--jid", default=os.environ.get(JID_ENV), help=f"act as this agent (default: ${JID_ENV})"
    )
    parser.add_argument("--port", type=int, default=5222, help="XMPP client port (5222)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per request (10)")


def run_shell(args: argparse.Namespace) -> int:
    """Run a ``memories`` verb or ``forget``; 0, or 1 with one sentence on stderr."""
    console = Console()
    try:
        return asyncio.run(_run(args, console))
    except ShellError as error:
        print(f"spade-memory: {error}", file=sys.stderr)
    except MemoryServiceError as error:
        print(f"spade-memory: {error.condition.value}: {error.text}", file=sys.stderr)
    except MemoryTimeout:
        print(
            f"spade-memory: the memory service did not answer within {args.timeout:.0f}s;"
            " is `spade-memory run` running?",
            file=sys.stderr,
        )
    except WrongPassword as error:
        print(f"spade-memory: {error}; set {PASSWORD_ENV} to its password", file=sys.stderr)
    except AgentStartError as error:
        print(
            f"spade-memory: {error}; is `spade-memory run` running there (see --port)?",
            file=sys.stderr,
        )
    return 1


async def _run(args: argparse.Namespace, console: Console) -> int:
    async with _logged_in(args) as client:
        if args.command == "forget":
            return await _forget(client, args, console)
        verb: Callable[[MemoryClient, argparse.Namespace, Console], Awaitable[int]] = VERBS[
            args.verb
        ]
        return await verb(client, args, console)


@asynccontextmanager
async def _logged_in(args: argparse.Namespace) -> AsyncIterator[MemoryClient]:
    if not args.jid:
        raise ShellError(f"say which agent to act as: --jid name@domain, or set {JID_ENV}")
    password = os.environ.get(PASSWORD_ENV)
    if not password:
        raise ShellError(f"set {PASSWORD_ENV} to the password of {args.jid}")
    agent = await log_in(args.jid, password, port=args.port, timeout=args.timeout)
    try:
        yield agent.memory
    finally:
        await stop_agent(agent)


async def _list(client: MemoryClient, args: argparse.Namespace, console: Console) -> int:
    if args.category:
        page = await client.get_memories_by_category(
            args.category, args.limit, offset=args.offset, space=args.space
        )
    else:
        page = await client.get_recent_memories(args.limit, offset=args.offset, space=args.space)
    if args.json:
        _print_json({"memories": _dumped(page), "next_offset": page.next_offset})
        return 0
    _table(console, page)
    if page.next_offset is not None:
        console.print(f"more: --offset {page.next_offset}")
    return 0


async def _search(client: MemoryClient, args: argparse.Namespace, console: Console) -> int:
    found = await client.search_memories(
        args.query, args.limit, category=args.category, space=args.space
    )
    if args.json:
        _print_json({"memories": _dumped(found)})
    else:
        _table(console, found)
    return 0


async def _show(client: MemoryClient, args: argparse.Namespace, console: Console) -> int:
    memory = await client.get_memory(args.id, space=args.space)
    assert memory is not None  # a timeout raises: the client is not degraded
    _one(console, memory, args.json)
    return 0


async def _update(client: MemoryClient, args: argparse.Namespace, console: Console) -> int:
    changes = {
        name: getattr(args, name)
        for name in ("content", "category", "context", "confidence")
        if getattr(args, name) is not None
    }
    if not changes:
        raise ShellError("say what to change: --content, --category, --context or --confidence")
    memory = await client.update_memory(args.id, **changes, space=args.space)
    assert memory is not None  # a timeout raises: the client is not degraded
    _one(console, memory, args.json)
    return 0


async def _delete(client: MemoryClient, args: argparse.Namespace, console: Console) -> int:
    await client.request(client.base_memory_jid, DeleteMemory(id=args.id, space=args.space))
    if args.json:
        _print_json({"id": args.id, "deleted": True})
    else:
        console.print(f"deleted {args.id}")
    return 0


async def _stats(client: MemoryClient, args: argparse.Namespace, console: Console) -> int:
    stats = await client.get_memory_stats()
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


async def _export(client: MemoryClient, args: argparse.Namespace, console: Console) -> int:
    count = 0
    with _opened(args.file, "w") as out:
        async for memory in every_memory(client):
            out.write(memory.model_dump_json() + "\n")
            count += 1
    if args.file != "-":
        _said(console, args.json, {"exported": count, "file": args.file})
    return 0


async def _import(client: MemoryClient, args: argparse.Namespace, console: Console) -> int:
    with _opened(args.file, "r") as source:
        ops = list(_stores_in(source, args.file))
    stored = await _in_batches(client, ops)
    already = sum(isinstance(result, Stored) and result.deduplicated for result in stored)
    _said(console, args.json, {"imported": len(stored) - already, "already_there": already})
    return 0


async def _forget(client: MemoryClient, args: argparse.Namespace, console: Console) -> int:
    """Count everything of the agent at each memory agent, ask, then forget it there: the
    base memory first (its mirror then hears of each memory as forgotten), the beads sync
    agent it names as its mirror, the interaction memory agent."""
    counted = await _forgetting(client, dry_run=True)
    what = (
        f"{counted['memories']} memories, {counted['notes']} notes of"
        f" {counted['conversations']} conversations, {counted['sessions']} working-memory"
        f" sessions, {counted['files']} context files, {counted['beads_issues']} beads"
        f" issues and {counted['replies']} replies kept for retries"
    )
    if not args.yes:
        if not sys.stdin.isatty():
            raise ShellError(f"forget would delete {what} of {args.jid}; add --yes to do it")
        answer = console.input(f"delete {what} of {args.jid}? Type the JID to confirm: ")
        if answer.strip() != args.jid:
            console.print("nothing deleted")
            return 1
    _said(console, args.json, await _forgetting(client, dry_run=False))
    return 0


async def _forgetting(client: MemoryClient, *, dry_run: bool) -> dict[str, int]:
    """What each memory agent forgot of the sender (a dry run: would forget), summed up."""
    memories = await client.request(client.base_memory_jid, ForgetAllMemories(dry_run=dry_run))
    assert memories is not None  # a timeout raises: the client is not degraded
    beads = BeadsForgotten(issues=0)
    if memories.mirror is not None:
        mirrored = await client.request(memories.mirror, ForgetBeadsMemories(dry_run=dry_run))
        assert mirrored is not None
        beads = mirrored
    notes = await client.request(client.interaction_memory_jid, ForgetInteractions(dry_run=dry_run))
    assert notes is not None
    return {
        "memories": memories.memories,
        **notes.model_dump(include={"notes", "conversations", "sessions", "files"}),
        "beads_issues": beads.issues,
        "replies": memories.replies + beads.replies + notes.replies,
    }


async def _in_batches(client: MemoryClient, ops: Sequence[Op[Any]]) -> list[Record]:
    """The results of ``ops`` at the base memory agent, sent ``BATCH`` to a message.

    Raises the first failure.
    """
    results: list[Record] = []
    for start in range(0, len(ops), BATCH):
        for outcome in await client.batch(client.base_memory_jid, ops[start : start + BATCH]):
            if isinstance(outcome, MemoryServiceError):
                raise outcome
            results.append(outcome)
    return results


async def every_memory(client: MemoryClient) -> AsyncIterator[Memory]:
    """Every memory of the client's own space, a page of ``PAGE`` at a time."""
    offset: int | None = 0
    while offset is not None:
        page = await client.request(
            client.base_memory_jid, RecentMemories(limit=PAGE, offset=offset)
        )
        assert page is not None
        for memory in page.memories:
            yield memory
        offset = page.next_offset


def _stores_in(source: IO[str], name: str) -> Iterator[StoreMemory]:
    """A ``store_memory`` op for each line of an export (blank lines skipped)."""
    kept = ("category", "content", "context", "confidence", "tags", "metadata", "source",
            "expires_at")  # fmt: skip
    for number, line in enumerate(source, 1):
        if not line.strip():
            continue
        try:
            fields = json.loads(line)
            chosen = {key: fields[key] for key in kept if fields.get(key) is not None}
            yield StoreMemory.model_validate_json(json.dumps(chosen))
        except (ValueError, TypeError, ValidationError) as error:
            text = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise ShellError(f"{name}, line {number}: not a memory ({text})") from None


VERBS: dict[str, Callable[[MemoryClient, argparse.Namespace, Console], Awaitable[int]]] = {
    "list": _list,
    "search": _search,
    "show": _show,
    "update": _update,
    "delete": _delete,
    "stats": _stats,
    "export": _export,
    "import": _import,
}


def _opened(name: str, mode: str) -> AbstractContextManager[IO[str]]:
    """A file, or standard input/output for ``-``; a file that cannot be opened is a
    ``ShellError``."""
    if name == "-":
        return nullcontext(sys.stdout if mode == "w" else sys.stdin)
    try:
        return Path(name).open(mode, encoding="utf-8")
    except OSError as error:
        raise ShellError(f"cannot open {name}: {error.strerror or error}") from None


def _dumped(memories: FetchedMemories) -> list[dict[str, Any]]:
    return [memory.model_dump(mode="json") for memory in memories]


def _print_json(value: object) -> None:
    print(json.dumps(value, ensure_ascii=False))


def _said(console: Console, as_json: bool, counts: dict[str, Any]) -> None:
    if as_json:
        _print_json(counts)
    else:
        console.print(
            ", ".join(f"{key.replace('_', ' ')}: {value}" for key, value in counts.items())
        )


def _table(console: Console, memories: FetchedMemories) -> None:
    table = Table("category", "content", "confidence", "last used", "uses")
    table.add_column("id", no_wrap=True, min_width=36)  # whole: it is what show takes
    table.columns.insert(0, table.columns.pop())
    for memory in memories:
        table.add_row(
            memory.id,
            memory.category,
            memory.content,
            f"{memory.confidence:.2f}",
            memory.last_accessed.strftime("%Y-%m-%d %H:%M"),
            str(memory.access_count),
        )
    console.print(table if memories else "no memories")


def _one(console: Console, memory: Memory, as_json: bool) -> None:
    if as_json:
        print(memory.model_dump_json())
        return
    table = Table(show_header=False, box=None)
    for name, value in memory.model_dump(mode="json").items():
        table.add_row(name, "-" if value is None else str(value))
    console.print(table)
