"""spade_memory: shared, persistent memory for SPADE agents, served by XMPP agents.

This package exports what an agent that *uses* memory needs: the client
(``MemoryClient``, ``MemoryMixin``), the ops, replies and errors of the protocol,
and the names of spaces. Importing it loads no store, database driver or model.
The memory services themselves are imported from their packages
(``spade_memory.base_memory.service``, ``spade_memory.serving``, ...).

Every name is imported on first use, so ``import spade_memory`` (and the
``spade-memory`` command, which starts by importing it) costs next to nothing,
and a Ctrl-C during the command's imports is the command's to answer. The LLM
integration (``MemoryLLMAgent``, ``memory_tools``, ``Recall``, ...) needs the
``llm`` extra: spade_llm pulls in litellm, which the memory agents never need.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from spade_memory.client.beads import BeadsClient
    from spade_memory.client.changes import SpaceChanges
    from spade_memory.client.memories import FetchedMemories
    from spade_memory.client.memory_client import MemoryClient, SpaceMemory
    from spade_memory.client.mixin import MemoryMixin
    from spade_memory.client.session import SessionMemory
    from spade_memory.llm.agent import MemoryLLMAgent, MemoryLLMBehaviour
    from spade_memory.llm.chat_user import ChatUser
    from spade_memory.llm.drop_in import AgentBaseMemory, AgentInteractionMemory
    from spade_memory.llm.providers import Reply, ScriptedProvider, ToolCall, provider_from_env
    from spade_memory.llm.recall import Recall
    from spade_memory.llm.tools import MemoryConnection, MemoryTool, memory_tools
    from spade_memory.protocol.beads import SessionShared, ShareSession, UnshareSession
    from spade_memory.protocol.consolidation import Consolidated, ConsolidateMemories
    from spade_memory.protocol.conversation_stats import InteractionStats, InteractionStatsOp
    from spade_memory.protocol.errors import (
        BadRequest,
        Condition,
        Conflict,
        FeatureNotImplemented,
        InternalServerError,
        ItemNotFound,
        MemoryServiceError,
        MemoryTimeout,
        NotAuthorized,
        PendingApproval,
        ResourceConstraint,
        ServiceUnavailable,
    )
    from spade_memory.protocol.graph import Entity, EntityList
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
        ListEntities,
        ListMemories,
        MemoriesAbout,
        Memory,
        MemoryList,
        MemoryStats,
        MemoryStatsOp,
        RecentMemories,
        RelatedMemories,
        RestoreMemory,
        SearchMemories,
        Stored,
        StoreMemory,
        SupersedeMemory,
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
    from spade_memory.protocol.validity import PossibleConflict
    from spade_memory.protocol.working import WorkingMemoryState
    from spade_memory.protocol.working_memory import (
        Clarification,
        EntityRef,
        Finding,
        Focus,
        WorkingMemory,
    )
    from spade_memory.tools import EVERY_TOOL_SPEC, TOOL_SPECS, ToolSpec
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

_EXPORTS: dict[str, str] = {
    "client.beads": "BeadsClient",
    "client.changes": "SpaceChanges",
    "client.memories": "FetchedMemories",
    "client.memory_client": "MemoryClient SpaceMemory",
    "client.mixin": "MemoryMixin",
    "client.session": "SessionMemory",
    "protocol.beads": "SessionShared ShareSession UnshareSession",
    "protocol.conversation_stats": "InteractionStats InteractionStatsOp",
    "protocol.errors": (
        "BadRequest Condition Conflict FeatureNotImplemented InternalServerError ItemNotFound "
        "MemoryServiceError MemoryTimeout NotAuthorized PendingApproval ResourceConstraint "
        "ServiceUnavailable"
    ),
    "protocol.interaction": "InteractionOp",
    "protocol.interaction_forget": "ForgetInteractions InteractionsForgotten",
    "protocol.limits": "Limits",
    "protocol.memories": (
        "CATEGORIES BaseMemoryOp Category Change ChangeList ChangesSince "
        "Deleted DeleteMemory GetMemory ListMemories Memory MemoryList "
        "MemoryStats MemoryStatsOp RecentMemories SearchMemories Stored "
        "StoreMemory SupersedeMemory UpdateMemory RestoreMemory ListEntities MemoriesAbout "
        "RelatedMemories"
    ),
    "protocol.consolidation": "ConsolidateMemories Consolidated",
    "protocol.graph": "Entity EntityList",
    "protocol.validity": "PossibleConflict",
    "protocol.notes": (
        "AddInformation ClearConversation ConversationInfo ExportConversation "
        "GetAllConversations GetContextSummary GetInformation InteractionsFile"
    ),
    "protocol.ops": "PERSONAL Op Record Request",
    "protocol.space_names": "EVERY Role",
    "protocol.spaces": (
        "CreateSpace DeleteSpace Grant LeaveSpace ListSpaces Membership Revoke "
        "SpaceDetails SpaceDone SpaceInfo SpaceList SpaceSummary Subscribe "
        "Subscribed Unsubscribe"
    ),
    "protocol.working": "WorkingMemoryState",
    "protocol.working_memory": "Clarification EntityRef Finding Focus WorkingMemory",
    "xmpp.connect_errors": (
        "AgentStartError ConnectionRefused HostUnreachable TlsFailure "
        "UnknownHost WrongDomain WrongPassword"
    ),
    "xmpp.discovery": "protocol_feature",
    "xmpp.lifecycle": "start_agent stop_agent",
    "xmpp.wire": "ONTOLOGY",
    "llm.chat_user": "ChatUser",
    "llm.recall": "Recall",
    "llm.drop_in": "AgentBaseMemory AgentInteractionMemory",
    "llm.agent": "MemoryLLMAgent MemoryLLMBehaviour",
    "llm.providers": "Reply ScriptedProvider ToolCall provider_from_env",
    "llm.tools": "MemoryConnection MemoryTool memory_tools",
    "tools": "EVERY_TOOL_SPEC TOOL_SPECS ToolSpec",
}
"""The exported names of each module (space-separated), loaded on first use."""
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names.split()}


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value  # the next look-up is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_MODULE_OF])


__all__ = [
    "CATEGORIES",
    "EVERY",
    "EVERY_TOOL_SPEC",
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
    "ConsolidateMemories",
    "Consolidated",
    "ConversationInfo",
    "CreateSpace",
    "DeleteMemory",
    "DeleteSpace",
    "Deleted",
    "Entity",
    "EntityList",
    "EntityRef",
    "ExportConversation",
    "FeatureNotImplemented",
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
    "ListEntities",
    "ListMemories",
    "ListSpaces",
    "Membership",
    "MemoriesAbout",
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
    "PendingApproval",
    "PossibleConflict",
    "Recall",
    "RecentMemories",
    "Record",
    "RelatedMemories",
    "Reply",
    "Request",
    "ResourceConstraint",
    "RestoreMemory",
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
    "SupersedeMemory",
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
