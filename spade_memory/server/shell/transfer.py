"""``memories export`` and ``memories import``: every memory of the agent's own space as
JSON lines, one memory each, and back. A line that is not a memory is refused with its
number, the field and what it may be, before anything is stored."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError
from rich.console import Console

from spade_memory.client.memory_client import MemoryClient
from spade_memory.protocol.errors import MemoryServiceError
from spade_memory.protocol.memories import Stored, StoreMemory
from spade_memory.protocol.ops import Op, Record
from spade_memory.server.progress import counting
from spade_memory.server.shell.errors import ShellError, field_problem
from spade_memory.server.shell.reading import every_memory
from spade_memory.server.shell.views import said

BATCH = 100
"""Ops per message when a command writes many (the service's default ``max_batch_ops``)."""
KEPT = ("category", "content", "context", "confidence", "tags", "metadata", "source",
        "expires_at")  # fmt: skip
"""The fields of an exported memory that an import stores again."""


async def export_verb(client: MemoryClient, args: argparse.Namespace, console: Console) -> int:
    """Write every memory of the agent's own space to a file (or standard output)."""
    count = 0
    with (
        opened(args.file, "w") as out,
        counting(Console(stderr=True), f"exporting to {Path(args.file).name}", None) as advance,
    ):
        async for memory in every_memory(client):
            out.write(memory.model_dump_json() + "\n")
            count += 1
            advance(1)
    if args.file != "-":
        said(console, args.json, {"exported": count, "file": args.file})
    return 0


async def import_verb(client: MemoryClient, args: argparse.Namespace, console: Console) -> int:
    """Store the memories of a JSON lines file; says how many were new."""
    with opened(args.file, "r") as source:
        ops = list(stores_in(source, args.file))
    with counting(Console(stderr=True), f"importing {Path(args.file).name}", len(ops)) as advance:
        stored = await _in_batches(client, ops, advance)
    already = sum(isinstance(result, Stored) and result.deduplicated for result in stored)
    said(console, args.json, {"imported": len(stored) - already, "already_there": already})
    return 0


def stores_in(source: IO[str], name: str) -> Iterator[StoreMemory]:
    """A ``store_memory`` op for each line of an export (blank lines skipped); raises
    ``ShellError`` naming the line and what is wrong with it."""
    for number, line in enumerate(source, 1):
        if not line.strip():
            continue
        try:
            fields = json.loads(line)
        except ValueError as error:
            raise ShellError(f"{name}, line {number}: not JSON ({error})") from None
        if not isinstance(fields, dict):
            raise ShellError(f"{name}, line {number}: not a memory (a JSON object)")
        chosen = {key: fields[key] for key in KEPT if fields.get(key) is not None}
        try:
            yield StoreMemory.model_validate_json(json.dumps(chosen))
        except ValidationError as error:
            raise ShellError(f"{name}, line {number}: {field_problem(error)}") from None


async def _in_batches(
    client: MemoryClient, ops: Sequence[Op[Any]], advance: Callable[[int], None]
) -> list[Record]:
    """The results of ``ops`` at the base memory agent, sent ``BATCH`` to a message
    (``advance`` is told of each batch done).

    Raises the first failure.
    """
    results: list[Record] = []
    for start in range(0, len(ops), BATCH):
        for outcome in await client.batch(client.base_memory_jid, ops[start : start + BATCH]):
            if isinstance(outcome, MemoryServiceError):
                raise outcome
            results.append(outcome)
        advance(len(ops[start : start + BATCH]))
    return results


def opened(name: str, mode: str) -> AbstractContextManager[IO[str]]:
    """A file, or standard input/output for ``-``; a file that cannot be opened is a
    ``ShellError``."""
    if name == "-":
        return nullcontext(sys.stdout if mode == "w" else sys.stdin)
    try:
        return Path(name).open(mode, encoding="utf-8")
    except OSError as error:
        raise ShellError(f"cannot open {name}: {error.strerror or error}") from None
