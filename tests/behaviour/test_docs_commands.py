"""Every ``spade-memory`` command a page names exists, with every option it is given there,
and every option a page names in code belongs to some command: a page that outlived a
renamed command or flag fails here (the parser itself is read, no process started).

Pages: the README, CONTRIBUTING and ``docs/``. Read: inline code and the lines of shell
blocks. A word of a command line that is a placeholder (``VERB``, ``<service>``, ``…``)
is not checked, nor what follows an option (its value)."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from spade_memory.server.cli import COMMANDS, build_parser
from tests.support.paths import ROOT

PAGES = sorted([ROOT / "README.md", ROOT / "CONTRIBUTING.md", *(ROOT / "docs").rglob("*.md")])
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
SHELL = {"sh", "bash", "shell", "console", ""}
INLINE = re.compile(r"`([^`\n]+)`")
ENDS = {"|", "||", "&&", ";", ">", ">>", "2>", "2>&1", "&", "#", ")", "<"}
OPTION = re.compile(r"^--[a-z][a-z0-9-]*")
AFTER = {"&&", "||", ";", "|", "$", "--", "(", "exec", "time"}
"""Words after which a ``spade-memory`` is a command (else it names something, as in
``claude mcp add spade-memory -- spade-memory mcp``)."""
NOT_COMMANDS = ("spade-memory is ready", "spade-memory vector notices")
"""What pages show that begins with the name and is no command: the service's line once
ready, and the application name of its connection to PostgreSQL."""
ASSIGNMENT = re.compile(r"^\w+=\S*$")
OTHER_PROGRAMS = ("CONTRIBUTING.md", "docs/performance.md", "docs/internals/")
"""Pages whose options in code are other programs' (pytest's, the benchmarks', bd's)."""


def snippets(page: Path) -> Iterator[str]:
    """The inline code of ``page`` and each line of its shell blocks (continued lines
    joined)."""
    text = page.read_text()
    for language, body in FENCE.findall(text):
        if language in SHELL:
            yield from body.replace("\\\n", " ").splitlines()
    yield from INLINE.findall(FENCE.sub("", text))


def command_lines(page: Path) -> Iterator[list[str]]:
    """The words after each ``spade-memory`` of the page's code, up to the end of its
    command (a pipe, ``&&``, a redirection, a comment)."""
    for snippet in snippets(page):
        if snippet.strip().startswith(NOT_COMMANDS):
            continue
        for match in re.finditer(r"(?:^|[\s(`])spade-memory(?=\s|$)", snippet):
            before = snippet[: match.end() - len("spade-memory")].split()
            if not all(ASSIGNMENT.match(word) for word in before) and before[-1] not in AFTER:
                continue  # the name of something, not a command
            words = []
            for word in snippet[match.end() :].split():
                if word in ENDS or word.startswith("#"):
                    break
                words.append(word)
            yield words


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {option for action in parser._actions for option in action.option_strings}


def _placeholder(word: str) -> bool:
    return any(mark in word for mark in "<>{}[]…$") or word.isupper() or word == "..."


def problems(words: list[str]) -> Iterator[str]:
    """What is wrong with ``spade-memory WORDS``: a command or verb it does not have, an
    option the command (or verb) it follows does not take."""
    command = words[0] if words and words[0] in COMMANDS else None
    parser: argparse.ArgumentParser = build_parser(command)
    verbs = _subcommands(parser)
    for word in words:
        if _placeholder(word):
            return  # a placeholder: what follows it is not known
        if OPTION.match(word):
            option = word.split("=", 1)[0]
            if option not in _options(parser):
                yield f"{option} is no option of {parser.prog!r}"
            continue
        if word.startswith("-"):
            continue  # a short option, or a negative number
        if verbs:
            if word not in verbs:
                yield f"{word!r} is no command of {parser.prog!r}"
                return
            parser, verbs = verbs[word], _subcommands(verbs[word])
        # else: a positional argument or an option's value


def every_option() -> set[str]:
    """Every long option of every command and verb."""
    found: set[str] = set()
    for name in COMMANDS:
        waiting = [build_parser(name)]
        while waiting:
            parser = waiting.pop()
            found |= _options(parser)
            waiting += _subcommands(parser).values()
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_command_a_page_names_exists_with_its_options(page: Path) -> None:
    wrong = [f"spade-memory {' '.join(words)}: {problem}"
             for words in command_lines(page) for problem in problems(words)]  # fmt: skip
    assert wrong == [], "\n".join(wrong)


def test_every_option_named_in_code_belongs_to_a_command() -> None:
    known = every_option()
    named = {
        (str(page.relative_to(ROOT)), match.group(0), snippet.strip()[match.end() :][:1])
        for page in PAGES
        if not str(page.relative_to(ROOT)).startswith(OTHER_PROGRAMS)
        for snippet in INLINE.findall(FENCE.sub("", page.read_text()))
        if (match := OPTION.match(snippet.strip()))
    }
    unknown = sorted(
        f"{page}: {option}" for page, option, then in named
        if not (option in known or (then == "…" and any(o.startswith(option) for o in known)))
    )  # fmt: skip
    assert unknown == [], "\n".join(unknown)


def test_the_check_finds_a_wrong_command_verb_and_option(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "Run `spade-memory serve`, or `X=1 spade-memory run --prot 1 | tee log`.\n\n"
        "```sh\nspade-memory memories stats \\\n  --jd you@localhost\n```\n\n"
        "`claude mcp add spade-memory -- spade-memory mcp` and `spade-memory is ready`.\n"
    )
    assert sorted(" ".join(words) for words in command_lines(page)) == [
        "mcp", "memories stats --jd you@localhost", "run --prot 1", "serve"
    ]  # fmt: skip
    assert list(problems(["run", "--port", "47010", "--web", "47011"])) == []
    assert list(problems(["memories", "stats", "--jid", "you@localhost"])) == []
    assert list(problems(["serve"])) == ["'serve' is no command of 'spade-memory'"]
    assert list(problems(["memories", "serch", "x"])) == [
        "'serch' is no command of 'spade-memory memories'"
    ]
    assert list(problems(["run", "--prot", "47010"])) == [
        "--prot is no option of 'spade-memory run'"
    ]
    assert list(problems(["memories", "VERB", "--anything"])) == []
