"""spade_memory: shared, persistent memory for SPADE agents, served by XMPP agents.

This package exports what an agent that *uses* memory needs: the client
(``MemoryClient``, ``MemoryMixin``), the ops, replies and errors of the protocol,
and the names of spaces. Importing it loads no store, database driver or model.
The memory services themselves are imported from their packages
(``spade_memory.base_memory.service``, ``spade_memory.serving``, ...).

The LLM integration (``MemoryLLMAgent``, ``memory_tools``, ``Recall``,
``ScriptedProvider``, ...) is imported on first use: spade_llm pulls in
litellm, which the memory agents themselves never need; it needs the ``llm`` extra.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

from spade_memory.client.beads import BeadsClient
from spade_memory.client.changes import SpaceChanges
from spade_memory.client.memories import FetchedMemories
from spade_memory.client.memory_client import MemoryClient, SpaceMemory
from spade_memory.client.mixin import MemoryMixin
from spade_memory.client.session import SessionMemory
from spade_memory.protocol.beads import SessionShared, ShareSession, UnshareSession
from spade_memory.protocol.conversation_stats import InteractionStats, InteractionStatsOp
from spade_memory.protocol.errors import (
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
from spade_memory.protocol.interaction import InteractionOp
from spade_memory.protocol.interaction_forget import ForgetInteractions, InteractionsForgotten
from spade_memory.protocol.limits import Limits
from spade_memory.protocol.memories import (
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
from spade_memory.protocol.notes import (
    AddInformation,
    ClearConversation,
    ConversationInfo,
    ExportConversation,
    GetAllConversations,
    GetContextSummary,
    GetInformation,
    InteractionsFile,
)
from spade_memory.protocol.ops import PERSONAL, Op, Record, Request
from spade_memory.protocol.space_names import EVERY, Role
from spade_memory.protocol.spaces import (
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
from spade_memory.protocol.working import WorkingMemoryState
from spade_memory.protocol.working_memory import (
    Clarification,
    EntityRef,
    Finding,
    Focus,
    WorkingMemory,
)
from spade_memory.xmpp.connect_errors import (
    AgentStartError,
    ConnectionRefused,
    HostUnreachable,
    TlsFailure,
    UnknownHost,
    WrongDomain,
    WrongPassword,
)
from spade_memory.xmpp.discovery import protocol_feature
from spade_memory.xmpp.lifecycle import start_agent, stop_agent
from spade_memory.xmpp.wire import ONTOLOGY

if TYPE_CHECKING:
    from spade_memory.llm.agent import MemoryLLMAgent, MemoryLLMBehaviour
    from spade_memory.llm.chat_user import ChatUser
    from spade_memory.llm.drop_in import AgentBaseMemory, AgentInteractionMemory
    from spade_memory.llm.providers import Reply, ScriptedProvider, ToolCall, provider_from_env
    from spade_memory.llm.recall import Recall
    from spade_memory.llm.tools import (
        TOOL_SPECS,
        MemoryConnection,
        MemoryTool,
        ToolSpec,
        memory_tools,
    )

_LLM = {
    "ChatUser": "llm.chat_user",
    "Recall": "llm.recall",
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
    module = _LLM.get(name)
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
    "AgentStartError",
    "BadRequest",
    "BaseMemoryOp",
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
    "ConnectionRefused",
    "ConversationInfo",
    "CreateSpace",
    "DeleteMemory",
    "DeleteSpace",
    "Deleted",
    "EntityRef",
    "ExportConversation",
    "FetchedMemories",
    "Finding",
    "Focus",
    "ForgetInteractions",
    "GetAllConversations",
    "GetContextSummary",
    "GetInformation",
    "GetMemory",
    "Grant",
    "HostUnreachable",
    "InteractionOp",
    "InteractionStats",
    "InteractionStatsOp",
    "InteractionsFile",
    "InteractionsForgotten",
    "InternalServerError",
    "ItemNotFound",
    "LeaveSpace",
    "Limits",
    "ListMemories",
    "ListSpaces",
    "Membership",
    "Memory",
    "MemoryClient",
    "MemoryConnection",
    "MemoryLLMAgent",
    "MemoryLLMBehaviour",
    "MemoryList",
    "MemoryMixin",
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
    "StoreMemory",
    "Stored",
    "Subscribe",
    "Subscribed",
    "TlsFailure",
    "ToolCall",
    "ToolSpec",
    "UnknownHost",
    "UnshareSession",
    "Unsubscribe",
    "UpdateMemory",
    "WorkingMemory",
    "WorkingMemoryState",
    "WrongDomain",
    "WrongPassword",
    "memory_tools",
    "protocol_feature",
    "provider_from_env",
    "start_agent",
    "stop_agent",
]
