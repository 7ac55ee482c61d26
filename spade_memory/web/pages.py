"""The pages: each one memory op (or a few) sent over XMPP as the viewer's account.

Nothing here decides who may see or change what: the memory agents do, for this
account as for any agent, and their refusal is the page (``guard.error_pages``). The
forms for editing are shown only where the account may change the memory (its own, or
any as an admin), as a courtesy; another POST is refused by the base memory agent.
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta, timezone
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import quote, urlencode

import aiohttp_jinja2
from aiohttp import web

from spade_memory.client.memories import FetchedMemories
from spade_memory.client.memory_client import MemoryClient
from spade_memory.protocol.errors import ItemNotFound
from spade_memory.protocol.memories import Category, GetMemory, MemoryHistory, RelatedMemories
from spade_memory.protocol.ops import PERSONAL
from spade_memory.web import charts, drawings
from spade_memory.web.charts import SEARCH_TIMES, SearchTimes
from spade_memory.web.guard import (
    LOGIN_COOKIE,
    SESSION_COOKIE,
    VIEWER,
    VIEWERS,
    checked_form,
    login_token,
    set_cookie,
    viewer_of,
)
from spade_memory.web.viewers import LoginRefused

if TYPE_CHECKING:
    from spade_memory.protocol.space_names import Role

PAGE_SIZE = 25
MAX_PAGE = 400
"""The last page a list shows (10,000 memories); a search shows its best ``PAGE_SIZE``."""
CATEGORIES: tuple[str, ...] = ("fact", "pattern", "preference", "capability")
ROLES: tuple[str, ...] = ("reader", "writer", "admin")
SESSIONS_SHOWN = 20
"""The working sessions a space's page lists (the first by id; others open by id)."""
routes = web.RouteTableDef()


def segment(value: str) -> str:
    """``value`` as one segment of a path: its ``/`` escaped too (jinja's ``urlencode``
    keeps it, and a session's id may hold one)."""
    return quote(value, safe="")


@routes.get("/login")
async def login_page(request: web.Request) -> web.StreamResponse:
    if request[VIEWER] is not None:
        raise web.HTTPSeeOther("/")
    return _login_form(request, None)


def _login_form(
    request: web.Request, problem: str | None, jid: str = "", retry_after: float | None = None
) -> web.Response:
    response = web.Response(status=401 if problem else 200)
    if retry_after is not None:  # slowed: Too Many Requests, and when to try again
        response.set_status(429)
        response.headers["Retry-After"] = str(max(1, round(retry_after)))
    token = login_token(request, response)
    page = aiohttp_jinja2.render_string(
        "login.html", request, {"csrf": token, "problem": problem, "jid": jid, "viewer": None}
    )
    response.text, response.content_type = page, "text/html"
    return response


@routes.post("/login")
async def log_in(request: web.Request) -> web.StreamResponse:
    form = await checked_form(request, request.cookies.get(LOGIN_COOKIE))
    jid, password = str(form.get("jid", "")), str(form.get("password", ""))
    try:
        key, _viewer = await request.app[VIEWERS].log_in(jid, password, request.remote or "")
    except LoginRefused as refused:
        return _login_form(request, str(refused), jid[:200], refused.retry_after)
    response = _see_other("/")
    set_cookie(request, response, SESSION_COOKIE, key)
    response.del_cookie(LOGIN_COOKIE, path="/")
    return response


@routes.post("/logout")
async def log_out(request: web.Request) -> web.StreamResponse:
    await checked_form(request, viewer_of(request).csrf)
    await request.app[VIEWERS].log_out(request.cookies.get(SESSION_COOKIE))
    response = _see_other("/login")
    response.del_cookie(SESSION_COOKIE, path="/")
    return response


@routes.get("/")
async def home(request: web.Request) -> web.StreamResponse:
    """The viewer's spaces, with its role in each."""
    memory = viewer_of(request).memory
    spaces = await memory.list_spaces()
    return _render(request, "home.html", {"spaces": spaces})


@routes.get("/spaces/{space}")
async def space(request: web.Request) -> web.StreamResponse:
    """A space's memories, a page at a time and filtered, or a search's best, with each
    one's score and how the search ranked; its members and its usage."""
    name = request.match_info["space"]
    memory = viewer_of(request).memory
    shown = _Shown.read(request.query)
    fetched = await _memories(memory, name, shown, request.app[SEARCH_TIMES])
    context = {"space": name, "shown": shown, "fetched": fetched, "categories": CATEGORIES}
    if request.query.get("fragment") == "list":
        return _render(request, "memories.html", context)
    details = None if name == PERSONAL else await memory.space_info(name)
    stats = await memory.get_memory_stats(
        space=None if name == PERSONAL else name, days=charts.DAYS
    )
    assert stats is not None
    sessions = await memory.list_sessions(
        space=None if name == PERSONAL else name, limit=SESSIONS_SHOWN
    )
    role = "owner" if details is None else details.role
    drawn = charts.drawn(stats, request.app[SEARCH_TIMES])
    context |= {"details": details, "stats": stats, "role": role, "roles": ROLES,
                "charts": drawn, "sessions": sessions}  # fmt: skip
    return _render(request, "space.html", context)


