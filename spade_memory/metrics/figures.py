"""Every figure this process exports, in one registry (``REGISTRY``).

Names follow Prometheus's conventions: a counter's samples end in ``_total``, times are
in seconds, labels name a service, an op and an outcome (``ok`` or the failure's
condition), never an account or a space (their number is unbounded).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
)
from prometheus_client import generate_latest as _generate_latest

# a ``_created`` sample beside each series is noise to a scraper
disable_created_metrics()  # type: ignore[no-untyped-call]
logger = logging.getLogger("spade_memory.metrics")
REGISTRY = CollectorRegistry()
CONTENT_TYPE = CONTENT_TYPE_LATEST
SECONDS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

REQUESTS = Counter(
    "spade_memory_requests",
    "Requests a memory agent answered, by service, op and outcome (ok, or the condition"
    " of the failure: bad-request, not-authorized, item-not-found, resource-constraint, ...)",
    ["service", "op", "outcome"],
    registry=REGISTRY,
)
LATENCY = Histogram(
    "spade_memory_request_seconds",
    "Seconds from a request's turn to its answer, by service and op",
    ["service", "op"],
    buckets=SECONDS,
    registry=REGISTRY,
)
WAITING = Gauge(
    "spade_memory_waiting_requests",
    "Requests admitted and waiting their turn (the waiting room), by service",
    ["service"],
    registry=REGISTRY,
)
IN_PROGRESS = Gauge(
    "spade_memory_requests_in_progress",
    "Requests being served now, by service",
    ["service"],
    registry=REGISTRY,
)
REFUSALS = Counter(
    "spade_memory_refusals",
    "Requests refused before their turn because a sender or the waiting room was full"
    " (resource-constraint with retry_after), by service",
    ["service"],
    registry=REGISTRY,
)
BACKGROUND = Gauge(
    "spade_memory_background_pending",
    "Work waiting in the background, by kind: memories waiting for their vector"
    " (embeddings), change notices and mirror writes not sent yet",
    ["work"],
    registry=REGISTRY,
)
QUOTA_USE = Gauge(
    "spade_memory_quota_use_ratio",
    "The share of its quota the fullest account holds (personal memories count against"
    " their author), by kind: memories or bytes (1.0: the next store is refused)",
    ["kind"],
    registry=REGISTRY,
)
WEB_LOGINS = Counter(
    "spade_memory_web_logins",
    "Logins to the web view, by outcome (ok, refused, slowed)",
    ["outcome"],
    registry=REGISTRY,
)
WEB_SEARCH = Histogram(
    "spade_memory_web_search_seconds",
    "Seconds the web view waited for a search (the round trip over XMPP)",
    buckets=SECONDS,
    registry=REGISTRY,
)


def pending(work: str, count: Callable[[], float]) -> None:
    """Export ``count()`` as the background work of kind ``work`` (read at each scrape)."""
    BACKGROUND.labels(work).set_function(count)


_refreshers: list[Callable[[], Awaitable[None]]] = []
REFRESH_SECONDS = 5.0
"""The longest a refresh before a scrape may take (the figures it sets are then older)."""


def refresh_before_scrape(refresh: Callable[[], Awaitable[None]]) -> Callable[[], None]:
    """Run ``refresh`` (which sets figures read from a store) before each scrape; returns
    the call that stops it (a store that closes)."""
    _refreshers.append(refresh)
    return lambda: _refreshers.remove(refresh) if refresh in _refreshers else None


async def exposition() -> bytes:
    """Every figure, in the Prometheus text format (``CONTENT_TYPE``), once the figures
    read from stores are refreshed (a refresh that fails or stalls is logged, and its
    figures stay as they were)."""
    for refresh in list(_refreshers):
        try:
            await asyncio.wait_for(refresh(), REFRESH_SECONDS)
        except Exception as error:  # a scrape never fails for one store
            logger.warning("figures not refreshed: %s", error or type(error).__name__)
    return _generate_latest(REGISTRY)
