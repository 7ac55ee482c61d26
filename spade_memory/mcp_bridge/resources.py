"""The MCP resources: a space's recent memories and a working-memory session, as JSON.

- ``memory://spaces/{space}/recent``: the newest memories of a space (``personal``: the
  account's own), as ``recent_memories`` gives them, without counting the read as a use;
- ``memory://sessions/{session_id}``: a working-memory session of the account's own;
- ``memory://spaces/{space}/sessions/{session_id}``: one kept in a shared space.

A session id is percent-encoded in a URI. Reading goes through the same ops, and so the
same access check, as every other request of the account.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

from mcp import types

from spade_memory.client.memory_client import MemoryClient
from spade_memory.protocol.memories import RecentMemories
from spade_memory.protocol.ops import PERSONAL, Op, Record
from spade_memory.protocol.services import BASE_MEMORY, INTERACTION_MEMORY
from spade_memory.protocol.working import GetWorkingMemory

SCHEME = "memory://"
RECENT_LIMIT = 20
"""Memories a space's resource shows, newest first."""
JSON = "application/json"


@dataclass(frozen=True)
class Resource:
    """What a resource URI names: a space's recent memories (``session`` None), or a
    working-memory session (in ``space``: ``personal`` for the account's own)."""

    space: str = PERSONAL
    session: str | None = None

    @property
    def uri(self) -> str:
        if self.session is None:
            return f"{SCHEME}spaces/{self.space}/recent"
        session = quote(self.session, safe="")
        if self.space == PERSONAL:
            return f"{SCHEME}sessions/{session}"
        return f"{SCHEME}spaces/{self.space}/sessions/{session}"

    @property
    def shared_space(self) -> str | None:
        """The shared space whose notices tell of this resource's changes (None: the
        account's own memories or sessions, which no notice tells of)."""
        return None if self.space == PERSONAL else self.space

    def op(self) -> Op[Any]:
        """The op that reads it."""
        if self.session is None:
            return RecentMemories(limit=RECENT_LIMIT, space=self.space, count_access=False)
        return GetWorkingMemory(session_id=self.session, space=self.space)

    @property
    def service(self) -> str:
        return BASE_MEMORY if self.session is None else INTERACTION_MEMORY


def parse(uri: str) -> Resource | None:
    """The resource ``uri`` names, or None when it names none of this server's."""
    if not uri.startswith(SCHEME):
        return None
    parts = uri[len(SCHEME) :].split("/")
    match parts:
        case ["spaces", space, "recent"] if space:
            return Resource(unquote(space))
        case ["sessions", session] if session:
            return Resource(PERSONAL, unquote(session))
        case ["spaces", space, "sessions", session] if space and session:
            return Resource(unquote(space), unquote(session))
    return None


TEMPLATES = [
    types.ResourceTemplate(
        uri_template=f"{SCHEME}spaces/{{space}}/recent",
        name="space-recent",
        title="A space's recent memories",
        description=f"The {RECENT_LIMIT} newest memories of a space ('personal': my own)",
        mime_type=JSON,
    ),
    types.ResourceTemplate(
        uri_template=f"{SCHEME}sessions/{{session_id}}",
        name="session",
        title="A working-memory session",
        description="Focus, findings, entities and context of one of my sessions",
        mime_type=JSON,
    ),
    types.ResourceTemplate(
        uri_template=f"{SCHEME}spaces/{{space}}/sessions/{{session_id}}",
        name="space-session",
        title="A working-memory session of a space",
        description="Focus, findings, entities and context of a session kept in a space",
        mime_type=JSON,
    ),
]


async def listed(client: MemoryClient) -> list[types.Resource]:
    """The recent memories of the account's own space and of each space it belongs to."""
    spaces = [PERSONAL, *(space.name for space in await client.list_spaces())]
    return [
        types.Resource(
            uri=Resource(space).uri,
            name=f"{space}-recent",
            title=f"Recent memories of {'my own space' if space == PERSONAL else space}",
            mime_type=JSON,
        )
        for space in spaces
    ]


async def read(client: MemoryClient, resource: Resource) -> str:
    """The resource's JSON text; raises the op's typed error (``ItemNotFound`` for a
    space or session the account cannot read, as for any other read)."""
    result: Record | None = await client.request(client.jids[resource.service], resource.op())
    assert result is not None  # the client is not degraded
    return result.model_dump_json()
