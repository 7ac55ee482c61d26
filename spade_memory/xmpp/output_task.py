"""slixmpp's outgoing-stanza task, ended and awaited after a disconnect.

slixmpp cancels that task when a stream closes but never awaits it, and asyncio then
reports it "destroyed but pending" when it is collected. The agents' stop and the
shell's bare connection both end it here (no SPADE import: the shell needs none).
"""

from __future__ import annotations

import asyncio
import contextlib

from slixmpp import ClientXMPP

ENDED_WITHIN = 1.0
"""Seconds the cancelled task may take to end."""


async def end_output_task(client: ClientXMPP | None) -> None:
    """Cancel ``client``'s outgoing-stanza task if it still runs, and wait (``ENDED_WITHIN``
    at most) until it has ended. Returns None; raises nothing."""
    task = getattr(client, "_run_out_filters", None)
    if task is None or task.done():
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, asyncio.TimeoutError):
        await asyncio.wait_for(task, ENDED_WITHIN)
