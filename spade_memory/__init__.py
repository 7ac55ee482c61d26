"""spade_memory: shared, persistent memory for SPADE agents, served by XMPP agents.

The spade_llm integration (``MemoryLLMAgent``, ``memory_tools``,
``ScriptedProvider``, ...) is imported on first use: spade_llm pulls in
litellm, which the memory agents themselves never need.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .agents.base_memory import BaseMemoryAgent, BaseMemoryService
from .agents.interaction_memory import InteractionMemoryAgent, InteractionMemoryService
from .agents.serving import MemoryAgent, MemoryService
from .chat_user import ChatUser
from .client import Memories, MemoryClient
from .errors import (
    BadRequest,
    Condition,
    InternalServerError,
    ItemNotFound,
    MemoryServiceError,
    MemoryTimeout,
    NotAuthorized,
    ResourceConstraint,
)
from .interaction_ops import (
    AddInformation,
    ClearConversation,
    ConversationInfo,
    ExportConversation,
    GetAllConversations,
    GetContextSummary,
    GetInformation,
    InteractionOp,
    InteractionsFile,
)
from .limits import Limits
from .mixin import MemoryMixin
from .ops import (
    BaseMemoryOp,
    DeleteMemory,
    GetMemory,
    ListMemories,
    MemoryStatsOp,
    RecentMemories,
    SearchMemories,
    StoreMemory,
    UpdateMemory,
)
from .protocol import ONTOLOGY
from .recall import Recall
from .records import CATEGORIES, Category, Deleted, Memory, MemoryList, MemoryStats, Stored
from .session_memory import SessionMemory
from .stores.interaction import InteractionStore
from .stores.longterm import LongTermStore
from .working_memory import Clarification, EntityRef, Finding, Focus, WorkingMemory
from .working_memory_ops import WorkingMemoryState

if TYPE_CHECKING:
    from .llm_agent import MemoryLLMAgent, MemoryLLMBehaviour
    from .providers import Reply, ScriptedProvider, ToolCall, provider_from_env
    from .tools import TOOL_SPECS, MemoryConnection, MemoryTool, ToolSpec, memory_tools

_NEEDS_SPADE_LLM = {
    "MemoryLLMAgent": "llm_agent",
    "MemoryLLMBehaviour": "llm_agent",
    "Reply": "providers",
    "ScriptedProvider": "providers",
    "ToolCall": "providers",
    "provider_from_env": "providers",
    "TOOL_SPECS": "tools",
    "MemoryConnection": "tools",
    "MemoryTool": "tools",
    "ToolSpec": "tools",
    "memory_tools": "tools",
}


def __getattr__(name: str) -> Any:
    module = _NEEDS_SPADE_LLM.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f".{module}", __name__), name)


__all__ = [
    "CATEGORIES",
    "ONTOLOGY",
    "TOOL_SPECS",
    "AddInformation",
    "BadRequest",
    "BaseMemoryAgent",
    "BaseMemoryOp",
    "BaseMemoryService",
    "Category",
    "ChatUser",
    "Clarification",
    "ClearConversation",
    "Condition",
    "ConversationInfo",
    "DeleteMemory",
    "Deleted",
    "EntityRef",
    "ExportConversation",
    "Finding",
    "Focus",
    "GetAllConversations",
    "GetContextSummary",
    "GetInformation",
    "GetMemory",
    "InteractionMemoryAgent",
    "InteractionMemoryService",
    "InteractionOp",
    "InteractionStore",
    "InteractionsFile",
    "InternalServerError",
    "ItemNotFound",
    "Limits",
    "ListMemories",
    "LongTermStore",
    "Memories",
    "Memory",
    "MemoryAgent",
    "MemoryClient",
    "MemoryConnection",
    "MemoryLLMAgent",
    "MemoryLLMBehaviour",
    "MemoryList",
    "MemoryMixin",
    "MemoryService",
    "MemoryServiceError",
    "MemoryStats",
    "MemoryStatsOp",
    "MemoryTimeout",
    "MemoryTool",
    "NotAuthorized",
    "Recall",
    "RecentMemories",
    "Reply",
    "ResourceConstraint",
    "ScriptedProvider",
    "SearchMemories",
    "SessionMemory",
    "StoreMemory",
    "Stored",
    "ToolCall",
    "ToolSpec",
    "UpdateMemory",
    "WorkingMemory",
    "WorkingMemoryState",
    "memory_tools",
    "provider_from_env",
]
