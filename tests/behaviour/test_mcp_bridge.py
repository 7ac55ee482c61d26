"""The MCP server's parts that need no running service: its tools against the specs,
resource URIs, what a call tells watchers of, HTTP addresses and the bearer token."""

from __future__ import annotations

from typing import Any

import pytest

from spade_memory.http.address import allowed_hosts, http_address
from spade_memory.mcp_bridge.resources import Resource, parse
from spade_memory.mcp_bridge.tools import TOOLS, Done, failure
from spade_memory.mcp_bridge.transports import BearerToken
from spade_memory.mcp_bridge.watch import touched
from spade_memory.protocol.errors import Condition
from spade_memory.protocol.memories import Deleted, DeleteMemory, Stored, StoreMemory
from spade_memory.protocol.working import GetWorkingMemory, SetFocus
from spade_memory.protocol.working_memory import Focus
from spade_memory.tools import EVERY_TOOL_SPEC


def test_every_tool_spec_is_an_mcp_tool_with_its_schema() -> None:
    assert [(t.name, t.description, t.input_schema) for t in TOOLS] == [
        (spec.name, spec.description, spec.schema()) for spec in EVERY_TOOL_SPEC
    ]


@pytest.mark.parametrize(
    ("resource", "uri"),
    [
        (Resource(), "memory://spaces/personal/recent"),
        (Resource("team"), "memory://spaces/team/recent"),
        (Resource("personal", "s1"), "memory://sessions/s1"),
        (Resource("personal", "pr/42 é"), "memory://sessions/pr%2F42%20%C3%A9"),
        (Resource("team", "a/b"), "memory://spaces/team/sessions/a%2Fb"),
    ],
)
def test_a_resource_uri_names_it_both_ways(resource: Resource, uri: str) -> None:
    assert resource.uri == uri
    assert parse(uri) == resource


@pytest.mark.parametrize(
    "uri",
    [
        "file:///etc/passwd", "memory://spaces//recent", "memory://spaces/team",
        "memory://spaces/team/recent/more", "memory://sessions/", "memory://other/x",
        "memory://spaces/team/sessions/", "",
    ],
)  # fmt: skip
def test_a_uri_of_no_resource_is_none(uri: str) -> None:
    assert parse(uri) is None


def test_a_space_resource_is_told_by_notices_the_rest_by_this_servers_calls() -> None:
    assert Resource("team").shared_space == "team"
    assert Resource("team", "s").shared_space == "team"
    assert Resource().shared_space is None
    assert Resource("personal", "s").shared_space is None
    focus = Focus(type="file", id="a", name="a")
    state: Any = None
    assert touched(Done(SetFocus(session_id="s", focus=focus), state)) == [
        Resource("personal", "s")
    ]
    shared_focus = SetFocus(session_id="s", space="team", focus=focus)
    assert touched(Done(shared_focus, state)) == []  # the session notice tells
    assert touched(Done(GetWorkingMemory(session_id="s"), state)) == []
    assert touched(Done(StoreMemory(category="fact", content="x"), Stored(id="1"))) == [Resource()]
    shared = StoreMemory(category="fact", content="x", space="team")
    assert touched(Done(shared, Stored(id="1"))) == []  # its space's notice tells
    assert touched(Done(DeleteMemory(id="1"), Deleted(id="1"))) == [Resource()]


def test_a_tool_error_carries_the_typed_failure() -> None:
    result = failure(Condition.RESOURCE_CONSTRAINT, "store_memory was not done: …", "busy", 0.5)
    assert result.is_error
    assert result.structured_content == {
        "condition": "resource-constraint", "text": "busy", "retry_after": 0.5,
    }  # fmt: skip


@pytest.mark.parametrize(
    ("given", "host", "port", "loopback", "private"),
    [
        ("8765", "127.0.0.1", 8765, True, True),
        (":8765", "127.0.0.1", 8765, True, True),
        ("localhost:80", "localhost", 80, True, False),
        ("127.0.0.2:80", "127.0.0.2", 80, True, False),
        ("0.0.0.0:8765", "0.0.0.0", 8765, False, False),
        ("[::1]:8765", "::1", 8765, True, True),
        ("[::]:8765", "::", 8765, False, False),
        ("192.168.1.7:8765", "192.168.1.7", 8765, False, False),
        ("memory.example.org:443", "memory.example.org", 443, False, False),
    ],
)
def test_an_http_address_defaults_to_this_machine(
    given: str, host: str, port: int, loopback: bool, private: bool
) -> None:
    """``private``: served without a token (127.0.0.1 and ::1 exactly)."""
    address = http_address(given)
    assert (address.host, address.port, address.loopback) == (host, port, loopback)
    assert address.private is private


def test_the_hosts_served_are_the_address_and_the_names_given() -> None:
    assert allowed_hosts(http_address("[::1]:8765")) == ["[::1]:8765", "localhost:8765"]
    given = ("memory.example.org", "proxy.example.org:443", "[2001:db8::1]")
    assert allowed_hosts(http_address("0.0.0.0:8765"), given) == [
        "0.0.0.0:8765", "memory.example.org", "memory.example.org:8765",
        "proxy.example.org:443", "[2001:db8::1]", "[2001:db8::1]:8765",
    ]  # fmt: skip


@pytest.mark.parametrize("given", ["", "host:", "host:http", "8765:", "70000", "0"])
def test_a_wrong_http_address_says_what_it_takes(given: str) -> None:
    with pytest.raises(ValueError, match=r"--http takes \[HOST:\]PORT"):
        http_address(given)


async def test_the_bearer_token_is_checked_before_anything_is_served() -> None:
    served: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        served.append(scope["path"])

    guarded = BearerToken(app, "s3cret")
    refused = (
        [],
        [(b"authorization", b"Bearer wrong")],
        [(b"authorization", b"s3cret")],
        [(b"authorization", b"Basic s3cret")],
        [(b"authorization", b"Bearer s3cret2")],
    )
    for headers in refused:
        sent: list[dict[str, Any]] = []

        async def send(message: dict[str, Any], sent: list[dict[str, Any]] = sent) -> None:
            sent.append(message)

        await guarded({"type": "http", "path": "/mcp", "headers": headers}, None, send)
        assert sent[0]["status"] == 401
    assert served == []
    await guarded(
        {"type": "http", "path": "/mcp", "headers": [(b"authorization", b"Bearer s3cret")]},
        None, None,
    )  # fmt: skip
    assert served == ["/mcp"]
    await guarded(
        {"type": "http", "path": "/mcp", "headers": [(b"authorization", b"BEARER s3cret")]},
        None, None,
    )  # fmt: skip
    assert served == ["/mcp", "/mcp"]  # the scheme in any case (RFC 9110)
