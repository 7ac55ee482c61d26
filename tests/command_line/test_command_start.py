"""The ``spade-memory`` command starts at once: ``--version``, ``--help`` and a mistyped
command are answered from its table of commands, loading nothing of SPADE, slixmpp,
pyjabber, pydantic or a service. Run in a fresh interpreter, since this test session has
loaded everything."""

from __future__ import annotations

import pytest

from spade_memory.server.shell.commands import MEMORY_VERBS, SPACE_VERBS
from tests.support.command_line import loaded_by

HEAVY = ("spade", "slixmpp", "pyjabber", "pydantic", "rich", "sqlite3", "aiohttp", "mcp")
"""What the first answer of the command never needs."""


def answered(argv: list[str]) -> str:
    """A statement that runs the command with ``argv`` and keeps it from exiting."""
    return (
        "import contextlib, io\n"
        "from spade_memory.server.cli import main\n"
        "quiet = io.StringIO()\n"
        "with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):\n"
        "    try:\n"
        f"        main({argv!r})\n"
        "    except SystemExit:\n"
        "        pass"
    )


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["memries"], []])
def test_the_first_answer_loads_no_service(argv: list[str]) -> None:
    loaded = loaded_by(answered(argv))
    assert [m for m in loaded if m.split(".")[0] in HEAVY] == []
    version = ["spade_memory.protocol", "spade_memory.protocol.version"]
    looked_up = version if argv == ["--version"] else []  # the metadata, for --version alone
    assert [m for m in loaded if m.startswith("spade_memory.")] == [
        *looked_up,
        "spade_memory.server",
        "spade_memory.server.cli",
        "spade_memory.server.parser",
    ]


def test_the_check_sees_a_command_built_in_full() -> None:
    """The test above would notice a command's module loaded for the table: the shell's
    help, built in full, loads the client and pydantic."""
    loaded = loaded_by(answered(["memories", "--help"]))
    assert "spade_memory.server.shell.commands" in loaded
    assert "pydantic" in loaded


def test_the_shells_parser_loads_no_verb() -> None:
    """Every shell command builds the whole parser; the verb that runs is loaded alone
    (``memories stats`` loads ``memories``, not ``facts``, ``graph`` or ``transfer``)."""
    loaded = set(loaded_by(answered(["memories", "--help"])))
    verbs = {
        f"spade_memory.server.shell.{target.split('.')[0]}"
        for target in (*MEMORY_VERBS.values(), *SPACE_VERBS.values())
    }
    assert sorted(verbs & loaded) == []
