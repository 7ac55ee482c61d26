"""An spade_llm ``LLMAgent`` whose memory lives in the memory agents.

``MemoryLLMAgent`` takes spade_llm's own flags, ``interaction_memory`` and
``agent_base_memory``, but ``True`` (or a memory agent's JID) means the
memory agents over XMPP instead of local files: the memory tools are
registered automatically and, before each turn, the conversation's notes and
the most relevant long-term memories are recalled into the context.

It also mends traps of spade_llm 0.3.0: messages de-duplicated by
``id(message)`` were dropped, ``add_tool`` registered a tool twice, the XMPP
``port`` was ignored, and replies tagged ``message_type=llm`` started new LLM
turns (memory replies carry only the memory ontology and go to the client's
reply router, never to the LLM behaviour).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spade_llm.agent import LLMAgent
from spade_llm.behaviour import LLMBehaviour
from spade_llm.providers.base_provider import BaseLLMProvider
from spade_llm.tools import LLMTool

from spade_memory.client.memory_client import MemoryClient
from spade_memory.llm.recall import Recall, recall_messages, recall_text
from spade_memory.llm.tools import MemoryConnection, memory_tools

RECALL_MARK = "spade_memory_recall"
"""Key marking the recall messages in spade_llm's context (not sent to the model)."""


class _NothingSeen(set[str]):
    """Stands in for spade_llm's ``_processed_messages``.

    spade_llm skips a message whose ``msg.id`` it has seen, but that id is
    ``id(message)``, a memory address Python reuses: distinct messages were
    dropped as "already processed" (183 of 1,000 in-process). XMPP delivers a
    stanza once, so nothing needs skipping.
    """

    def __contains__(self, item: object) -> bool:
        return False

    def add(self, item: str) -> None:
        return None


class MemoryLLMBehaviour(LLMBehaviour):  # type: ignore[misc]
    """spade_llm's LLM loop, with recall before each turn and no lost messages."""

    def __init__(
        self,
        *,
        connection: MemoryConnection,
        recall: Recall,
        notes: bool,
        long_term: bool,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._processed_messages = _NothingSeen()
        self.connection = connection
        self.recall = recall
        self._recall_notes = notes
        self._recall_long_term = long_term

    async def _inject_interaction_memory(self, conversation_id: str) -> None:
        """spade_llm's hook before the model is called: put the recall in the context."""
        client = self.connection.client
        if not self.recall.enabled or client is None:
            return
        history: list[dict[str, Any]] = self.context.get_conversation_history(conversation_id)
        if not history or history[-1].get("role") != "user":
            return
        incoming = str(history[-1].get("content") or "")
        text = await recall_text(
            client,
            self.recall,
            conversation_id,
            incoming,
            notes=self._recall_notes,
            long_term=self._recall_long_term,
            me=str(self.agent.jid.bare),
            space=self.connection.readable,
        )
        # One recall per conversation, refreshed each turn: the context does not grow with it.
        history[:] = [message for message in history if not message.get(RECALL_MARK)]
        if text is not None:
            marked = [{**message, RECALL_MARK: True} for message in recall_messages(text)]
            history[len(history) - 1 : len(history) - 1] = marked


class MemoryLLMAgent(LLMAgent):  # type: ignore[misc]
    """An LLM agent with memory, created in one step.

    ``interaction_memory`` / ``agent_base_memory``: ``True`` for the memory
    agent of this agent's domain (``interaction-memory@…``, ``base-memory@…``),
    a JID string for another one, ``False`` (spade_llm's default) for none.
    ``recall``: ``True``/``False`` or a ``Recall`` with its bounds.
    ``spaces``: shared spaces that recall, ``search_memories`` and ``list_memories`` draw
    on beside the agent's own; ``default_space``: where ``store_memory`` stores when the
    model names no space (default: the agent's own).
    ``memory_timeout``: seconds a tool waits for a memory agent (it retries once).
    ``extended_tools``: also the tools that read, correct, forget and trace one memory,
    the spaces' and a working session's (``memory_tools(extended=True)``).
    ``port``: the XMPP server's client port (spade_llm's ``LLMAgent`` drops it).
    """

    def __init__(
        self,
        jid: str,
        password: str,
        provider: BaseLLMProvider,
        *,
        interaction_memory: bool | str = False,
        agent_base_memory: bool | str = False,
        recall: Recall | bool = True,
        spaces: Sequence[str] = (),
        default_space: str | None = None,
        memory_timeout: float = 5.0,
        extended_tools: bool = False,
        port: int = 5222,
        **kwargs: Any,
    ) -> None:
        for flag in (interaction_memory, agent_base_memory):
            if not isinstance(flag, bool | str):
                raise TypeError(
                    "interaction_memory and agent_base_memory take a bool or a memory agent's JID"
                )
        super().__init__(jid, password, provider, **kwargs)
        self.xmpp_port = port  # spade_llm does not pass SPADE's port on
        if isinstance(spaces, str):
            raise TypeError("spaces takes a list of space names")
        self.connection = MemoryConnection.from_flags(
            agent_base_memory, interaction_memory, memory_timeout,
            spaces=spaces, default_space=default_space,
        )  # fmt: skip
        self.memory: MemoryClient = self.connection.bind(self)
        for tool in memory_tools(
            agent_base_memory=agent_base_memory,
            interaction_memory=interaction_memory,
            connection=self.connection,
            extended=extended_tools,
        ):
            self._register_tool(tool)
        settings = recall if isinstance(recall, Recall) else Recall(enabled=recall)
        # Rebuilt with everything spade_llm's constructor gave the one it made.
        self.llm_behaviour = MemoryLLMBehaviour(
            connection=self.connection,
            recall=settings,
            notes=bool(interaction_memory),
            long_term=bool(agent_base_memory),
            llm_provider=self.provider,
            reply_to=self.reply_to,
            routing_function=self.routing_function,
            context_manager=self.context,
            termination_markers=self.termination_markers,
            max_interactions_per_conversation=self.max_interactions_per_conversation,
            on_conversation_end=self.on_conversation_end,
            tools=self.tools,
            input_guardrails=self.input_guardrails,
            output_guardrails=self.output_guardrails,
            on_guardrail_trigger=self.on_guardrail_trigger,
            output_schema=self.output_schema,
        )
        # spade_llm replaces an empty list with a new one; keep one list for both.
        self.llm_behaviour.tools = self.tools

    def add_tool(self, tool: LLMTool) -> None:
        """Register ``tool`` once (spade_llm's ``add_tool`` appends it to the list the
        agent and its behaviour share, twice)."""
        if tool not in self.tools:
            self._register_tool(tool)
