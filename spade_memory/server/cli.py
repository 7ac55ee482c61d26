"""The ``spade-memory`` command: its table of commands, and the one that runs.

``--version``, ``--help`` and a mistyped command are answered from the table alone
(the standard library and ``parser``), so they come at once. Only the command given is
built in full and run: its module (``run_command``, ``shell``, ``mcp_command``, …)
brings what it needs, and a shell verb never loads the services a ``run`` opens.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import import_module
from typing import Any, Protocol

from spade_memory.server.parser import Parser, unrecognized


class CommandModule(Protocol):
    """What the module of a command has: its flags, and how it runs."""

    def add_arguments(self, parser: argparse.ArgumentParser, name: str) -> None:
        """Add the flags (and verbs) of the command ``name`` to its parser."""

    def run(self, args: argparse.Namespace) -> int:
        """Run the parsed command; returns the exit status."""


@dataclass(frozen=True)
class Command:
    """One command of ``spade-memory``: what ``--help`` says of it, and where it lives."""

    help: str
    module: str
    """The module under ``spade_memory.server`` with its ``add_arguments`` and ``run``."""
    description: str | None = None


COMMANDS: dict[str, Command] = {
    "run": Command("run the memory agents (and an embedded XMPP server)", "run_command"),
    "demo": Command(
        "an LLM agent learns something, restarts, and recalls it (no network)", "demo_command"
    ),
    "schema": Command(
        "print the JSON Schema of every request and reply, or of one op's", "schema_command"
    ),
    "backup": Command(
        "a consistent copy of a data directory, while the service runs", "data_commands"
    ),
    "check": Command(
        "check every store of a data directory or a backup (a full check)", "data_commands"
    ),
    "restore": Command(
        "put a backup in place as the data directory of a stopped service", "data_commands"
    ),
    "reset-accounts": Command(
        "start the embedded XMPP server's accounts afresh (a lost account database);"
        " each is made again at its first login, by whoever logs in first",
        "data_commands",
    ),
    "accounts": Command(
        "list, set the password of, or delete the embedded XMPP server's accounts", "accounts"
    ),
    "import-base-memory": Command(
        "import spade_llm {agent}_base_memory.db files (again: nothing is doubled)",
        "data_commands",
    ),
    "import-interactions": Command(
        "import a spade_llm {agent}_interactions.json file (again: nothing is doubled)",
        "data_commands",
    ),
    "migrate": Command(
        "move a data directory's memories, notes, working memories and spaces into PostgreSQL",
        "data_commands",
    ),
    "memories": Command(
        "list, search, show, add, change, export or import an agent's memories", "shell"
    ),
    "spaces": Command("list, make and share the spaces an agent belongs to", "shell"),
    "forget": Command(
        "delete an agent's memories, notes, working memory, context files and beads"
        " memories, and the replies kept for its retries (asks first)",
        "shell",
    ),
    "mcp": Command(
        "serve the memory to MCP clients (desktop assistants, coding agents) as one XMPP"
        " account of the deployment",
        "mcp_command",
        description="An MCP server whose tools and resources are the memory agents', reached"
        " over XMPP as one account: stdio by default, streamable HTTP with --http.",
    ),
    "web": Command(
        "serve the web view of a running deployment: people log in with its XMPP accounts"
        " and browse, search and watch what those may read",
        "web_command",
        description="The web view of the memory, for a deployment already running"
        " (`spade-memory run --web` serves it beside the agents instead).",
    ),
}
"""Every command, in the order ``--help`` lists them."""


def module_of(name: str) -> CommandModule:
    """The module of the command ``name`` (imported now)."""
    module: CommandModule = import_module(f"spade_memory.server.{COMMANDS[name].module}")
    return module


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``spade-memory`` parser: every command by name and help, and ``command``
    (when it is one) with all of its flags. Raises nothing."""
    parser = Parser(
        prog="spade-memory",
        description="Shared memory for SPADE agents, kept by dedicated XMPP agents: run them,"
        " try the demo, look at and change an agent's memories and spaces, back up, check,"
        " restore, migrate, and print the protocol's schema.",
    )
    parser.add_argument("--version", action=_Version)
    commands = parser.add_subparsers(dest="command", required=True)
    for name, entry in COMMANDS.items():
        sub = commands.add_parser(name, help=entry.help, description=entry.description)
        if name == command:
            module_of(name).add_arguments(sub, name)
    return parser


class _Version(argparse.Action):
    """``--version``: the installed version, looked up only when asked for (reading the
    package's metadata takes longer than a shell verb's whole start)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **_: Any) -> None:
        super().__init__(
            option_strings, dest, nargs=0, default=argparse.SUPPRESS,
            help="show the version and exit",
        )  # fmt: skip

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        from spade_memory.protocol.version import package_version

        print(f"spade-memory {package_version()}")  # on stdout, as argparse's own
        parser.exit()


def chosen_command(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names: its first word that is not an option (no option of
    the command itself takes a value), if it is a command."""
    first = next((word for word in argv if not word.startswith("-")), None)
    return first if first in COMMANDS else None


def main(argv: Sequence[str] | None = None, imported: Callable[[], None] | None = None) -> int:
    """Run ``spade-memory`` with ``argv`` (default: the process's arguments), calling
    ``imported`` once the command's modules are loaded, before it runs; returns its exit
    status. Raises ``SystemExit`` for ``--help``, ``--version`` and a mistyped command
    or flag (status 2, one line), as argparse does."""
    words = list(sys.argv[1:] if argv is None else argv)
    command = chosen_command(words)
    parser = build_parser(command)
    if imported is not None:
        imported()
    args, left = parser.parse_known_args(words)
    if left:
        unrecognized(parser, args, left)
    from spade_memory.storage.private import private_umask

    private_umask()  # every file it writes holds memories or credentials
    return module_of(args.command).run(args)


if __name__ == "__main__":
    sys.exit(main())
