"""`spade-memory run` with the spaces' access check switched off: every sender is the
owner of every space that exists. Only ``test_space_identity`` starts it, to show that
its matrix notices a missing check."""

from __future__ import annotations

import sys

from spade_memory.protocol.errors import ItemNotFound
from spade_memory.server.cli import main
from spade_memory.spaces import gate as access
from spade_memory.spaces.directory import Space


async def everyone_owns(self: access.Gate, sender: str, name: str) -> tuple[Space, str]:
    space = None if self.directory is None else await self.directory.find(name)
    if space is None:
        raise ItemNotFound(f"no space {name!r}")
    return space, "owner"


if __name__ == "__main__":
    access.Gate.membership = everyone_owns  # type: ignore[method-assign]
    sys.exit(main(["run", *sys.argv[1:]]))
