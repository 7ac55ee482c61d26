"""Is the configured model reachable? One question to the model before the first turn.

A misconfigured model used to show up as tracebacks in the middle of a conversation and an
assistant answering ``litellm.InternalServerError``; the error asked for the provider's
own variable (``OPENAI_API_KEY``) rather than the one the user sets. ``check_model`` asks
the model for one token, with the settings the agent will use, and turns every failure
into one line that names the model, the endpoint and the variable to set.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import litellm
from litellm import exceptions as failures
from litellm.utils import validate_environment
from spade_llm.context import ContextManager
from spade_llm.providers.base_provider import BaseLLMProvider
from spade_llm.tools import LLMTool

from spade_memory.llm.providers import API_KEY_ENV, BASE_URL_ENV, MODEL_ENV, model_settings

CHECK_TIMEOUT = 30.0
"""Seconds the model has to answer the check (a cold local model loads first)."""


class ModelUnreachable(Exception):
    """The configured model did not answer; ``str()`` is one line for the user."""


@dataclass(frozen=True)
class ModelSettings:
    """The model an LLM agent will use, as the environment configures it."""

    model: str
    base_url: str | None = None
    api_key: str | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> ModelSettings | None:
        """The settings of ``SPADE_MEMORY_LLM_*``; None when no model is named."""
        model, base_url, api_key = model_settings(environ)
        return None if model is None else cls(model, base_url, api_key)

    @property
    def endpoint(self) -> str:
        """Where the model is asked, for messages."""
        return self.base_url or "the provider's default endpoint"

    def problem(self, what: str, variable: str) -> ModelUnreachable:
        """The one-line failure: model, endpoint, what is wrong, what to set."""
        return ModelUnreachable(f"model {self.model} at {self.endpoint}: {what}; set {variable}")


async def check_model(settings: ModelSettings, timeout: float = CHECK_TIMEOUT) -> None:
    """Ask the model for one token. Returns when it answers.

    Raises ``ModelUnreachable`` (one line) when no API key is configured for a provider
    that needs one (without asking), or when the endpoint is down, refuses the key or
    does not know the model.
    """
    missing = _missing_key(settings)
    if missing:
        raise settings.problem(f"no API key (the provider reads {missing})", API_KEY_ENV)
    banners, litellm.suppress_debug_info = litellm.suppress_debug_info, True  # "Get Help"
    try:
        await litellm.acompletion(
            model=settings.model,
            messages=[{"role": "user", "content": "Say OK."}],
            max_tokens=1,
            timeout=timeout,
            num_retries=0,
            api_key=settings.api_key,
            api_base=settings.base_url,
        )
    except Exception as error:  # litellm raises a different class per provider and HTTP status
        raise explain(settings, error) from None
    finally:
        litellm.suppress_debug_info = banners


def _missing_key(settings: ModelSettings) -> str | None:
    """The provider's own key variable when neither it nor ``SPADE_MEMORY_LLM_API_KEY`` is
    set (None with a base URL: a local endpoint may need no key)."""
    if settings.api_key or settings.base_url:
        return None
    try:
        found = validate_environment(model=settings.model)
    except Exception:  # an unknown provider: the call itself says so
        return None
    keys = [key for key in found.get("missing_keys", []) if key.endswith("_KEY")]
    return " or ".join(keys) or None


def explain(settings: ModelSettings, error: Exception) -> ModelUnreachable:
    """One line for what litellm raised: what is wrong and which variable to set."""
    text = str(error)
    if isinstance(error, failures.AuthenticationError | failures.PermissionDeniedError) or (
        "Missing credentials" in text or "api_key" in text
    ):
        return settings.problem("the API key is missing or refused", API_KEY_ENV)
    if "LLM Provider NOT provided" in text:
        return settings.problem(
            "not a model name LiteLLM knows (write provider/model, e.g. openai/gpt-4o-mini)",
            MODEL_ENV,
        )
    if isinstance(error, failures.NotFoundError):
        return settings.problem(
            "the endpoint does not know this model (or the URL lacks /v1)",
            f"{MODEL_ENV} or {BASE_URL_ENV}",
        )
    if isinstance(error, failures.Timeout):
        return settings.problem("no answer in time (is it running?)", BASE_URL_ENV)
    if isinstance(error, failures.APIConnectionError) or "Connection error" in text:
        return settings.problem("cannot connect (is it running?)", BASE_URL_ENV)
    first_line = (text.splitlines() or [type(error).__name__])[0][:200]
    return settings.problem(first_line, f"{MODEL_ENV}, {BASE_URL_ENV} or {API_KEY_ENV}")


class WatchedProvider(BaseLLMProvider):  # type: ignore[misc]
    """A provider that keeps its model's failure as one line (``failure``).

    spade_llm turns a failed turn into a reply ("Error processing your message: ...")
    and logs a traceback; with this around the provider, a program can tell the turn
    failed and say why in the words of the check.
    """

    def __init__(self, provider: BaseLLMProvider, settings: ModelSettings) -> None:
        super().__init__()
        self.provider = provider
        self.settings = settings
        self.failure: ModelUnreachable | None = None
        """The last failure of the model, as ``explain`` says it (None: none yet)."""

    async def get_llm_response(
        self,
        context: ContextManager,
        tools: list[LLMTool] | None = None,
        conversation_id: str | None = None,
        output_schema: Any | None = None,
    ) -> dict[str, Any]:
        """The wrapped provider's answer; its failure is kept, then raised as it was."""
        try:
            answer: dict[str, Any] = await self.provider.get_llm_response(
                context, tools, conversation_id, output_schema
            )
        except Exception as error:
            self.failure = explain(self.settings, error)
            raise
        return answer
