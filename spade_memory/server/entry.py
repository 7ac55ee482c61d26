"""The ``spade-memory`` command's first frame: a Ctrl-C is one line, whenever it comes.

Importing the command's modules (SPADE, slixmpp, the stores, pydantic's models) takes
a second or two, and Python answers a Ctrl-C there with a traceback of the import
machinery. This module imports nothing of the package until it can catch the
interrupt; ``import spade_memory`` itself loads nothing (its names are lazy).
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

INTERRUPTED = 130
"""The exit status of a program ended by SIGINT, as shells report it."""


def main(argv: Sequence[str] | None = None, imported: Callable[[], None] | None = None) -> int:
    """Run the command (``imported`` is called once its modules are loaded); returns its
    exit status (``INTERRUPTED`` on a Ctrl-C that the command did not answer itself,
    with one line on stderr). Raises nothing."""
    try:
        from spade_memory.server.cli import main as command

        return command(argv, imported)
    except KeyboardInterrupt:
        print("spade-memory: interrupted", file=sys.stderr)
        return INTERRUPTED


def run() -> NoReturn:
    """The process's entry (the ``spade-memory`` script, ``python -m spade_memory``):
    exits with ``main``'s status.

    The command's imports make objects by the hundred thousand (pydantic's models,
    slixmpp, SPADE) and free next to none, so the collector is off while they run, and
    what they made is frozen: no collection walks it again, the last one at exit
    included. A shell verb starts a fifth faster, ``run`` a tenth."""
    gc.disable()
    status = main(imported=_freeze)
    gc.freeze()  # what the command made since: the process ends now
    sys.exit(status)


def _freeze() -> None:
    gc.freeze()
    gc.enable()
