"""Errors the event loop reports on its own, in one line each.

asyncio (and uvloop) hand an exception no task awaits to the loop's exception handler,
whose default prints the whole traceback: the embedded XMPP server (pyjabber) raises a
bare ``Exception`` from its parser when a client sends a stream it does not expect,
which then fills the service console with "Fatal error on SSL protocol" tracebacks
while clients come and go. One line says what and where; ``--debug`` keeps the
default handler and its tracebacks.
"""

from __future__ import annotations

import asyncio
import logging
import traceback
from pathlib import Path
from typing import Any

logger = logging.getLogger("spade_memory.runtime")


def one_line(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """An exception handler for ``loop.set_exception_handler``: logs a warning of one
    line, naming the exception and the function that raised it."""
    message = context.get("message") or "error in the event loop"
    error = context.get("exception")
    if not isinstance(error, BaseException):
        logger.warning("%s", message)
        return
    what = type(error).__name__ + (f": {error}" if str(error) else "")
    frames = traceback.extract_tb(error.__traceback__)
    where = f" in {Path(frames[-1].filename).name}, {frames[-1].name}" if frames else ""
    logger.warning("%s (%s%s); --debug shows the traceback", message, what, where)
