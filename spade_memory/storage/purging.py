"""The background purge every store whose items expire runs: reads already hide what
expired, so a purge that fails (a full disk, a store out of service) waits for its next
turn instead of stopping."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from spade_memory.protocol.errors import MemoryServiceError
from spade_memory.storage.faults import store_errors

logger = logging.getLogger("spade_memory.storage")


async def purge_now_and_then(
    purge: Callable[[], Awaitable[object]], every: Callable[[], float], where: object
) -> None:
    """Call ``purge`` every ``every()`` seconds until cancelled; a failure is logged,
    naming ``where`` (the store's file)."""
    while True:
        await asyncio.sleep(every())
        try:
            await purge()
        except (MemoryServiceError, *store_errors()) as error:  # type: ignore[misc]
            logger.warning("%s: what expired is not purged yet (%s)", where, error)
