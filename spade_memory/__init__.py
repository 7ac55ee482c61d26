"""spade_memory: shared, persistent memory for SPADE agents, served by XMPP agents."""

from .agents.base_memory import BaseMemoryAgent, BaseMemoryService
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
from .stores.longterm import LongTermStore

__all__ = [
    "CATEGORIES",
    "ONTOLOGY",
    "BadRequest",
    "BaseMemoryAgent",
    "BaseMemoryOp",
    "BaseMemoryService",
    "Category",
    "Condition",
    "DeleteMemory",
    "Deleted",
    "GetMemory",
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
    "StoreMemory",
    "Stored",
    "UpdateMemory",
]
