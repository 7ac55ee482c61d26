"""The ``spade-memory`` argument parser's manners: a mistyped command, verb or option is
told in one line with the closest names (``did you mean 'list'?``, ``did you mean
'--port'?``), and help is plain text, not the reStructuredText of docstrings."""

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


def unrecognized(
    parser: argparse.ArgumentParser, args: argparse.Namespace, left: list[str]
) -> NoReturn:
    """Exit with status 2 for the words ``parse_known_args`` left over: an unknown option
    in one line naming the closest options of the command (or verb) it was given to, as
    ``spade-memory run: unknown '--prot'; did you mean '--port'? (…)``; anything else as
    argparse says it."""
    where = _chosen(parser, args)
    given = next((word.split("=", 1)[0] for word in left if word.startswith("--")), None)
    if given is None:
        parser.error(f"unrecognized arguments: {' '.join(left)}")
    options = [o for action in where._actions for o in action.option_strings if o[:2] == "--"]
    every = f"'{where.prog} --help' lists them"
    where.exit(2, f"{where.prog}: {suggestion(given, options, every)}\n")


def _chosen(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The deepest command or verb parser ``args`` went through."""
    while True:
        commands = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        name = getattr(args, commands[0].dest, None) if commands else None
        if not commands or name not in commands[0].choices:
            return parser
        parser = commands[0].choices[name]


def plain(text: str) -> str:
    """``text`` without reStructuredText's double backticks."""
    return text.replace("``", "")