@routes.post("/spaces/{space}/members")
async def change_member(request: web.Request) -> web.StreamResponse:
    """Grant a member a role, or revoke it (``role`` ``none``); the base memory agent
    lets admins only."""
    viewer = viewer_of(request)
    form = await checked_form(request, viewer.csrf)
    name, member = request.match_info["space"], str(form.get("member", "")).strip()
    role = form.get("role")
    if role == "none":
        await viewer.memory.revoke(name, member)
    elif role in ROLES:
        await viewer.memory.grant(name, member, cast("Role", role))
    else:
        raise web.HTTPBadRequest(text=f"role is one of {', '.join(ROLES)} or none")
    raise web.HTTPSeeOther(f"/spaces/{name}")


@routes.get("/spaces/{space}/sessions")
async def open_session(request: web.Request) -> web.StreamResponse:
    """The session whose id the form names."""
    session_id = request.query.get("id", "").strip()
    if not session_id:
        raise web.HTTPBadRequest(text="give a session's id")
    raise web.HTTPSeeOther(
        f"/spaces/{request.match_info['space']}/sessions/{quote(session_id, safe='')}"
    )


@routes.get("/spaces/{space}/sessions/{id}")
async def working_session(request: web.Request) -> web.StreamResponse:
    """A working-memory session: its focus and their history, entities, findings and a
    pending clarification."""
    name, session_id = request.match_info["space"], request.match_info["id"]
    memory = viewer_of(request).memory
    state = await memory.session(session_id, space=None if name == PERSONAL else name).get()
    return _render(request, "session.html", {"space": name, "state": state})


@routes.get("/spaces/{space}/memories/{id}")
async def one_memory(request: web.Request) -> web.StreamResponse:
    """One memory, every version kept of it, what it replaced and what replaced it, and
    (to its writers) a form to change it."""
    name, memory_id = request.match_info["space"], request.match_info["id"]
    memory = viewer_of(request).memory
    where = None if name == PERSONAL else name
    history = await memory.memory_history(memory_id, space=where)
    # a memory no longer valid is shown as it was just before it stopped being so
    ended = None if history is None else history.valid_to
    then = None
    if ended is not None and ended <= datetime.now(timezone.utc):
        then = ended - timedelta(microseconds=1)
    op = GetMemory(id=memory_id, space=where, count_access=False, as_of=then)
    found = await memory.request(memory.base_memory_jid, op)
    role = "owner" if where is None else (await _role(memory, name))
    writes = role in ("owner", "admin") or (
        role == "writer" and found is not None and found.author == viewer_of(request).jid
    )
    context = {"space": name, "memory": found, "history": history, "role": role,
               "categories": CATEGORIES, "writes": writes,
               "spans": await _timeline(memory, memory_id, where, history),
               "near": await _neighbourhood(memory, memory_id, where, history)}  # fmt: skip
    return _render(request, "memory.html", context)


async def _timeline(
    memory: MemoryClient, memory_id: str, where: str | None, history: MemoryHistory | None
) -> list[drawings.Span]:
    """The values its fact took, when each was true and who stated it (none: it never
    replaced nor was replaced)."""
    if history is None or not (history.supersedes or history.superseded_by):
        return []
    read = []
    for other in drawings.chain(history, memory_id):
        try:
            one = history if other == memory_id else await memory.memory_history(other, space=where)
        except ItemNotFound:  # deleted since, or the chain runs into another space
            one = None
        if one is not None:
            read.append(one)
    return drawings.timeline(read, memory_id, datetime.now(timezone.utc))


async def _neighbourhood(
    memory: MemoryClient, memory_id: str, where: str | None, history: MemoryHistory | None
) -> drawings.Neighbourhood | None:
    """The entities it names and the memories they lead to (None for one that is not
    current: the graph links current memories)."""
    if history is None or history.superseded_by or history.deleted is not None:
        return None
    op = RelatedMemories(id=memory_id, space=where, limit=drawings.NEIGHBOURS, count_access=False)
    try:
        related = await memory.request(memory.base_memory_jid, op)
    except ItemNotFound:
        return None
    return None if related is None else drawings.neighbourhood(related)


@routes.get("/spaces/{space}/memories/{id}/beads")
async def beads_issue(request: web.Request) -> web.StreamResponse:
    """The beads issue mirroring a memory: its id, labels, priority, status and links
    (asked of the beads sync agent, as this account)."""
    name, memory_id = request.match_info["space"], request.match_info["id"]
    issue = await viewer_of(request).memory.beads.mirrored_memory(memory_id)
    return _render(request, "beads.html", {"space": name, "memory_id": memory_id, "issue": issue})


