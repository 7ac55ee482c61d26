"""The `spade-memory` command's manners where no service is needed: one op's schema,
"did you mean" for a mistyped command or verb, help in plain text, and a backup into a
folder that exists refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spade_memory.server.parser import suggestion
from tests.support.command_line import Ran, in_process


def spade_memory(*args: str) -> Ran:
    """``spade-memory ARGS`` through its entry point in this process, 80 columns wide."""
    return in_process(*args, env={"COLUMNS": "80"})


def test_schema_of_one_op_is_its_request_and_reply() -> None:
    whole = spade_memory("schema")
    one = spade_memory("schema", "get_memory")
    assert one.returncode == 0, one.stderr
    schema = json.loads(one.stdout)
    assert schema["op"] == "get_memory" and list(schema["services"]) == ["base-memory"]
    request, reply = schema["services"]["base-memory"].values()
    assert request["properties"]["op"]["const"] == "get_memory"
    assert request["properties"]["count_access"] == {
        **request["properties"]["count_access"], "type": "boolean", "default": True,
    }  # fmt: skip
    assert "access_count" in reply["properties"]
    assert len(one.stdout) * 20 < len(whole.stdout)
    both = json.loads(spade_memory("schema", "store_memory").stdout)
    assert set(both["services"]) == {"base-memory", "beads-sync"}


def test_an_unknown_op_names_the_close_ones() -> None:
    result = spade_memory("schema", "store_memry")
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith(
        "spade-memory schema: unknown 'store_memry'; did you mean 'store_memory'"
    )
    assert len(result.stderr.splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("memorie",), "spade-memory: unknown 'memorie'; did you mean 'memories'?"),
        (("memories", "lst"), "spade-memory memories: unknown 'lst'; did you mean 'list'?"),
        (
            ("spaces", "grnt"),
            "spade-memory spaces: unknown 'grnt'; did you mean 'grant' or 'govern'?",
        ),
        (
            ("memories", "list", "--category", "facts"),
            "spade-memory memories list: --category: unknown 'facts'; did you mean 'fact'?"
            " (one of fact, pattern, preference, capability)",
        ),
        (  # an option the command does not have: its close ones (issue 79)
            ("run", "--prot", "47010"),
            "spade-memory run: unknown '--prot'; did you mean '--port' or '--s2s-port'?",
        ),
        (
            ("memories", "stats", "--jdi=a@localhost"),
            "spade-memory memories stats: unknown '--jdi'; did you mean '--jid'?",
        ),
    ],
)
def test_a_mistyped_verb_is_one_line_with_the_close_names(args: tuple[str, ...], said: str) -> None:
    result = spade_memory(*args)
    assert result.returncode == 2
    assert said in result.stderr and len(result.stderr.splitlines()) == 1, result.stderr


def test_suggestion_takes_a_prefix_and_says_nothing_it_cannot_guess() -> None:
    assert suggestion("mem", ["memories", "migrate"]) == (
        "unknown 'mem'; did you mean 'memories'? (one of memories, migrate)"
    )
    assert suggestion("zz", ["list", "show"]) == "unknown 'zz' (one of list, show)"


@pytest.mark.parametrize("args", [(), ("memories",), ("memories", "show"), ("spaces",)])
def test_help_is_plain_text(args: tuple[str, ...]) -> None:
    result = spade_memory(*args, "--help")
    assert result.returncode == 0
    assert "``" not in result.stdout and result.stdout.strip()


def test_a_backup_into_a_folder_that_exists_is_refused_in_one_line(tmp_path: Path) -> None:
    data, there = tmp_path / "data", tmp_path / "monday"
    data.mkdir()
    there.mkdir()
    result = spade_memory("backup", str(there), "--data-dir", str(data))
    assert result.returncode == 1
    assert result.stderr == (
        f"spade-memory: {there} already exists; back up into a new folder (or remove that"
        " one first)\n"
    )
    assert list(there.iterdir()) == []


@pytest.mark.parametrize(
    ("given", "said"),
    [
        (
            "a@b@c",
            "--jid 'a@b@c' is not an XMPP address (second @ found before parsing the"
            " resource): give name@domain, such as assistant@localhost",
        ),
        ("notajid", "--jid 'notajid' names no account: did you mean notajid@localhost?"),
    ],
)
def test_a_malformed_jid_is_one_line(
    given: str, said: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPADE_MEMORY_AGENT_PASSWORD", "secret")
    result = spade_memory("memories", "stats", "--jid", given, "--port", "1")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [f"spade-memory: {said}"], result.stderr
