"""The web view served by this process against ``spade-memory run`` in another one, and
a browser-less client of it (aiohttp's, with a cookie jar) that logs in through the form.
The viewers' logins and every op of a page go over XMPP to the other process."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp

from spade_memory.http.address import HttpAddress
from spade_memory.server.web_command import view
from spade_memory.testing import free_port
from spade_memory.web.viewers import Deployment

PASSWORD = "client-secret"
"""The password of the suite's client agents (``harness.start_client``)."""
TOKEN = re.compile(r'name="csrf" value="([^"]+)"')


@asynccontextmanager
async def web_view(xmpp_port: int, **deployment: Any) -> AsyncIterator[str]:
    """The view of the deployment at ``xmpp_port``, served here; yields its base URL."""
    address = HttpAddress("127.0.0.1", free_port())
    served = view(Deployment("localhost", xmpp_port, **deployment), address)
    await served.start()
    try:
        yield address.url("").rstrip("/")
    finally:
        await served.stop()


def browser() -> aiohttp.ClientSession:
    """A client keeping cookies for 127.0.0.1 and following no redirect by itself."""
    return aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))


def csrf_of(page: str) -> str:
    """The CSRF token of the page's first form."""
    found = TOKEN.search(page)
    assert found, page
    return found.group(1)


async def log_in(session: aiohttp.ClientSession, base: str, jid: str,
                 password: str = PASSWORD) -> aiohttp.ClientResponse:  # fmt: skip
    """Post the login form as a person would (after reading it); returns the answer."""
    async with session.get(f"{base}/login") as form:
        token = csrf_of(await form.text())
    data = {"jid": jid, "password": password, "csrf": token}
    async with session.post(f"{base}/login", data=data, allow_redirects=False) as answer:
        await answer.read()
        return answer


async def page(session: aiohttp.ClientSession, url: str) -> tuple[int, str]:
    """A GET's status and text (redirects not followed)."""
    async with session.get(url, allow_redirects=False) as answer:
        return answer.status, await answer.text()
