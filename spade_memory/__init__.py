"""spade_memory: shared, persistent memory for SPADE agents, served by XMPP agents."""

from .agents.base_memory import BaseMemoryAgent, BaseMemoryService
from .agents.interaction_memory import InteractionMemoryAgent, InteractionMemoryService
from .agents.serving import MemoryAgent, MemoryService
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
from .records import CATEGORIES, Category, Deleted, Memory, MemoryList, MemoryStats, Stored
from .session_memory import SessionMemory
from .stores.interaction import InteractionStore
from .stores.longterm import LongTermStore
from .working_memory import Clarification, EntityRef, Finding, Focus, WorkingMemory
from .working_memory_ops import WorkingMemoryState

__all__ = [
    "CATEGORIES",
    "ONTOLOGY",
    "AddInformation",
    "BadRequest",
    "BaseMemoryAgent",
    "BaseMemoryOp",
    "BaseMemoryService",
    "Category",
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
    "MemoryList",
    "MemoryMixin",
    "MemoryService",
    "MemoryServiceError",
    "MemoryStats",
    "MemoryStatsOp",
    "MemoryTimeout",
    "NotAuthorized",
    "RecentMemories",
    "ResourceConstraint",
    "SearchMemories",
    "SessionMemory",
    "StoreMemory",
    "Stored",
    "UpdateMemory",
    "WorkingMemory",
    "WorkingMemoryState",
]
