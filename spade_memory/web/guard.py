"""What every page needs against a hostile browser or a mistaken one.

- a Host of its own: a request naming another host (a page that pointed its DNS name
  here) is 421 (``known_host``);
- a viewer: a page without a live session is the login page (``viewer_required``);
- CSRF: every POST carries the session's token (the login form, a token bound to a
  cookie of its own), compared in constant time; a wrong one is 403 and changes nothing;
- cookies HttpOnly and SameSite=Strict, and Secure where the view is reached over HTTPS
  (or said to be, behind a proxy);
- headers that forbid inline scripts, framing, sniffing and referrers;
- errors: a page naming the memory service's condition and text, or a plain 500; the
  traceback goes to the log, never to the page.
"""

from __future__ import annotations

import hmac
import logging
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp_jinja2
from aiohttp import web
from pydantic import ValidationError

from spade_memory.protocol.errors import Condition, MemoryServiceError
from spade_memory.web.viewers import Viewer, Viewers

logger = logging.getLogger("spade_memory.web")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
SESSION_COOKIE = "spade_memory_view"
LOGIN_COOKIE = "spade_memory_login"
"""The login form's CSRF token, before there is a session."""
VIEWERS: web.AppKey[Viewers] = web.AppKey("viewers", Viewers)
SECURE_COOKIES: web.AppKey[bool] = web.AppKey("secure_cookies", bool)
VIEWER: web.RequestKey[Viewer | None] = web.RequestKey("viewer")
TOKEN_LENGTH = len(secrets.token_urlsafe(32))
METRICS_TOKEN: web.AppKey[str | None] = web.AppKey("metrics_token", str)
ALLOWED_HOSTS: web.AppKey[frozenset[str]] = web.AppKey("allowed_hosts", frozenset)
"""The Host headers the view answers (empty: any, for an application not yet bound)."""
OPEN_PATHS = ("/login", "/static/", "/metrics")
"""What a browser without a session may ask for (``/metrics`` asks for its own token)."""
HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self';"
    " img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none';"
    " base-uri 'none'; object-src 'none'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
STATUS = {
    Condition.BAD_REQUEST: 400,
    Condition.NOT_AUTHORIZED: 403,
    Condition.ITEM_NOT_FOUND: 404,
    Condition.CONFLICT: 409,
    Condition.RESOURCE_CONSTRAINT: 429,
    Condition.SERVICE_UNAVAILABLE: 503,
    Condition.REMOTE_SERVER_TIMEOUT: 504,
}
"""The HTTP status of each failure of the memory service."""


def viewer_of(request: web.Request) -> Viewer:
    """The request's viewer (``viewer_required`` put it there)."""
    viewer = request[VIEWER]
    assert viewer is not None, "a page behind viewer_required"
    return viewer


def set_cookie(request: web.Request, response: web.StreamResponse, name: str, value: str,
               max_age: int | None = None) -> None:  # fmt: skip
    """A cookie no script reads and no other site sends."""
    response.set_cookie(
        name, value, max_age=max_age, path="/", httponly=True, samesite="Strict",
        secure=request.secure or request.app[SECURE_COOKIES],
    )  # fmt: skip


def login_token(request: web.Request, response: web.StreamResponse) -> str:
    """The CSRF token of the login form, bound to a cookie of the browser's: the one it
    has (another page of it, or its favicon's trip to the login page, must not change
    the token of a form already shown), else a new one."""
    token = request.cookies.get(LOGIN_COOKIE, "")
    if len(token) != TOKEN_LENGTH or not token.replace("-", "").replace("_", "").isalnum():
        token = secrets.token_urlsafe(32)
    set_cookie(request, response, LOGIN_COOKIE, token, max_age=3600)
    return token


def same(given: object, expected: str | None) -> bool:
    """Whether a form's token is the expected one (constant time)."""
    return (
        isinstance(given, str)
        and bool(expected)
        and hmac.compare_digest(given.encode(), (expected or "").encode())
    )


async def checked_form(request: web.Request, expected: str | None) -> Any:
    """The posted form, once its CSRF token is ``expected``; raises ``HTTPForbidden``."""
    form = await request.post()
    if not same(form.get("csrf"), expected):
        raise web.HTTPForbidden(
            text="This form's token is not this session's: reload the page and try again."
        )
    return form


@web.middleware
async def security_headers(request: web.Request, handler: Handler) -> web.StreamResponse:
    response = await handler(request)
    if not response.prepared:
        for name, value in HEADERS.items():
            response.headers.setdefault(name, value)
    return response


@web.middleware
async def known_host(request: web.Request, handler: Handler) -> web.StreamResponse:
    """421 for a request whose Host is not one of the view's."""
    hosts = request.app[ALLOWED_HOSTS]
    if hosts and request.headers.get("Host", "").lower() not in hosts:
        raise web.HTTPMisdirectedRequest(
            text="This address does not serve that host name; use the view's own address."
        )
    return await handler(request)


@web.middleware
async def viewer_required(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Put the session's viewer on the request; without one, the login page (401 for a
    script's request)."""
    viewer = request.app[VIEWERS].find(request.cookies.get(SESSION_COOKIE))
    request[VIEWER] = viewer
    if viewer is None and not request.path.startswith(OPEN_PATHS):
        if request.method == "GET" and "text/event-stream" not in request.headers.get("Accept", ""):
            raise web.HTTPSeeOther("/login")
        raise web.HTTPUnauthorized(text="Log in first.")
    return await handler(request)


@web.middleware
async def error_pages(request: web.Request, handler: Handler) -> web.StreamResponse:
    """A failure as a page: its status, condition and text; never a traceback."""
    try:
        return await handler(request)
    except web.HTTPException as answer:
        if answer.status < 400:
            raise
        return _page(request, answer.status, answer.reason, answer.text or answer.reason)
    except MemoryServiceError as failure:
        status = STATUS.get(failure.condition, 502)
        return _page(request, status, failure.condition.value, failure.text)
    except ValidationError as invalid:
        problems = "; ".join(_problem(error) for error in invalid.errors()[:3])
        return _page(request, 400, "bad-request", problems)
    except Exception:
        logger.exception("%s %s failed", request.method, request.path)
        return _page(request, 500, "internal-server-error",
                     "Something went wrong here; the log of spade-memory says what.")  # fmt: skip


def _problem(error: Any) -> str:
    where = ".".join(str(part) for part in error.get("loc", ()) if part != "op")
    return f"{where}: {error.get('msg')}" if where else str(error.get("msg"))


def _page(request: web.Request, status: int, title: str, text: str) -> web.Response:
    viewer = request.get(VIEWER)
    response = aiohttp_jinja2.render_template(
        "error.html", request,
        {"title": title, "text": text, "viewer": viewer, "csrf": viewer.csrf if viewer else ""},
        status=status,
    )  # fmt: skip
    return response
