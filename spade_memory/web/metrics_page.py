"""``/metrics``: this process's figures in the Prometheus text format, for a scraper
holding the token (``Authorization: Bearer <token>``). Without a token configured the
page does not exist: figures of who uses the memory are not for anyone who asks."""

from __future__ import annotations

import hmac

from aiohttp import web

from spade_memory.metrics.figures import CONTENT_TYPE, exposition
from spade_memory.web.guard import METRICS_TOKEN

routes = web.RouteTableDef()


@routes.get("/metrics")
async def metrics(request: web.Request) -> web.StreamResponse:
    token = request.app[METRICS_TOKEN]
    if token is None:
        raise web.HTTPNotFound(text="Metrics are off: start with SPADE_MEMORY_METRICS_TOKEN set.")
    given = request.headers.get("Authorization", "")
    if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
        raise web.HTTPUnauthorized(
            text="A bearer token is required.", headers={"WWW-Authenticate": "Bearer"}
        )
    response = web.Response(body=await exposition())
    response.headers["Content-Type"] = CONTENT_TYPE
    return response