@routes.post("/spaces/{space}/memories/{id}")
async def edit_memory(request: web.Request) -> web.StreamResponse:
    """Change a memory's content, category or context (the base memory agent decides
    whether this account may)."""
    viewer = viewer_of(request)
    form = await checked_form(request, viewer.csrf)
    name, memory_id = request.match_info["space"], request.match_info["id"]
    changes: dict[str, Any] = {"content": str(form.get("content", ""))}
    if form.get("category") in CATEGORIES:
        changes["category"] = form["category"]
    context = str(form.get("context", "")).strip()
    changes["context"] = context or None
    where = None if name == PERSONAL else name
    await viewer.memory.update_memory(memory_id, space=where, **changes)
    raise web.HTTPSeeOther(request.path)


@routes.post("/spaces/{space}/memories/{id}/delete")
async def delete_memory(request: web.Request) -> web.StreamResponse:
    viewer = viewer_of(request)
    await checked_form(request, viewer.csrf)
    name, memory_id = request.match_info["space"], request.match_info["id"]
    if not await viewer.memory.delete_memory(memory_id, space=None if name == PERSONAL else name):
        raise web.HTTPNotFound(text=f"There is no memory {memory_id} in {name}.")
    raise web.HTTPSeeOther(f"/spaces/{name}")


@routes.post("/spaces/{space}/memories/{id}/restore")
async def restore_memory(request: web.Request) -> web.StreamResponse:
    """Undo the supersede of a memory: current again (the base memory agent decides
    whether this account may: its author, or an admin of the space)."""
    viewer = viewer_of(request)
    await checked_form(request, viewer.csrf)
    name, memory_id = request.match_info["space"], request.match_info["id"]
    await viewer.memory.restore_memory(memory_id, space=None if name == PERSONAL else name)
    raise web.HTTPSeeOther(f"/spaces/{name}/memories/{memory_id}")


def _see_other(location: str) -> web.Response:
    """A redirect that carries cookies (an HTTP exception is raised, not returned)."""
    return web.Response(status=303, headers={"Location": location})


async def _role(memory: MemoryClient, name: str) -> str:
    details = await memory.space_info(name)
    return "reader" if details is None else details.role


async def _memories(
    memory: MemoryClient, space: str, shown: _Shown, searches: SearchTimes
) -> FetchedMemories:
    """The memories the page shows; a person's look is not a use (``count_access``)."""
    filters = shown.filters() | {"count_access": False}
    if shown.query:
        with searches.timed():
            return await memory.search_memories(
                shown.query, limit=PAGE_SIZE, category=shown.category, space=space, **filters
            )
    offset = (shown.page - 1) * PAGE_SIZE
    if shown.category:
        return await memory.get_memories_by_category(
            shown.category, PAGE_SIZE, offset=offset, space=space, **filters
        )
    return await memory.get_recent_memories(PAGE_SIZE, offset=offset, space=space, **filters)


class _Shown:
    """What the viewer asked a space's page to show (its query string)."""

    def __init__(self, query: str, category: Category | None, tag: str, author: str,
                 after: date | None, before: date | None, page: int) -> None:  # fmt: skip
        self.query, self.category, self.tag, self.author = query, category, tag, author
        self.after, self.before, self.page = after, before, page

    @classmethod
    def read(cls, given: Any) -> _Shown:
        """Raises ``HTTPBadRequest`` naming the parameter that is wrong."""
        category = given.get("category") or None
        if category is not None and category not in CATEGORIES:
            raise web.HTTPBadRequest(text=f"category is one of {', '.join(CATEGORIES)}")
        page_given = given.get("page", "1")
        if not page_given.isdigit() or not 1 <= int(page_given) <= MAX_PAGE:
            raise web.HTTPBadRequest(text=f"page is a whole number from 1 to {MAX_PAGE}")
        return cls(given.get("q", "").strip(), category, given.get("tag", "").strip(),
                   given.get("author", "").strip(), _day(given, "after"), _day(given, "before"),
                   int(page_given))  # fmt: skip

    def filters(self) -> dict[str, Any]:
        """The op's filters: a tag, an author, stored on or after a day, before a day."""
        filters: dict[str, Any] = {}
        if self.tag:
            filters["tags_any"] = [self.tag]
        if self.author:
            filters["authors"] = [self.author]
        if self.after:
            filters["created_after"] = datetime.combine(self.after, time(), timezone.utc)
        if self.before:
            filters["created_before"] = datetime.combine(self.before, time(), timezone.utc)
        return filters

    def link(self, **changes: Any) -> str:
        """This page's query string with ``changes``."""
        values = {
            "q": self.query,
            "category": self.category or "",
            "tag": self.tag,
            "author": self.author,
            "after": self.after or "",
            "before": self.before or "",
            "page": self.page,
        }
        values |= changes
        return "?" + urlencode({key: value for key, value in values.items() if value})


def _day(given: Any, name: str) -> date | None:
    text = given.get(name, "")
    if not text:
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise web.HTTPBadRequest(text=f"{name} is a day, such as 2026-11-27") from None


def _render(request: web.Request, template: str, context: dict[str, Any]) -> web.Response:
    viewer = viewer_of(request)
    return aiohttp_jinja2.render_template(
        template, request, {**context, "viewer": viewer, "csrf": viewer.csrf}
    )
