"""Where an LLM agent's answers come from: a script (tests, demo) or a real model.

``ScriptedProvider`` is an spade_llm provider with no network: each call to
the "model" plays the next step of a script (tool calls or a reply, either
fixed or computed from what the model was shown), and every prompt is kept,
so a test can check what recall and the tools put in front of the model.
``provider_from_env`` builds spade_llm's real provider when the user
configures one.
"""

from __future__ import annotations

import itertools
import os
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from spade_llm.context import ContextManager
from spade_llm.providers import LLMProvider
from spade_llm.providers.base_provider import BaseLLMProvider
from spade_llm.tools import LLMTool

from spade_memory.tools.provenance import RECALL_NOTICE, RECALL_OPEN, data_of

Prompt = list[dict[str, Any]]
"""The messages the model is shown, as spade_llm builds them."""

MODEL_ENV = "SPADE_MEMORY_LLM_MODEL"
BASE_URL_ENV = "SPADE_MEMORY_LLM_BASE_URL"
API_KEY_ENV = "SPADE_MEMORY_LLM_API_KEY"


@dataclass(frozen=True)
class ToolCall:
    """The model asks for one tool call."""

    name: str
    arguments: dict[str, Any] | Callable[[Prompt], dict[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class Reply:
    """The model answers with text (fixed, or computed from the prompt)."""

    text: str | Callable[[Prompt], str]


Step = Reply | ToolCall | Sequence[ToolCall]
"""One call of the model: a reply, a tool call, or several tool calls at once."""


def last_user_message(prompt: Prompt) -> str:
    """The newest message from the user in ``prompt`` ("" if none)."""
    return next((str(m["content"]) for m in reversed(prompt) if m["role"] == "user"), "")


def last_tool_result(prompt: Prompt) -> str:
    """The newest tool result in ``prompt`` ("" if none)."""
    return next((str(m["content"]) for m in reversed(prompt) if m["role"] == "tool"), "")


def recalled(prompt: Prompt) -> str:
    """The recall block in ``prompt``: the memories recalled for the turn, as JSON between
    delimiters, in the message after the recall's system line ("" if none)."""
    for notice, block in itertools.pairwise(prompt):
        if notice["role"] == "system" and notice["content"] == RECALL_NOTICE:
            content = str(block["content"])
            return content if block["role"] == "user" and content.startswith(RECALL_OPEN) else ""
    return ""


def recalled_data(prompt: Prompt) -> dict[str, Any]:
    """The recall block in ``prompt`` as the value it holds (``{}`` if none):
    ``conversation_notes`` and ``memories``, each with its author (and space)."""
    block = recalled(prompt)
    return dict(data_of(block)) if block else {}


class ScriptedProvider(BaseLLMProvider):  # type: ignore[misc]
    """A model that plays back ``steps``, one per call, then ``then`` forever."""

    def __init__(self, steps: Iterable[Step] = (), then: Step | None = None) -> None:
        super().__init__()
        self.steps: deque[Step] = deque(steps)
        self.then: Step = then if then is not None else Reply("(the script has ended)")
        self.prompts: list[Prompt] = []

    def extend(self, steps: Iterable[Step]) -> None:
        """Add steps to play after the current ones."""
        self.steps.extend(steps)

    async def get_llm_response(
        self,
        context: ContextManager,
        tools: list[LLMTool] | None = None,
        conversation_id: str | None = None,
        output_schema: Any | None = None,
    ) -> dict[str, Any]:
        """The next step of the script, as spade_llm's provider answer; the prompt is kept."""
        prompt: Prompt = context.get_prompt(conversation_id)
        self.prompts.append(prompt)
        step = self.steps.popleft() if self.steps else self.then
        if isinstance(step, Reply):
            text = step.text(prompt) if callable(step.text) else step.text
            return {"text": text, "tool_calls": [], "structured": None}
        calls = [step] if isinstance(step, ToolCall) else list(step)
        number = len(self.prompts)
        return {
            "text": None,
            "structured": None,
            "tool_calls": [
                {
                    "id": f"call_{number}_{index}",
                    "name": call.name,
                    "arguments": call.arguments(prompt)
                    if callable(call.arguments)
                    else call.arguments,
                }
                for index, call in enumerate(calls)
            ],
        }


KEYLESS = "no-key"
"""The key sent to an endpoint of ``SPADE_MEMORY_LLM_BASE_URL`` when none is set: local
OpenAI-compatible servers need none, but the OpenAI client refuses to send nothing."""


def model_settings(
    environ: Mapping[str, str] = os.environ,
) -> tuple[str | None, str | None, str | None]:
    """``(model, base_url, api_key)`` from ``SPADE_MEMORY_LLM_*`` (None for what is unset;
    with a base URL and no key, ``KEYLESS``)."""
    model = environ.get(MODEL_ENV) or None
    base_url = environ.get(BASE_URL_ENV) or None
    api_key = environ.get(API_KEY_ENV) or (KEYLESS if base_url else None)
    return model, base_url, api_key


def provider_from_env() -> BaseLLMProvider | None:
    """spade_llm's provider for the model named in ``SPADE_MEMORY_LLM_MODEL``
    (a LiteLLM name such as ``openai/gpt-4o-mini``), with ``SPADE_MEMORY_LLM_BASE_URL``
    for any OpenAI-compatible endpoint and ``SPADE_MEMORY_LLM_API_KEY``; None if unset.
    ``model_check.check_model`` says in one line whether it answers."""
    model, base_url, api_key = model_settings()
    if model is None:
        return None
    return LLMProvider(model=model, base_url=base_url, api_key=api_key)
