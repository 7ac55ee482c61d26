"""``spade-memory mcp``: the MCP server over the memory agents (``spade_memory.mcp_bridge``),
on stdio or streamable HTTP, and ``--check`` of its login.

The account's password comes from ``$SPADE_MEMORY_AGENT_PASSWORD`` or ``--password-file``
(never a flag, which ``ps`` shows); the HTTP bearer token from ``$SPADE_MEMORY_MCP_TOKEN``
or ``--token-file``. Every mistake a person can mend is one line on stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import logging
import os
import sys
from pathlib import Path

from spade_memory.http.address import HttpAddress, http_address
from spade_memory.mcp_bridge.link import Account, MemoryLink
from spade_memory.protocol.errors import MemoryServiceError
from spade_memory.protocol.memories import MemoryStatsOp
from spade_memory.protocol.notes import GetAllConversations
from spade_memory.protocol.services import BASE_MEMORY, INTERACTION_MEMORY
from spade_memory.server.secrets_given import Refused, secret
from spade_memory.server.shell.session import JID_ENV, PASSWORD_ENV
from spade_memory.tools import EVERY_TOOL_SPEC

TOKEN_ENV = "SPADE_MEMORY_MCP_TOKEN"
MCP_EXTRA = "spade-memory[mcp]"
"""What to install for the MCP server."""


def add_arguments(mcp: argparse.ArgumentParser, name: str = "mcp") -> None:
    """Add ``mcp``'s flags."""
    mcp.add_argument(
        "--jid", default=os.environ.get(JID_ENV),
        help=f"the XMPP account it acts as (default: ${JID_ENV})",
    )  # fmt: skip
    mcp.add_argument(
        "--password-file", type=Path, metavar="FILE",
        help=f"read the account's password from FILE (default: ${PASSWORD_ENV})",
    )  # fmt: skip
    mcp.add_argument("--port", type=int, default=5222, help="XMPP client port (5222)")
    mcp.add_argument(
        "--timeout", type=float, default=5.0,
        help="seconds to wait for a memory agent's reply, sent twice (5)",
    )  # fmt: skip
    mcp.add_argument(
        "--http", metavar="[HOST:]PORT",
        help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio (HOST:"
        f" 127.0.0.1; any but 127.0.0.1 and ::1 needs a bearer token: ${TOKEN_ENV} or"
        " --token-file)",
    )  # fmt: skip
    mcp.add_argument(
        "--allowed-host", action="append", default=[], metavar="NAME[:PORT]",
        help="with --http, a name clients reach it by (the Host they send), besides its"
        " address; once per name (required with 0.0.0.0 or ::)",
    )  # fmt: skip
    mcp.add_argument(
        "--max-sessions", type=_positive, default=32, metavar="N",
        help="with --http, open MCP sessions at most (32); one more is answered 503",
    )  # fmt: skip
    mcp.add_argument(
        "--token-file", type=Path, metavar="FILE",
        help=f"the bearer token HTTP clients must send (default: ${TOKEN_ENV})",
    )  # fmt: skip
    mcp.add_argument(
        "--spaces", default="",
        help="shared spaces that search and list read beside the account's own, comma-separated",
    )  # fmt: skip
    mcp.add_argument("--default-space", help="where a store goes without a space (its own)")
    mcp.add_argument(
        "--conversation",
        help="the conversation remember_interaction_info notes go to (default: mcp-CLIENT,"
        " after the MCP client's name)",
    )
    mcp.add_argument(
        "--check", action="store_true",
        help="log in, ask each memory agent once, say so in one line and exit (0: ready)",
    )  # fmt: skip
    mcp.add_argument("--debug", action="store_true", help="log what happens, on stderr")


def run(args: argparse.Namespace) -> int:
    """Run ``spade-memory mcp``; returns its exit status (1 or 2 with one line on stderr)."""
    _quiet_logs(args.debug)
    try:
        account = _account(args)
        token = secret(args.token_file, TOKEN_ENV, "the bearer token")
        if args.check:
            return asyncio.run(_check(account))
        import spade_memory.mcp_bridge.transports  # noqa: F401  (the extra is installed)
    except Refused as problem:
        print(f"spade-memory mcp: {problem}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as missing:
        if (missing.name or "").split(".")[0] not in ("mcp", "uvicorn", "anyio"):
            raise
        print(f"spade-memory mcp needs the MCP SDK: pip install '{MCP_EXTRA}'", file=sys.stderr)
        return 2
    if args.http is None:
        return _serve_stdio(account, args.conversation)
    try:
        address = http_address(args.http)
    except ValueError as problem:
        print(f"spade-memory mcp: {problem}", file=sys.stderr)
        return 2
    if token is None and not address.private:
        where = "is reachable from other machines" if not address.loopback else (
            "is not 127.0.0.1 or ::1, the addresses served without a token"
        )  # fmt: skip
        print(
            f"spade-memory mcp: --http {args.http} {where}: set {TOKEN_ENV} (or --token-file)"
            " to the bearer token its clients must send",
            file=sys.stderr,
        )
        return 2
    if address.any_address and not args.allowed_host:
        print(
            f"spade-memory mcp: --http {args.http} listens on every address: name the host"
            " its clients reach it by with --allowed-host NAME[:PORT] (requests for any other"
            " Host are refused)",
            file=sys.stderr,
        )
        return 2
    hosts = tuple(args.allowed_host)
    return _serve_http(account, args.conversation, address, token, hosts, args.max_sessions)


def _account(args: argparse.Namespace) -> Account:
    if not args.jid:
        raise Refused(f"say which account it acts as: --jid name@domain, or set {JID_ENV}")
    password = secret(args.password_file, PASSWORD_ENV, f"the password of {args.jid}")
    if password is None:
        raise Refused(f"set {PASSWORD_ENV} (or --password-file) to the password of {args.jid}")
    spaces = tuple(name.strip() for name in args.spaces.split(",") if name.strip())
    return Account(args.jid, password, args.port, args.timeout, spaces, args.default_space)


async def _check(account: Account) -> int:
    """Log in and ask each memory agent once: 0 and one line, or 1 and what is wrong."""
    link = MemoryLink(account)
    try:
        client = await link.client()
        await client.request(client.jids[BASE_MEMORY], MemoryStatsOp())
        await client.request(client.jids[INTERACTION_MEMORY], GetAllConversations())
    except MemoryServiceError as error:
        print(f"spade-memory mcp: not ready: {error.text}", file=sys.stderr)
        return 1
    finally:
        await link.close()
    agents = f"{client.jids[BASE_MEMORY]} and {client.jids[INTERACTION_MEMORY]}"
    print(f"ready: logged in as {account.jid}; {agents} answer; {len(EVERY_TOOL_SPEC)} tools")
    return 0


def _quiet_logs(debug: bool) -> None:
    """Logs on stderr (stdout carries the protocol on stdio): warnings, or all with
    ``--debug``; a refused password is said in one line, not slixmpp's."""
    logging.basicConfig(
        stream=sys.stderr, level=logging.DEBUG if debug else logging.WARNING,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )  # fmt: skip
    if not debug:
        for noisy in ("mcp", "uvicorn", "spade"):
            logging.getLogger(noisy).setLevel(logging.ERROR)
        logging.getLogger("slixmpp").setLevel(logging.CRITICAL)


def _stop_now() -> None:
    """End the process at once, after a signal (stdin's reader thread cannot be stopped)."""
    sys.stderr.flush()
    os._exit(0)


def _serve_stdio(account: Account, conversation: str | None) -> int:
    import anyio

    from spade_memory.mcp_bridge.server import MemoryBridge
    from spade_memory.mcp_bridge.transports import serve_stdio

    bridge = MemoryBridge(MemoryLink(account), conversation)
    anyio.run(serve_stdio, bridge, _stop_now)
    return 0


def _positive(given: str) -> int:
    if not given.isdigit() or int(given) < 1:
        raise argparse.ArgumentTypeError(f"takes a whole number of at least 1, not {given!r}")
    return int(given)


def _serve_http(
    account: Account, conversation: str | None, address: HttpAddress, token: str | None,
    hosts: tuple[str, ...], max_sessions: int,
) -> int:  # fmt: skip
    import anyio

    from spade_memory.mcp_bridge.server import MemoryBridge
    from spade_memory.mcp_bridge.transports import MCP_PATH, serve_http

    bridge = MemoryBridge(MemoryLink(account), conversation)
    guarded = "a bearer token" if token else "no token: this machine only"

    def ready() -> None:
        where = address.url(MCP_PATH)
        print(f"spade-memory mcp: serving {where} as {account.jid} ({guarded})", file=sys.stderr)

    try:
        anyio.run(
            functools.partial(
                serve_http, bridge, address, token, ready, hosts=hosts, max_sessions=max_sessions
            )
        )
    except OSError as error:
        print(f"spade-memory mcp: {error}", file=sys.stderr)
        return 1
    return 0
