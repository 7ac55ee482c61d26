"""spade_memory: shared, persistent memory for SPADE agents, served by XMPP agents.

The spade_llm integration (``MemoryLLMAgent``, ``memory_tools``,
``ScriptedProvider``, ...) is imported on first use: spade_llm pulls in
litellm, which the memory agents themselves never need.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .base_memory.calls import Memories
from .base_memory.ops import (
    CATEGORIES,
    BaseMemoryOp,
    Category,
    Change,
    ChangeList,
    ChangesSince,
    Deleted,
    DeleteMemory,
    GetMemory,
    ListMemories,
    Memory,
    MemoryList,
    MemoryStats,
    MemoryStatsOp,
    RecentMemories,
    SearchMemories,
    Stored,
    StoreMemory,
    UpdateMemory,
)
from .base_memory.service import BaseMemoryAgent, BaseMemoryService
from .base_memory.store import LongTermStore
from .beads_sync.calls import BeadsClient
from .beads_sync.ops import SessionShared, ShareSession, UnshareSession
from .client import MemoryClient
from .discovery import protocol_feature
from .errors import (
    BadRequest,
    Condition,
    Conflict,
    InternalServerError,
    ItemNotFound,
    MemoryServiceError,
    MemoryTimeout,
    NotAuthorized,
    ResourceConstraint,
    ServiceUnavailable,
)
from .interaction.forget import ForgetInteractions, Forgotten
from .interaction.notes import (
    AddInformation,
    ClearConversation,
    ConversationInfo,
    ExportConversation,
    GetAllConversations,
    GetContextSummary,
    GetInformation,
    InteractionsFile,
)
from .interaction.ops import InteractionOp
from .interaction.service import InteractionMemoryAgent, InteractionMemoryService
from .interaction.session import SessionMemory
from .interaction.stats import InteractionStats, InteractionStatsOp
from .interaction.store import InteractionStore
from .interaction.working_memory import Clarification, EntityRef, Finding, Focus, WorkingMemory
from .interaction.working_ops import WorkingMemoryState
from .limits import Limits
from .llm.chat_user import ChatUser
from .llm.recall import Recall
from .mixin import MemoryMixin
from .ops import Op, Record, Request
from .plugin import MemoryService, ServicePlugin
from .serving import MemoryAgent
from .spaces import EVERY, PERSONAL
from .spaces.calls import SpaceMemory
from .spaces.changes import SpaceChanges
from .spaces.declared import SpacesFile, SpacesFileError
from .spaces.names import Role
from .spaces.ops import (
    CreateSpace,
    DeleteSpace,
    Grant,
    LeaveSpace,
    ListSpaces,
    Membership,
    Revoke,
    SpaceDetails,
    SpaceDone,
    SpaceInfo,
    SpaceList,
    SpaceSummary,
    Subscribe,
    Subscribed,
    Unsubscribe,
)
from .wire import ONTOLOGY

if TYPE_CHECKING:
    from .llm.agent import MemoryLLMAgent, MemoryLLMBehaviour
    from .llm.drop_in import AgentBaseMemory, AgentInteractionMemory
    from .llm.providers import Reply, ScriptedProvider, ToolCall, provider_from_env
    from .llm.tools import TOOL_SPECS, MemoryConnection, MemoryTool, ToolSpec, memory_tools

_NEEDS_SPADE_LLM = {
    "AgentBaseMemory": "llm.drop_in",
    "AgentInteractionMemory": "llm.drop_in",
    "MemoryLLMAgent": "llm.agent",
    "MemoryLLMBehaviour": "llm.agent",
    "Reply": "llm.providers",
    "ScriptedProvider": "llm.providers",
    "ToolCall": "llm.providers",
    "provider_from_env": "llm.providers",
    "TOOL_SPECS": "llm.tools",
    "MemoryConnection": "llm.tools",
    "MemoryTool": "llm.tools",
    "ToolSpec": "llm.tools",
    "memory_tools": "llm.tools",
}


def __getattr__(name: str) -> Any:
    module = _NEEDS_SPADE_LLM.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f".{module}", __name__), name)


__all__ = [
    "CATEGORIES",
    "EVERY",
    "ONTOLOGY",
    "PERSONAL",
    "TOOL_SPECS",
    "AddInformation",
    "AgentBaseMemory",
    "AgentInteractionMemory",
    "BadRequest",
    "BaseMemoryAgent",
    "BaseMemoryOp",
    "BaseMemoryService",
    "BeadsClient",
    "Category",
    "Change",
    "ChangeList",
    "ChangesSince",
    "ChatUser",
    "Clarification",
    "ClearConversation",
    "Condition",
    "Conflict",
    "ConversationInfo",
    "CreateSpace",
    "DeleteMemory",
    "DeleteSpace",
    "Deleted",
    "EntityRef",
    "ExportConversation",
    "Finding",
    "Focus",
    "ForgetInteractions",
    "Forgotten",
    "GetAllConversations",
    "GetContextSummary",
    "GetInformation",
    "GetMemory",
    "Grant",
    "InteractionMemoryAgent",
    "InteractionMemoryService",
    "InteractionOp",
    "InteractionStats",
    "InteractionStatsOp",
    "InteractionStore",
    "InteractionsFile",
    "InternalServerError",
    "ItemNotFound",
    "LeaveSpace",
    "Limits",
    "ListMemories",
    "ListSpaces",
    "LongTermStore",
    "Membership",
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
    "Op",
    "Recall",
    "RecentMemories",
    "Record",
    "Reply",
    "Request",
    "ResourceConstraint",
    "Revoke",
    "Role",
    "ScriptedProvider",
    "SearchMemories",
    "ServicePlugin",
    "ServiceUnavailable",
    "SessionMemory",
    "SessionShared",
    "ShareSession",
    "SpaceChanges",
    "SpaceDetails",
    "SpaceDone",
    "SpaceInfo",
    "SpaceList",
    "SpaceMemory",
    "SpaceSummary",
    "SpacesFile",
    "SpacesFileError",
    "StoreMemory",
    "Stored",
    "Subscribe",
    "Subscribed",
    "ToolCall",
    "ToolSpec",
    "UnshareSession",
    "Unsubscribe",
    "UpdateMemory",
    "WorkingMemory",
    "WorkingMemoryState",
    "memory_tools",
    "protocol_feature",
    "provider_from_env",
]
