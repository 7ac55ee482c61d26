"""How a shell command runs: log in as the agent it acts for, run the verb, log out, and
turn every failure a person can mend into one line on stderr (exit status 1).

The login is a bare slixmpp connection (``client.stanza_login``), not a SPADE agent: a
verb is one or two requests, and importing SPADE would take longer than they do."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from pydantic import ValidationError
from rich.console import Console

from spade_memory.client import stanza_login
from spade_memory.client.memory_client import MemoryClient, service_jids
from spade_memory.client.stanza_transport import StanzaTransport
from spade_memory.protocol.errors import MemoryServiceError, MemoryTimeout, PendingApproval
from spade_memory.server.shell.errors import ShellError, field_problem
from spade_memory.xmpp.connect_errors import (
    AgentStartError,
    ConnectionRefused,
    HostUnreachable,
    TlsFailure,
    UnknownHost,
    WrongDomain,
    WrongPassword,
)
from spade_memory.xmpp.envelope import bare

NAMED_FAILURES = (ConnectionRefused, HostUnreachable, TlsFailure, UnknownHost, WrongDomain)
"""Login failures whose sentence already says what to do."""

JID_ENV = "SPADE_MEMORY_JID"
PASSWORD_ENV = "SPADE_MEMORY_AGENT_PASSWORD"

Verb = Callable[[MemoryClient, argparse.Namespace, Console], Awaitable[int]]
"""One shell verb: runs on a logged-in client; returns the exit status."""


def run_verb(verb: Verb, args: argparse.Namespace) -> int:
    """Run ``verb`` logged in as ``args.jid``; returns 0, or 1 with one sentence on stderr."""
    console = Console()
    try:
        return asyncio.run(_logged_in_run(verb, args, console))
    except ShellError as error:
        _say(str(error))
    except ValidationError as error:
        _say(field_problem(error))
    except PendingApproval as waiting:  # filed as designed: not a failure
        _waiting(waiting, args)
        return 0
    except MemoryServiceError as error:
        _say(f"{error.condition.value}: {error.text}")
    except MemoryTimeout:
        _say(
            f"the memory service did not answer within {args.timeout:.0f}s;"
            " is `spade-memory run` running?"
        )
    except WrongPassword as error:
        _say(f"{error}; set {PASSWORD_ENV} to its password")
    except NAMED_FAILURES as error:  # each names its cause and the next step
        _say(str(error))
    except AgentStartError as error:
        _say(f"{error}; is `spade-memory run` running there (see --port)?")
    return 1


def _waiting(waiting: PendingApproval, args: argparse.Namespace) -> None:
    """A write kept as a proposal in a governed space: its id, and who decides it (on
    stdout, as an answer; JSON with ``--json``)."""
    if getattr(args, "json", False):
        print(json.dumps({"proposal": waiting.proposal, "state": "pending", "text": waiting.text}))
        return
    space = getattr(args, "space", None) or "SPACE"
    print(
        f"proposal {waiting.proposal} waits for an admin of {space!r} ({waiting.text});"
        f" an admin decides it with `spade-memory spaces approve {space} {waiting.proposal}`"
        " (or reject)"
    )


def _say(sentence: str) -> None:
    print(f"spade-memory: {sentence}", file=sys.stderr)


async def _logged_in_run(verb: Verb, args: argparse.Namespace, console: Console) -> int:
    async with logged_in(args) as client:
        return await verb(client, args, console)


def account(given: str) -> str:
    """``given`` as the JID an agent logs in with (``name@domain``, a resource kept);
    raises ``ShellError`` saying what is wrong, and what was likely meant."""
    from slixmpp.jid import JID, InvalidJID

    try:
        jid = JID(given)
    except InvalidJID as problem:
        raise ShellError(f"--jid {given!r} is not an XMPP address ({problem}):"
                         " give name@domain, such as assistant@localhost") from None  # fmt: skip
    if not jid.local:
        raise ShellError(f"--jid {given!r} names no account: did you mean {given}@localhost?")
    return str(jid)


@asynccontextmanager
async def logged_in(args: argparse.Namespace) -> AsyncIterator[MemoryClient]:
    """The client of an agent logged in as ``args.jid`` (its password from the
    environment), stopped on the way out; raises ``ShellError`` when either is missing."""
    if not args.jid:
        raise ShellError(f"say which agent to act as: --jid name@domain, or set {JID_ENV}")
    args.jid = account(args.jid)
    password = os.environ.get(PASSWORD_ENV)
    if not password:
        raise ShellError(f"set {PASSWORD_ENV} to the password of {args.jid}")
    connection = await stanza_login.connect(
        args.jid, password, port=args.port, timeout=args.timeout
    )
    try:
        domain = bare(args.jid).partition("@")[2]
        transport = StanzaTransport(connection, service_jids(domain), timeout=args.timeout)
        yield MemoryClient(transport=transport)
    finally:
        await stanza_login.disconnect(connection)
