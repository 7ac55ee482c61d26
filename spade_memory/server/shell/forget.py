"""``spade-memory forget`` (and ``memories forget``): everything of one agent at every
memory agent, counted first and confirmed."""

from __future__ import annotations

import argparse
import sys

from rich.console import Console

from spade_memory.client.memory_client import MemoryClient
from spade_memory.protocol.beads import BeadsForgotten, ForgetBeadsMemories
from spade_memory.protocol.interaction_forget import ForgetInteractions
from spade_memory.protocol.memories import ForgetAllMemories
from spade_memory.server.shell.errors import ShellError
from spade_memory.server.shell.views import said


async def forget_verb(client: MemoryClient, args: argparse.Namespace, console: Console) -> int:
    """Count everything of the agent at each memory agent, ask, then forget it there: the
    base memory first (its mirror then hears of each memory as forgotten), the beads sync
    agent it names as its mirror, the interaction memory agent."""
    counted = await forgetting(client, dry_run=True)
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
    said(console, args.json, await forgetting(client, dry_run=False))
    return 0


async def forgetting(client: MemoryClient, *, dry_run: bool) -> dict[str, int]:
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
