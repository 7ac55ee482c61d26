"""``spade-memory demo --check`` and the demo's start: a misconfigured model is one line
naming the model, the endpoint and the variable to set, with a non-zero exit and no
traceback; an endpoint that answers like OpenAI's passes. The checks run through the
command's entry point in this process; a demo that runs, in a process of its own."""

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
from tests.support.command_line import Ran, in_process

MODEL = "openai/tiny-test-model"


PROVIDER_VARIABLES = tuple(
    name for name in os.environ if name.startswith("SPADE_MEMORY_LLM_") or name.endswith("_API_KEY")
)
"""Unset for every command here: a developer's OPENAI_API_KEY must not help."""


def checked(*arguments: str, environment: Mapping[str, str]) -> Ran:
    """``spade-memory ARGUMENTS`` through its entry point in this process (a check, or a
    demo that stops at its check), with only the model variables given."""
    return in_process(*arguments, env=environment, unset=PROVIDER_VARIABLES)


def spade_memory(
    *arguments: str, environment: Mapping[str, str]
) -> subprocess.CompletedProcess[str]:
    """``spade-memory ARGUMENTS`` in a process of its own (a demo that runs: its service
    takes the process's signals), with only the model variables given."""
    env = {name: value for name, value in os.environ.items() if name not in PROVIDER_VARIABLES}
    env.update(environment)
    return subprocess.run(
        [sys.executable, "-m", "spade_memory", *arguments],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip


def assert_one_line_failure(ran: Ran | subprocess.CompletedProcess[str], *named: str) -> str:
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
        ran = checked(
            *command,
            environment={"SPADE_MEMORY_LLM_MODEL": MODEL, "SPADE_MEMORY_LLM_BASE_URL": endpoint},
        )
        assert_one_line_failure(ran, MODEL, endpoint, "SPADE_MEMORY_LLM_BASE_URL")
        assert "memory agents" not in ran.stdout  # nothing started


def test_no_api_key() -> None:
    ran = checked("demo", "--check", environment={"SPADE_MEMORY_LLM_MODEL": MODEL})
    line = assert_one_line_failure(
        ran, MODEL, "the provider's default endpoint", "SPADE_MEMORY_LLM_API_KEY"
    )
    assert "set SPADE_MEMORY_LLM_API_KEY" in line  # not only the provider's OPENAI_API_KEY


def test_a_model_name_litellm_does_not_know() -> None:
    ran = checked("demo", "--check", environment={"SPADE_MEMORY_LLM_MODEL": "no-provider-model"})
    assert_one_line_failure(ran, "no-provider-model", "SPADE_MEMORY_LLM_MODEL")


class OpenAILike:
    """A tiny HTTP server answering chat completions as OpenAI's API does (``url``), that
    keeps the requests it received and refuses the key after ``answers`` of them."""

    def __init__(self) -> None:
        self.url = ""
        self.received: list[dict[str, Any]] = []
        self.answers: int | None = None


@pytest.fixture
async def openai_like() -> AsyncIterator[OpenAILike]:
    server = OpenAILike()

    async def completions(request: web.Request) -> web.Response:
        body = await request.json()
        auth = request.headers.get("Authorization")
        server.received.append({"body": body, "authorization": auth})
        if server.answers is not None and len(server.received) > server.answers:
            refused = {"message": "Incorrect API key provided", "code": "invalid_api_key"}
            return web.json_response({"error": refused}, status=401)
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
    server.url = f"http://127.0.0.1:{port}/v1"
    try:
        yield server
    finally:
        await runner.cleanup()


async def test_an_endpoint_that_answers_passes(openai_like: OpenAILike) -> None:
    endpoint, received = openai_like.url, openai_like.received
    ran = await asyncio.to_thread(  # a process: litellm's HTTP clients outlive a loop
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
    ran = checked("demo", "--check", environment={})
    assert ran.returncode == 0, ran.stderr
    assert "scripted" in ran.stdout


async def test_a_model_that_fails_in_a_turn_ends_the_demo_in_one_line(
    openai_like: OpenAILike,
) -> None:
    openai_like.answers = 1  # the check passes; the first turn is refused
    ran = await asyncio.to_thread(
        spade_memory,
        "demo",
        environment={"SPADE_MEMORY_LLM_MODEL": MODEL, "SPADE_MEMORY_LLM_BASE_URL": openai_like.url},
    )  # fmt: skip
    assert_one_line_failure(ran, MODEL, openai_like.url, "SPADE_MEMORY_LLM_API_KEY")
    assert "Session 2" not in ran.stdout  # it stopped at the failed session
    assert len(openai_like.received) >= 2
