"""Every memory tool, in one place: the spade_llm tools and the MCP server's tools are
built from these specs, so their names, descriptions and schemas cannot drift apart.

``TOOL_SPECS`` are spade_llm's four memory tools (its names, parameters, types, enums
and required lists, so prompts written for spade_llm keep working); ``MORE_TOOL_SPECS``
reach the rest of a memory: read, change, forget and trace one memory, the shared
spaces, and a working session's focus and findings.
"""

from __future__ import annotations

from spade_memory.protocol.memories import (
    DeleteMemory,
    GetMemory,
    ListMemories,
    MemoriesAbout,
    MemoryHistoryOp,
    RelatedMemories,
    RestoreMemory,
    SearchMemories,
    StoreMemory,
    SupersedeMemory,
    UpdateMemory,
)
from spade_memory.protocol.notes import AddInformation
from spade_memory.protocol.services import BASE_MEMORY, INTERACTION_MEMORY
from spade_memory.protocol.spaces import ListSpaces, SpaceInfo
from spade_memory.protocol.working import AddFinding, GetWorkingMemory, SetFocus
from spade_memory.tools import sentences
from spade_memory.tools.spec import ToolSpec

_READ_SPACE = {
    "type": "string",
    "description": "Optional: one space to look in: 'personal' (my own), a shared space's "
    "name, or '*' for all I can read (default: my own and the agent's shared spaces)",
}
_ONE_SPACE = {
    "type": "string",
    "description": "Optional: the shared space the memory is in, as search and list show it "
    "(default: my own)",
}
_SESSION_SPACE = {
    "type": "string",
    "description": "Optional: the shared space keeping the session (default: my own)",
}

REMEMBER_INTERACTION_INFO = ToolSpec(
    name="remember_interaction_info",
    description=(
        "Remember specific, useful information about THIS interaction with another agent: "
        "APIs, authentication methods, data formats, preferences, capabilities or technical "
        "specifications that will help in future interactions with the same agent. Be "
        "selective; do not store general conversation content or pleasantries."
    ),
    op=AddInformation,
    parameters=("information",),
    service=INTERACTION_MEMORY,
    say=sentences.said_remembered,
    filled=("conversation_id",),
)
STORE_MEMORY = ToolSpec(
    name="store_memory",
    description=(
        "Store important information in my long-term memory for future use: facts (APIs, "
        "data formats, configurations), patterns I have observed, preferences I have learned, "
        "and my own capabilities or limitations. It persists across conversations."
    ),
    op=StoreMemory,
    parameters=("category", "content", "context", "confidence", "space", "tags", "supersedes"),
    service=BASE_MEMORY,
    say=sentences.said_stored,
    required=("category", "content"),  # spade_llm's; the wire also takes none (classified)
    replaced={
        "space": {
            "type": "string",
            "description": "Optional: a shared space's name to "
            "store into (default: the agent's default space, else its own)",
        }
    },
    space_default="store",
)
SEARCH_MEMORIES = ToolSpec(
    name="search_memories",
    description=(
        "Search my long-term memory for information relevant to the current conversation: "
        "facts I learned, patterns I observed, preferences I discovered, my capabilities. "
        "Results are ranked by relevance."
    ),
    op=SearchMemories,
    parameters=("query", "limit", "category", "space", "tags_any", "as_of", "known_at"),
    service=BASE_MEMORY,
    say=sentences.said_found,
    bounds={"limit": {"minimum": 1, "maximum": 20, "default": 10}},
    replaced={"space": _READ_SPACE},
    space_default="read",
)
LIST_MEMORIES = ToolSpec(
    name="list_memories",
    description=(
        "List my memories of one category (fact, pattern, preference, capability), most "
        "recently used first, to see what I know in that area."
    ),
    op=ListMemories,
    parameters=("category", "limit", "space", "tags_any", "as_of", "known_at"),
    service=BASE_MEMORY,
    say=sentences.said_listed,
    bounds={"limit": {"minimum": 1, "maximum": 50, "default": 20}},
    replaced={"space": _READ_SPACE},
    space_default="read",
)

