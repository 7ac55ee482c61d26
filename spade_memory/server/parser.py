"""The ``spade-memory`` argument parser's manners: a mistyped command or verb is told in
one line with the closest names (``did you mean 'list'?``), and help is plain text, not
the reStructuredText of docstrings."""

from __future__ import annotations

import argparse
import difflib
import re
from typing import NoReturn

INVALID_CHOICE = re.compile(
    r"(?:argument (?P<option>-[^:]*): )?invalid choice: '(?P<given>[^']*)'"
    r" \(choose from (?P<choices>.*)\)"
)


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` (its subparsers are of the same class) whose invalid choices
    suggest the close ones and whose help shows no ``double backticks``."""

    def error(self, message: str) -> NoReturn:
        """Exit with status 2 after one line on stderr for an unknown command, verb or
        choice; any other mistake as argparse says it (usage, then the message)."""
        wrong = INVALID_CHOICE.search(message)
        if wrong is None:
            super().error(message)
        given = wrong["given"]
        choices = re.findall(r"'([^']*)'", wrong["choices"])
        field = f"{wrong['option'].split('/')[-1]}: " if wrong["option"] else ""
        self.exit(2, f"{self.prog}: {field}{suggestion(given, choices)}\n")

    def format_help(self) -> str:
        """The help, with reStructuredText's literal markup taken out."""
        return plain(super().format_help())

    def format_usage(self) -> str:
        return plain(super().format_usage())


def suggestion(given: str, choices: list[str], every: str | None = None) -> str:
    """``unknown 'lst'; did you mean 'list'? (one of …)``: the names closest to ``given``
    first, then every name it could be, or ``every`` (where to find them) instead."""
    close = difflib.get_close_matches(given, choices, n=3, cutoff=0.6)
    if not close:  # a prefix: 'mem' for 'memories'
        close = [choice for choice in choices if choice.startswith(given)][:3] if given else []
    hint = f"; did you mean {' or '.join(repr(name) for name in close)}?" if close else ""
    return f"unknown {given!r}{hint} ({every or 'one of ' + ', '.join(choices)})"


def plain(text: str) -> str:
    """``text`` without reStructuredText's double backticks."""
    return text.replace("``", "")
