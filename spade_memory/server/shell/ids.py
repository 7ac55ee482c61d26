"""Short ids: what a table shows of a memory's id, and the full id a short one names.

A memory's id is a UUIDv7: its first twelve hex digits are the time it was made, shared
by every memory stored in the same millisecond (an import stores a hundred at once), and
its last ones are random. So a table shows the END of each id, eight characters or more
until each is unique among those listed, and ``show``, ``update`` and ``delete`` take any
unique start or end of an id (or the whole of it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from spade_memory.client.memory_client import MemoryClient
from spade_memory.server.shell.errors import ShellError
from spade_memory.server.shell.reading import every_memory

SHORT = 8
"""Characters a short id has at least."""
FULL = 36
"""A UUID's length: an id this long is taken as it is, with no look-up."""


def short_ids(ids: Sequence[str]) -> dict[str, str]:
    """Returns each id → its shortest end of at least ``SHORT`` characters that no other
    of ``ids`` ends with."""
    for length in range(SHORT, max((len(i) for i in ids), default=SHORT) + 1):
        ends = [i[-length:] for i in ids]
        if len(set(ends)) == len(set(ids)):
            return dict(zip(ids, ends, strict=True))
    return {i: i for i in ids}


@dataclass(frozen=True)
class Named:
    """The memory a short id names: its full id and the space it is in (None: the
    sender's own, or the space the command was given)."""

    id: str
    space: str | None


async def resolve(client: MemoryClient, given: str, space: str | None) -> Named:
    """Returns the memory of ``space`` (``*``: any the sender reads) whose id is
    ``given``, or starts or ends with it; raises ``ShellError`` when none or several do."""
    if len(given) >= FULL and space != "*":
        return Named(given, space)
    matches: list[Named] = []
    async for memory in every_memory(client, space):
        if memory.id == given:
            return Named(memory.id, _space_of(memory.space, space))
        if memory.id.startswith(given) or memory.id.endswith(given):
            matches.append(Named(memory.id, _space_of(memory.space, space)))
    if len(matches) == 1:
        return matches[0]
    if not matches:
        if len(given) >= FULL:
            return Named(given, None)
        where = "your memories" if space is None else f"space {space}"
        raise ShellError(f"no memory of {where} has an id starting or ending with {given!r}")
    shown = ", ".join(match.id for match in matches[:5])
    more = f" and {len(matches) - 5} more" if len(matches) > 5 else ""
    raise ShellError(
        f"{given!r} names {len(matches)} memories ({shown}{more}); give more of the id"
    )


def _space_of(listed: str, asked: str | None) -> str | None:
    """The space to name in the op: the memory's own when the command looked in ``*``."""
    return listed if asked == "*" else asked
