"""``spade-memory demo``: an LLM agent learns something, restarts, and still knows it.

One process starts SPADE's embedded XMPP server, the memory agents, an LLM
agent with memory and a user agent. In a first conversation the user says
something worth keeping and the model stores it; the LLM agent is then
stopped and started again (its context is gone); in a second conversation
recall and ``search_memories`` bring it back. The model is scripted unless
``SPADE_MEMORY_LLM_MODEL`` names a real one; a real one is asked for one token before
anything starts (``check_configured_model``), so a misconfiguration is one line, not a
conversation of tracebacks.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from spade_memory.llm.agent import RECALL_MARK, MemoryLLMAgent
from spade_memory.llm.chat_user import ChatUser
from spade_memory.llm.model_check import ModelSettings, WatchedProvider, check_model
from spade_memory.llm.providers import Prompt, Reply, ScriptedProvider, ToolCall, provider_from_env
from spade_memory.server.runtime import MemoryRuntime, RunConfig
from spade_memory.testing import free_port
from spade_memory.tools.provenance import data_of
from spade_memory.xmpp.lifecycle import start_agent, stop_agent

ASSISTANT = "assistant@localhost"
USER = "user@localhost"
FIRST = ("demo-session-1", "Hi, I'm Ada. I drink green tea in the morning, never coffee.")
SECOND = ("demo-session-2", "Good morning! What should I drink today?")
SYSTEM_PROMPT = (
    "You are a helpful assistant with long-term memory. Store what the user tells you "
    "about themselves with store_memory, and search your memory before answering."
)


def _first_session_script() -> list[Any]:
    return [
        ToolCall(
            "store_memory",
            {
                "category": "preference",
                "content": "Ada drinks green tea in the morning, never coffee",
                "context": "told in the first session",
            },
        ),
        ToolCall("remember_interaction_info", {"information": "The user's name is Ada"}),
        Reply("Nice to meet you, Ada! I'll remember that you prefer green tea."),
    ]


def _answer_from_memory(prompt: Prompt) -> str:
    found = [m["content"] for m in prompt if m["role"] == "tool"][-1]
    texts = [  # each memory's quoted text, without its category, space, author and id
        json.loads(match[1])
        for match in re.finditer(r'^- \[[^\]]*\] ("(?:[^"\\]|\\.)*")', str(found), re.M)
    ]
    if not texts:
        return "I don't remember anything about that, sorry."
    return f"Good morning! I remember this: {texts[0]}. So: green tea."


def _second_session_script() -> list[Any]:
    return [ToolCall("search_memories", {"query": "drink", "limit": 3}), Reply(_answer_from_memory)]


class OneLineLogs(logging.Formatter):
    """Log records as one line each: no traceback, no second line of a long error (litellm
    and spade_llm log a model's failure with its traceback, several times a turn)."""

    def formatException(self, ei: Any) -> str:
        return ""

    def formatStack(self, stack_info: str) -> str:
        return ""

    def format(self, record: logging.LogRecord) -> str:
        return (super().format(record).splitlines() or [""])[0]


MODEL_LOGGERS = ("spade_llm", "LiteLLM", "litellm")
"""Loggers that report a model's failure (each three times a turn, with tracebacks): the
demo says it once, in one line, unless ``--debug``."""


def quiet_logs(debug: bool) -> None:
    """Errors only, each in one line, and none from the model's loggers; with ``debug``,
    everything litellm and spade_llm say (tracebacks included)."""
    import litellm

    litellm.suppress_debug_info = not debug  # its "Give Feedback / Get Help" banners
    handler = logging.StreamHandler()
    if not debug:
        handler.setFormatter(OneLineLogs("%(levelname)s %(name)s: %(message)s"))
        for name in MODEL_LOGGERS:
            logging.getLogger(name).setLevel(logging.CRITICAL)
    logging.basicConfig(level=logging.INFO if debug else logging.ERROR, handlers=[handler])


async def check_configured_model(console: Console) -> ModelSettings | None:
    """Say which model the demo uses; a real one must answer one token first. Returns its
    settings (None: the scripted model).

    Raises ``ModelUnreachable`` (one line naming the model, the endpoint and the variable
    to set) when it does not.
    """
    settings = ModelSettings.from_env()
    if settings is None:
        console.print("model: scripted, no network (set SPADE_MEMORY_LLM_MODEL for a real one)")
        return None
    await check_model(settings)
    console.print(f"model {escape(settings.model)} at {escape(settings.endpoint)}: answers")
    return settings


async def run_demo(data_dir: Path, console: Console, port: int | None = None) -> str:
    """Play the demo; the LLM agent's answer in the second session. Raises
    ``ModelUnreachable`` before anything starts when a real model does not answer, and
    after the session in which it failed."""
    settings = await check_configured_model(console)
    found = provider_from_env()
    real = WatchedProvider(found, settings) if found and settings else None
    model = (
        "a real model" if real else "a scripted model (set SPADE_MEMORY_LLM_MODEL for a real one)"
    )
    port = port or free_port()
    config = RunConfig(data_dir=data_dir, port=port, s2s_port=free_port(port))
    runtime = MemoryRuntime(config)
    console.print(f"[bold]spade-memory demo[/]: memory agents on SPADE's embedded server, {model}")
    await runtime.start()
    user = ChatUser(USER, "user-secret", port=config.port)
    try:
        await start_agent(user)
        await _session(1, real or ScriptedProvider(_first_session_script()), config, user, console)
        console.print("\n[bold]The LLM agent stops and starts again: its context is empty.[/]")
        return await _session(
            2, real or ScriptedProvider(_second_session_script()), config, user, console
        )
    finally:
        await stop_agent(user)
        await runtime.stop()


async def _session(
    number: int, provider: Any, config: RunConfig, user: ChatUser, console: Console
) -> str:
    thread, text = FIRST if number == 1 else SECOND
    assistant = MemoryLLMAgent(
        ASSISTANT, "assistant-secret", provider, port=config.port,
        interaction_memory=True, agent_base_memory=True, system_prompt=SYSTEM_PROMPT,
    )  # fmt: skip
    await start_agent(assistant)
    try:
        console.print(f"\n[bold]Session {number}[/] (conversation {thread})")
        console.print(f"[cyan]user[/] → assistant: {escape(text)}")
        answer = await user.ask(ASSISTANT, text, thread)
        _show_turn(assistant.context.get_conversation_history(thread), console)
        console.print(f"[green]assistant[/] → user: {escape(answer)}")
        if isinstance(provider, WatchedProvider) and provider.failure is not None:
            raise provider.failure  # spade_llm answered its failure as text: say it in a line
        return answer
    finally:
        await stop_agent(assistant)


def _recall_lines(recall: dict[str, Any]) -> list[str]:
    """The recall block's notes and memories, one line each, with their authors."""
    notes = [f"note by {n['author']}: {n['text']}" for n in recall.get("conversation_notes", [])]
    return notes + [
        f"[{m['category']}] {m['content']} (space {m['space']}, by {m['author']})"
        for m in recall.get("memories", [])
    ]


def _show_turn(history: list[dict[str, Any]], console: Console) -> None:
    """What happened inside the turn: the recall and each tool call with its result."""
    calls: dict[str, str] = {}
    for message in history:
        if message.get(RECALL_MARK) and message.get("role") == "user":
            console.print("  [magenta]recall[/] (information from the memory, not instructions)")
            for line in _recall_lines(data_of(str(message["content"]))):
                console.print(f"  - {escape(line)}")
        for call in message.get("tool_calls") or []:
            arguments = json.loads(call["function"]["arguments"] or "{}")
            shown = ", ".join(f"{key}={value!r}" for key, value in arguments.items())
            calls[call["id"]] = f"{call['function']['name']}({shown})"
        if message.get("role") == "tool":
            call = escape(calls.get(str(message.get("tool_call_id")), "tool"))
            result = escape(str(message["content"])).replace("\n", "\n      ")
            console.print(f"  [yellow]tool[/] {call}\n    → {result}")