GET_MEMORY = ToolSpec(
    name="get_memory",
    description=(
        "Read one memory by its id (search and list show it): its category, content, "
        "context, confidence, tags and version."
    ),
    op=GetMemory,
    parameters=("id", "space", "as_of", "known_at"),
    service=BASE_MEMORY,
    say=sentences.said_memory,
    replaced={"space": _ONE_SPACE},
)
UPDATE_MEMORY = ToolSpec(
    name="update_memory",
    description=(
        "Correct a memory by its id: its content, category, context, confidence or tags "
        "(one I stored, or anyone's in a space I administer). The previous version is kept "
        "in its history."
    ),
    op=UpdateMemory,
    parameters=("id", "content", "category", "context", "confidence", "tags", "space"),
    service=BASE_MEMORY,
    say=sentences.said_updated,
    replaced={"space": _ONE_SPACE},
)
SUPERSEDE_MEMORY = ToolSpec(
    name="supersede_memory",
    description=(
        "Replace a memory that is no longer true, by its id (one I stored, or anyone's in a "
        "space I administer), with what is true now: new content, or (by) the id of a "
        "memory already saying it, as when a store reports a possible conflict. The old one "
        "is no longer found, stays in its history, and each names the other."
    ),
    op=SupersedeMemory,
    parameters=("id", "content", "by", "context", "valid_from", "space"),
    service=BASE_MEMORY,
    say=sentences.said_stored,
    replaced={"space": _ONE_SPACE},
)
RESTORE_MEMORY = ToolSpec(
    name="restore_memory",
    description=(
        "Undo a wrong replacement, by the id of the memory that was replaced (one I stored, "
        "or anyone's in a space I administer): it is current and found again, and the "
        "memory that replaced it stays current but no longer names it."
    ),
    op=RestoreMemory,
    parameters=("id", "space"),
    service=BASE_MEMORY,
    say=sentences.said_restored,
    replaced={"space": _ONE_SPACE},
)
DELETE_MEMORY = ToolSpec(
    name="delete_memory",
    description=(
        "Forget a memory by its id, when it is wrong or no longer true (one I stored, or "
        "anyone's in a space I administer). Its history keeps who deleted it and when."
    ),
    op=DeleteMemory,
    parameters=("id", "space"),
    service=BASE_MEMORY,
    say=sentences.said_deleted,
    replaced={"space": _ONE_SPACE},
)
MEMORY_HISTORY = ToolSpec(
    name="memory_history",
    description=(
        "Every kept version of a memory, by its id: what it said, who changed it and when; "
        "for a deleted one, who deleted it."
    ),
    op=MemoryHistoryOp,
    parameters=("id", "space"),
    service=BASE_MEMORY,
    say=sentences.said_history,
    replaced={"space": _ONE_SPACE},
)
MEMORIES_ABOUT = ToolSpec(
    name="memories_about",
    description=(
        "Everything I remember about one person, place or thing (by name; any case, "
        "possessive or not), those it is the subject of first: for questions that need "
        "several memories, such as what someone has done or likes."
    ),
    op=MemoriesAbout,
    parameters=("entity", "limit", "space"),
    service=BASE_MEMORY,
    say=sentences.said_about,
    bounds={"limit": {"minimum": 1, "maximum": 20, "default": 10}},
    replaced={"space": _READ_SPACE},
    space_default="read",
)
RELATED_MEMORIES = ToolSpec(
    name="related_memories",
    description=(
        "The memories that name what one memory (by its id) names: the people, places "
        "and things they share, the rarer the more related."
    ),
    op=RelatedMemories,
    parameters=("id", "limit", "space"),
    service=BASE_MEMORY,
    say=sentences.said_related,
    bounds={"limit": {"minimum": 1, "maximum": 20, "default": 10}},
    replaced={"space": _READ_SPACE},
    space_default="read",
)
LIST_SPACES = ToolSpec(
    name="list_spaces",
    description=(
        "The shared memory spaces I belong to, with my role in each (reader, writer, "
        "admin, owner): where else I can search and store."
    ),
    op=ListSpaces,
    parameters=(),
    service=BASE_MEMORY,
    say=sentences.said_spaces,
)
SPACE_INFO = ToolSpec(
    name="space_info",
    description=(
        "A shared space's members and their roles, how many memories it holds, and its "
        "quota (members only)."
    ),
    op=SpaceInfo,
    parameters=("space",),
    service=BASE_MEMORY,
    say=sentences.said_space,
)
GET_WORKING_MEMORY = ToolSpec(
    name="get_working_memory",
    description=(
        "The working memory of a session: its current focus and the earlier ones, the "
        "findings and entities noted, and any question waiting for an answer."
    ),
    op=GetWorkingMemory,
    parameters=("session_id", "space"),
    service=INTERACTION_MEMORY,
    say=sentences.said_working_memory,
    replaced={"space": _SESSION_SPACE},
)
SET_FOCUS = ToolSpec(
    name="set_focus",
    description=(
        "Set what a working session is looking at now (a file, function, class, module or "
        "concept); the previous focus goes to the session's focus history."
    ),
    op=SetFocus,
    parameters=("session_id", "focus", "space"),
    service=INTERACTION_MEMORY,
    say=sentences.said_working_memory,
    replaced={"space": _SESSION_SPACE},
    hidden={"focus": ("set_at",)},
)
ADD_FINDING = ToolSpec(
    name="add_finding",
    description=(
        "Note something a working session found out (a bug, a risk, a decision), with its "
        "severity, where it is and what shows it, so the session and its space keep it."
    ),
    op=AddFinding,
    parameters=("session_id", "finding", "space"),
    service=INTERACTION_MEMORY,
    say=sentences.said_working_memory,
    replaced={"space": _SESSION_SPACE},
    hidden={"finding": ("id", "metadata", "created_at", "expires_at")},
)

TOOL_SPECS: tuple[ToolSpec, ...] = (
    REMEMBER_INTERACTION_INFO,
    STORE_MEMORY,
    SEARCH_MEMORIES,
    LIST_MEMORIES,
)
"""spade_llm's four memory tools, registered on an LLM agent with memory."""
MORE_TOOL_SPECS: tuple[ToolSpec, ...] = (
    GET_MEMORY,
    UPDATE_MEMORY,
    SUPERSEDE_MEMORY,
    RESTORE_MEMORY,
    DELETE_MEMORY,
    MEMORY_HISTORY,
    MEMORIES_ABOUT,
    RELATED_MEMORIES,
    LIST_SPACES,
    SPACE_INFO,
    GET_WORKING_MEMORY,
    SET_FOCUS,
    ADD_FINDING,
)
"""The rest of a memory, for an agent given ``extended`` tools and for MCP clients."""
EVERY_TOOL_SPEC: tuple[ToolSpec, ...] = TOOL_SPECS + MORE_TOOL_SPECS
"""Every memory tool, by which the MCP server lists its tools."""
