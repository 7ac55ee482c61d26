"""The web view's aiohttp application, and serving it until a signal.

Only the view's own routes are on its port: SPADE's per-agent pages (``/spade``, one
of which stops the agent on a GET) are never added to it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path

import aiohttp_jinja2
import jinja2
from aiohttp import web

from spade_memory.http.address import HttpAddress, bound_socket
from spade_memory.web import figures, live, metrics_page, pages
from spade_memory.web.charts import SEARCH_TIMES, SearchTimes
from spade_memory.web.guard import (
    ALLOWED_HOSTS,
    METRICS_TOKEN,
    SECURE_COOKIES,
    VIEWERS,
    error_pages,
    known_host,
    security_headers,
    viewer_required,
)
from spade_memory.web.viewers import Deployment, Viewers

logger = logging.getLogger("spade_memory.web")
HERE = Path(__file__).parent
SWEEP_SECONDS = 60.0
"""How often expired sessions are logged out."""
MAX_BODY = 256 * 1024
"""The largest form a browser may post (a memory's content is far smaller)."""
MAX_URL = 64 * 1024
"""The longest request line: a search too long for the memory service is its answer to
give, not a parser's."""
FILTERS: dict[str, Callable[..., str]] = {
    "count": figures.count, "size": figures.size, "segment": pages.segment,
}  # fmt: skip
"""The templates' own filters: numbers as a person reads them, a path's segment."""


def web_app(
    deployment: Deployment, *, secure_cookies: bool = False, metrics_token: str | None = None,
    hosts: Iterable[str] = (),
) -> web.Application:  # fmt: skip
    """The view's application (``secure_cookies``: mark its cookies Secure even over plain
    HTTP, as behind a proxy that terminates HTTPS; ``metrics_token``: the bearer token of
    ``/metrics``, which is off without one; ``hosts``: the Host headers it answers,
    ``http.address.allowed_hosts``)."""
    app = web.Application(
        middlewares=[security_headers, error_pages, known_host, viewer_required],
        client_max_size=MAX_BODY,
    )
    app[ALLOWED_HOSTS] = frozenset(host.lower() for host in hosts)
    app[VIEWERS] = Viewers(deployment)
    app[SECURE_COOKIES] = secure_cookies
    app[SEARCH_TIMES] = SearchTimes()
    app[METRICS_TOKEN] = metrics_token
    aiohttp_jinja2.setup(
        app,
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        filters=FILTERS,
    )
    app.router.add_routes(pages.routes)
    app.router.add_routes(live.routes)
    app.router.add_routes(metrics_page.routes)
    app.router.add_static("/static/", HERE / "static", follow_symlinks=False)
    app.cleanup_ctx.append(_sessions)
    return app


async def _sessions(app: web.Application) -> AsyncIterator[None]:
    """Sweep expired sessions while serving; log every session out at the end."""
    viewers = app[VIEWERS]

    async def sweep() -> None:
        while True:
            await asyncio.sleep(SWEEP_SECONDS)
            await viewers.sweep()

    sweeping = asyncio.create_task(sweep())
    yield
    sweeping.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await sweeping
    await viewers.close()


class WebView:
    """The view served at an address; ``start`` then ``stop`` (each bounded)."""

    def __init__(self, app: web.Application, address: HttpAddress) -> None:
        self.address = address
        self._runner = web.AppRunner(
            app, access_log=None, shutdown_timeout=2.0, max_line_size=MAX_URL
        )

    async def start(self) -> None:
        """Listen; raises ``OSError`` naming the address when it cannot be bound."""
        listening = bound_socket(self.address)
        try:
            await self._runner.setup()
            await web.SockSite(self._runner, listening).start()
        except BaseException:
            listening.close()
            raise
        logger.info("web view at %s", self.address.url())

    async def stop(self) -> None:
        """Stop serving and log every viewer out."""
        await asyncio.wait_for(self._runner.cleanup(), 15.0)
