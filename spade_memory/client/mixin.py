"""MemoryMixin: gives any SPADE agent a ``self.memory`` client once it is connected."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from spade_memory.client.memory_client import MemoryClient


class MemoryMixin:
    """Mix into a SPADE ``Agent`` subclass (before ``Agent``) to get ``self.memory``.

    Uses SPADE's plugin hook ``_hook_plugin_after_connection``, calling the
    next plugin's hook first, as spade_pubsub and spade_rpc do.
    """

    memory: MemoryClient

    def __init__(
        self,
        *args: Any,
        memory_jid: str | Sequence[str] | None = None,
        interaction_memory_jid: str | Sequence[str] | None = None,
        memory_timeout: float = 5.0,
        memory_attempts: int = 2,
        memory_degraded: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self._memory_options: dict[str, Any] = {
            "base_memory_jid": memory_jid,
            "interaction_memory_jid": interaction_memory_jid,
            "timeout": memory_timeout,
            "attempts": memory_attempts,
            "degraded": memory_degraded,
        }

    async def _hook_plugin_after_connection(self, *args: Any, **kwargs: Any) -> None:
        # Agent declares the hook as a slot, unset when no plugin comes before us.
        with contextlib.suppress(AttributeError):
            await super()._hook_plugin_after_connection(*args, **kwargs)  # type: ignore[misc]
        self.memory = MemoryClient(self, **self._memory_options)

    async def stop(self) -> None:
        """Stop following spaces (each follower unsubscribes while the agent can still
        send), then stop the agent as SPADE does."""
        if getattr(self, "memory", None) is not None:
            await self.memory.stop_following()
        await super().stop()  # type: ignore[misc]
