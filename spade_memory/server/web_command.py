"""``spade-memory web``: the web view (``spade_memory.web``) against a running deployment,
and ``spade-memory run --web`` serving it beside the memory agents.

Bound to 127.0.0.1 unless told otherwise. Bound to another address, its cookies are
marked Secure: put it behind a proxy that speaks HTTPS, since people type passwords
into it.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spade_memory.http.address import HttpAddress, allowed_hosts, http_address
from spade_memory.server.secrets_given import Refused, secret

if TYPE_CHECKING:  # the view's modules (aiohttp, jinja2, SPADE) load when it is served:
    from spade_memory.web.app import WebView  # `run` without --web needs none of them
    from spade_memory.web.viewers import Deployment

DEFAULT_ADDRESS = "127.0.0.1:8470"
METRICS_TOKEN_ENV = "SPADE_MEMORY_METRICS_TOKEN"


def web_address(given: str) -> HttpAddress:
    """``--web``'s and ``--http``'s value, for argparse (an error names what it takes)."""
    try:
        return http_address(given, "the web view's address")
    except ValueError as problem:
        raise argparse.ArgumentTypeError(str(problem)) from None


def view(
    deployment: Deployment,
    address: HttpAddress,
    secure_cookies: bool = False,
    metrics_token: str | None = None,
    hosts: tuple[str, ...] = (),
) -> WebView:
    """The view of ``deployment`` at ``address`` (Secure cookies beyond this machine;
    ``/metrics`` only with ``metrics_token``; ``hosts``: the names it is reached by
    besides its address, the only other Host headers it answers)."""
    from spade_memory.web.app import WebView, web_app

    app = web_app(
        deployment,
        secure_cookies=secure_cookies or not address.loopback,
        metrics_token=metrics_token,
        hosts=allowed_hosts(address, hosts),
    )
    return WebView(app, address)


def unnamed(address: HttpAddress, hosts: tuple[str, ...], option: str) -> str | None:
    """Why the view cannot serve ``address`` with ``hosts`` (it listens on every address
    and no name was given: no Host would be its own), or None."""
    if address.any_address and not hosts:
        return (
            f"the web view at {address.authority} listens on every address: name the host"
            f" people reach it by with {option} NAME[:PORT]"
        )
    return None


def add_allowed_host_option(parser: Any, option: str = "--allowed-host") -> None:
    """``--allowed-host`` (``run``: ``--web-allowed-host``), once per name."""
    parser.add_argument(
        option, action="append", default=[], metavar="NAME[:PORT]", dest="allowed_host",
        help="a name people reach the web view by (the Host their browser sends), besides"
        " its address; once per name (required with 0.0.0.0 or ::)",
    )  # fmt: skip


def metrics_token(file: Path | None) -> str | None:
    """The bearer token of ``/metrics``: from ``file`` or ``$SPADE_MEMORY_METRICS_TOKEN``
    (None: metrics off). Raises ``Refused`` for a file that cannot be read."""
    return secret(file, METRICS_TOKEN_ENV, "the metrics token")


def add_metrics_option(parser: Any) -> None:
    """``--metrics-token-file``, for ``web`` and ``run``."""
    parser.add_argument(
        "--metrics-token-file", type=Path, metavar="FILE",
        help=f"serve /metrics (Prometheus text) to scrapers sending this bearer token (default:"
        f" ${METRICS_TOKEN_ENV}; neither: no /metrics)",
    )  # fmt: skip


def add_arguments(web: argparse.ArgumentParser, name: str = "web") -> None:
    """Add ``web``'s flags."""
    web.add_argument(
        "--http", type=web_address, default=web_address(DEFAULT_ADDRESS), metavar="[HOST:]PORT",
        help=f"where it listens (default: {DEFAULT_ADDRESS}; another host than this machine"
        " marks its cookies Secure: serve it behind HTTPS)",
    )  # fmt: skip
    web.add_argument("--domain", default="localhost", help="the deployment's XMPP domain")
    web.add_argument("--port", type=int, default=5222, help="its XMPP client port (5222)")
    web.add_argument(
        "--timeout", type=float, default=5.0,
        help="seconds to wait for a login and for a memory agent's reply (5)",
    )  # fmt: skip
    web.add_argument(
        "--secure-cookies", action="store_true",
        help="mark cookies Secure on this machine's address too (behind an HTTPS proxy)",
    )  # fmt: skip
    add_allowed_host_option(web)
    add_metrics_option(web)
    web.add_argument("--debug", action="store_true", help="log what every request does")


def run(args: argparse.Namespace) -> int:
    """Run ``spade-memory web`` until SIGINT or SIGTERM; returns its exit status (1 with
    one line when it cannot listen)."""
    logging.basicConfig(
        level=logging.DEBUG if args.debug else logging.WARNING,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )  # fmt: skip
    logging.getLogger("slixmpp").setLevel(logging.DEBUG if args.debug else logging.CRITICAL)
    from spade_memory.web.viewers import Deployment

    deployment = Deployment(args.domain, args.port, args.timeout)
    try:
        token = metrics_token(args.metrics_token_file)
    except Refused as problem:
        print(f"spade-memory web: {problem}", file=sys.stderr)
        return 2
    hosts = tuple(args.allowed_host)
    nameless = unnamed(args.http, hosts, "--allowed-host")
    if nameless is not None:
        print(f"spade-memory web: {nameless}", file=sys.stderr)
        return 2
    served = view(deployment, args.http, args.secure_cookies, token, hosts)
    try:
        asyncio.run(_serve(served, deployment))
    except OSError as error:
        print(f"spade-memory web: {error}", file=sys.stderr)
        return 1
    return 0


async def _serve(served: WebView, deployment: Deployment) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    await served.start()
    print(
        f"spade-memory web: serving {served.address.url()}; log in with an account of"
        f" {deployment.domain} (XMPP at port {deployment.port}). Stop with Ctrl-C.",
        file=sys.stderr, flush=True,
    )  # fmt: skip
    await _tell_if_unreachable(deployment)
    try:
        await stop.wait()
    finally:
        await served.stop()


async def _tell_if_unreachable(deployment: Deployment) -> None:
    """One line when the deployment's XMPP server cannot be reached now (no login can
    succeed until it can); the view serves all the same, as a server that starts later
    is found at the next login."""
    from spade_memory.xmpp.connect_errors import AgentStartError
    from spade_memory.xmpp.reachability import probe

    try:
        await probe(deployment.domain, deployment.port, deployment.domain)
    except AgentStartError as problem:
        print(f"spade-memory web: no login can succeed yet: {problem}", file=sys.stderr, flush=True)
