"""``spade-memory demo --check`` and the demo's start: a misconfigured model is one line
naming the model, the endpoint and the variable to set, with a non-zero exit and no
traceback; an endpoint that answers like OpenAI's passes."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest
from aiohttp import web

from spade_memory.testing import free_port

MODEL = "openai/tiny-test-model"


def spade_memory(
    *arguments: str, environment: Mapping[str, str]
) -> subprocess.CompletedProcess[str]:
    """``spade-memory ARGUMENTS`` in a process of its own, with only the model variables
    given (none of the provider's own: a developer's OPENAI_API_KEY must not help)."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("SPADE_MEMORY_LLM_") and not name.endswith("_API_KEY")
    }
    env.update(environment)
    return subprocess.run(
        [sys.executable, "-m", "spade_memory", *arguments],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip


def assert_one_line_failure(ran: subprocess.CompletedProcess[str], *named: str) -> str:
    """A non-zero exit, no traceback, and one line on stderr holding each of ``named``."""
    assert ran.returncode == 1, (ran.stdout, ran.stderr)
    assert "Traceback" not in ran.stdout + ran.stderr
    assert "Give Feedback" not in ran.stdout + ran.stderr  # litellm's banner
    (line,) = ran.stderr.strip().splitlines()
    for part in named:
        assert part in line, line
    return line


def test_an_endpoint_that_is_down() -> None:
    endpoint = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    for command in (("demo", "--check"), ("demo",)):  # the demo checks before it starts
        ran = spade_memory(
            *command,
            environment={"SPADE_MEMORY_LLM_MODEL": MODEL, "SPADE_MEMORY_LLM_BASE_URL": endpoint},
        )
        assert_one_line_failure(ran, MODEL, endpoint, "SPADE_MEMORY_LLM_BASE_URL")
        assert "memory agents" not in ran.stdout  # nothing started


def test_no_api_key() -> None:
    ran = spade_memory("demo", "--check", environment={"SPADE_MEMORY_LLM_MODEL": MODEL})
    line = assert_one_line_failure(
        ran, MODEL, "the provider's default endpoint", "SPADE_MEMORY_LLM_API_KEY"
    )
    assert "set SPADE_MEMORY_LLM_API_KEY" in line  # not only the provider's OPENAI_API_KEY


def test_a_model_name_litellm_does_not_know() -> None:
    ran = spade_memory(
        "demo", "--check", environment={"SPADE_MEMORY_LLM_MODEL": "no-provider-model"}
    )
    assert_one_line_failure(ran, "no-provider-model", "SPADE_MEMORY_LLM_MODEL")


@pytest.fixture
async def openai_like() -> AsyncIterator[tuple[str, list[dict[str, Any]]]]:
    """A tiny HTTP server answering chat completions as OpenAI's API does: its base URL
    and the requests it received (body and authorization)."""
    received: list[dict[str, Any]] = []

    async def completions(request: web.Request) -> web.Response:
        body = await request.json()
        received.append({"body": body, "authorization": request.headers.get("Authorization")})
        return web.json_response(
            {
                "id": "chatcmpl-test",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "OK"},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
            }
        )

    app = web.Application()
    app.router.add_post("/v1/chat/completions", completions)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield f"http://127.0.0.1:{port}/v1", received
    finally:
        await runner.cleanup()


async def test_an_endpoint_that_answers_passes(
    openai_like: tuple[str, list[dict[str, Any]]],
) -> None:
    endpoint, received = openai_like
    ran = await asyncio.to_thread(
        spade_memory,
        "demo", "--check",
        environment={"SPADE_MEMORY_LLM_MODEL": MODEL, "SPADE_MEMORY_LLM_BASE_URL": endpoint},
    )  # fmt: skip
    assert ran.returncode == 0, (ran.stdout, ran.stderr)
    assert f"model {MODEL} at {endpoint}: answers" in " ".join(ran.stdout.split())
    (asked,) = received
    assert asked["body"]["model"] == "tiny-test-model"
    assert asked["body"]["max_tokens"] == 1
    assert asked["authorization"] == "Bearer no-key"  # a local endpoint needs no key


def test_the_scripted_model_needs_no_check() -> None:
    ran = spade_memory("demo", "--check", environment={})
    assert ran.returncode == 0, ran.stderr
    assert "scripted" in ran.stdout
