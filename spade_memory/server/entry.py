"""The ``spade-memory`` command's first frame: a Ctrl-C is one line, whenever it comes.

Importing the command's modules (SPADE, slixmpp, the stores, pydantic's models) takes
a second or two, and Python answers a Ctrl-C there with a traceback of the import
machinery. This module imports nothing of the package until it can catch the
interrupt; ``import spade_memory`` itself loads nothing (its names are lazy).
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Sequence
from typing import NoReturn

INTERRUPTED = 130
"""The exit status of a program ended by SIGINT, as shells report it."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns its exit status (``INTERRUPTED`` on a Ctrl-C that the
    command did not answer itself, with one line on stderr). Raises nothing."""
    try:
        from spade_memory.server.cli import main as command

        return command(argv)
    except KeyboardInterrupt:
        print("spade-memory: interrupted", file=sys.stderr)
        return INTERRUPTED


def run() -> NoReturn:
    """The process's entry (the ``spade-memory`` script, ``python -m spade_memory``):
    exits with ``main``'s status.

    What the command imported lives until the process ends, and Python's last garbage
    collection at exit would walk all of it (pydantic's models, slixmpp): a tenth of a
    second of a shell verb's half second. Frozen, those objects are left to the end."""
    status = main()
    gc.freeze()
    sys.exit(status)
