"""An spade_llm agent with memory: one step, spade_llm's own flags.

Start the memory service first (``spade-memory run``), then:

    python examples/llm_agent.py

The model is scripted (no network) unless ``SPADE_MEMORY_LLM_MODEL`` names a
real one, e.g. ``openai/gpt-4o-mini`` with ``SPADE_MEMORY_LLM_API_KEY``, or
any OpenAI-compatible endpoint through ``SPADE_MEMORY_LLM_BASE_URL``; a real model
is asked for one token first, and one that does not answer stops the example with a
line naming the model, the endpoint and the variable to set.
``SPADE_MEMORY_PORT`` selects another XMPP port than 5222;
``SPADE_MEMORY_DOMAIN`` another XMPP domain than localhost;
``SPADE_MEMORY_BASE_POOL`` and ``SPADE_MEMORY_INTERACTION_POOL`` spread its memory
calls over several agents of each service (README, "Scaling out").
"""

from __future__ import annotations

import asyncio
import os
import sys

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no price list download

from spade_memory import (
    AgentStartError,
    ChatUser,
    MemoryLLMAgent,
    Reply,
    ScriptedProvider,
    ToolCall,
    start_agent,
    stop_agent,
)
from spade_memory.llm.model_check import ModelSettings, ModelUnreachable, check_model
from spade_memory.llm.providers import last_tool_result, provider_from_env

SCRIPT = [
    # first conversation: the model decides the fact is worth keeping
    ToolCall("store_memory", {"category": "fact", "content": "The staging API is at /api/v2"}),
    Reply("Got it."),
    # second conversation: it looks it up
    ToolCall("search_memories", {"query": "staging API"}),
    Reply(lambda prompt: last_tool_result(prompt)),
]


async def main() -> None:
    settings = ModelSettings.from_env()
    if settings is not None:  # before the first turn, not in the middle of one
        try:
            await check_model(settings)
        except ModelUnreachable as problem:
            raise SystemExit(f"llm_agent: {problem}") from None
    port = int(os.environ.get("SPADE_MEMORY_PORT", "5222"))
    domain = os.environ.get("SPADE_MEMORY_DOMAIN", "localhost")
    assistant = MemoryLLMAgent(
        f"llm-assistant@{domain}",
        "secret",
        provider_from_env() or ScriptedProvider(SCRIPT),
        system_prompt="You are a helpful assistant with long-term memory.",
        interaction_memory=True,  # remember_interaction_info + conversation notes in recall
        agent_base_memory=True,  # store_memory, search_memories, list_memories
        port=port,
    )
    user = ChatUser(f"llm-user@{domain}", "secret", port=port)
    await start_agent(assistant)
    await start_agent(user)
    try:
        assistant_jid = str(assistant.jid)
        print("1:", await user.ask(assistant_jid, "The staging API is at /api/v2.", "example-1"))
        print("2:", await user.ask(assistant_jid, "Where is the staging API?", "example-2"))
    finally:
        await stop_agent(user)
        await stop_agent(assistant)


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except AgentStartError as error:  # nothing listens there, a refused password, ...
        sys.exit(f"llm_agent: {error}")
    except KeyboardInterrupt:  # Ctrl-C: the agents were stopped on the way out
        print("llm_agent: interrupted", file=sys.stderr)
        sys.exit(130)
