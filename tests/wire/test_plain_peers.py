"""A peer that does not speak SPADE's form is served: a plain chat or normal message whose
body is an op, its request id in <thread>. Whatever else it sends gets an error saying
what to send, and the agent goes on serving. Over the wire (the memory agents run in
their own process), on SPADE's embedded server and on Prosody."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path
from xml.etree import ElementTree

import pytest
from slixmpp.stanza import Message as Stanza

from spade_memory.protocol.services import default_jids
from spade_memory.testing import MemoryServiceProcess
from spade_memory.xmpp import wire
from spade_memory.xmpp.lifecycle import stop_agent
from tests.support.harness import ClientAgent, start_client, unique_jid
from tests.support.prosody import ACCOUNTS, register_on
from tests.support.raw_xmpp import login


class PlainPeer:
    """A client sending bare stanzas (no SPADE form) and collecting whatever comes back."""

    def __init__(self, agent: ClientAgent) -> None:
        self.agent = agent
        self.received: asyncio.Queue[Stanza] = asyncio.Queue()
        agent.client.add_event_handler("message", self.received.put_nowait)  # errors too

    def send(self, to: str, body: str | None, *, mtype: str = "chat", thread: str = "") -> None:
        stanza = self.agent.client.make_message(mto=to, mbody=body, mtype=mtype)
        if thread:
            stanza["thread"] = thread
        stanza.send()

    async def next_from(self, jid: str, timeout: float = 60.0) -> Stanza:
        """The next stanza from ``jid`` (others are passed over)."""
        while True:
            stanza = await asyncio.wait_for(self.received.get(), timeout)
            if wire.bare(stanza["from"]) == wire.bare(jid):
                return stanza


@pytest.fixture
async def peer(any_memory_service: MemoryServiceProcess) -> AsyncIterator[PlainPeer]:
    agent = await start_client(unique_jid("plain"), any_memory_service.port)
    yield PlainPeer(agent)
    await stop_agent(agent)


def base_memory(peer: PlainPeer) -> str:
    return peer.agent.memory.jids["base-memory"]


async def test_a_chat_message_with_an_op_is_served_and_answered_in_its_thread(
    peer: PlainPeer,
) -> None:
    to = base_memory(peer)
    store = {"op": "store_memory", "category": "fact", "content": "plain peers are served"}
    peer.send(to, json.dumps(store), thread="plain-1")
    reply = await peer.next_from(to)
    assert reply["type"] == "chat"
    assert reply["thread"] == "plain-1"
    stored = json.loads(reply["body"])
    assert stored["id"]
    form = reply.xml.find("{jabber:x:data}x")
    assert form is not None and form.get("type") == "result"  # shown, not filled in

    peer.send(to, json.dumps({"op": "get_memory", "id": stored["id"]}))
    got = json.loads((await peer.next_from(to))["body"])
    assert got["content"] == "plain peers are served"
    assert got["owner"] == str(peer.agent.jid.bare)  # who sent it, as XMPP authenticated


async def test_a_normal_message_is_answered_as_normal_and_a_retry_is_applied_once(
    peer: PlainPeer,
) -> None:
    to = base_memory(peer)
    store = json.dumps({"op": "store_memory", "category": "fact", "content": "once only"})
    peer.send(to, store, mtype="normal", thread="plain-retry")
    first = await peer.next_from(to)
    peer.send(to, store, mtype="normal", thread="plain-retry")
    second = await peer.next_from(to)
    assert first["type"] == second["type"] == "normal"
    assert json.loads(first["body"]) == json.loads(second["body"])
    peer.send(to, json.dumps({"op": "memory_stats"}))
    stats = json.loads((await peer.next_from(to))["body"])
    assert stats["total_memories"] == 1


@pytest.mark.parametrize(
    "body", ["hello, memory?", '{"content": "no op here"}', "[1, 2]", '{"op": 7}']
)
async def test_what_is_not_an_op_gets_an_error_saying_what_to_send(
    peer: PlainPeer, body: str
) -> None:
    to = base_memory(peer)
    peer.send(to, body, thread="not-an-op")
    error = await peer.next_from(to)
    assert error["type"] == "error"
    assert error["error"]["condition"] == "bad-request"
    assert "store_memory" in error["error"]["text"]
    assert "spade-memory schema" in error["error"]["text"]
    assert error["body"] == error["error"]["text"]

    peer.send(to, json.dumps({"op": "memory_stats"}))  # still serving, nothing stored
    stats = json.loads((await peer.next_from(to))["body"])
    assert stats["total_memories"] == 0


async def test_an_unknown_op_or_a_claimed_owner_is_a_typed_failure(peer: PlainPeer) -> None:
    to = base_memory(peer)
    peer.send(to, json.dumps({"op": "drop_everything"}))
    unknown = json.loads((await peer.next_from(to))["body"])
    assert unknown["condition"] == "bad-request"
    assert unknown["text"].startswith("unknown op 'drop_everything'")
    assert "`spade-memory schema` lists them" in unknown["text"]

    spoof = {"op": "memory_stats", "owner": "someone-else@localhost"}
    peer.send(to, json.dumps(spoof))
    refused = json.loads((await peer.next_from(to))["body"])
    assert refused["condition"] == "not-authorized"


async def test_a_message_without_a_body_asks_nothing_and_gets_nothing(peer: PlainPeer) -> None:
    to = peer.agent.memory.jids["interaction-memory"]
    composing = peer.agent.client.make_message(mto=to, mtype="chat")
    composing.xml.append(
        composing.xml.makeelement("{http://jabber.org/protocol/chatstates}composing", {})
    )
    composing.send()
    peer.send(to, json.dumps({"op": "get_all_conversations"}), thread="after-composing")
    first = await peer.next_from(to)  # the first answer is the request's: none for the state
    assert first["thread"] == "after-composing"
    assert json.loads(first["body"]) == {"conversations": []}


def test_debian_go_sendxmpp_sends_a_plain_request_and_gets_the_answer(
    any_memory_service: MemoryServiceProcess, tmp_path: Path
) -> None:
    """Debian's go-sendxmpp, in interactive mode, sends a JSON line as a chat message; its
    session (traced with -d, as it prints no message it is sent in that mode) receives
    the answer. It begins every stream with an XML declaration and reads stanzas in the
    stream's namespace: the embedded server cut it off at its first restart once."""
    if shutil.which("go-sendxmpp") is None:
        pytest.skip("go-sendxmpp is not installed; `apt-get install go-sendxmpp` (CI does)")
    jid = unique_jid("sendxmpp")
    register_on(any_memory_service.port, jid, "sendxmpp-secret")
    if any_memory_service.port not in ACCOUNTS:  # the embedded server: a first login makes it
        login(any_memory_service.port, jid.split("@")[0], "sendxmpp-secret").close()
    to = default_jids("localhost")["interaction-memory"]
    server = f"127.0.0.1:{any_memory_service.port}"
    note = {"op": "add_information", "conversation_id": "shell", "information": "k=v"}
    trace = tmp_path / "go-sendxmpp.trace"
    command = ["go-sendxmpp", "-d", "-n", "-u", jid, "-p", "sendxmpp-secret", "-j", server]
    with (
        trace.open("w") as trace_file,
        subprocess.Popen(
            [*command, "-i", to], stdin=subprocess.PIPE, stdout=trace_file, stderr=trace_file,
            text=True,
        ) as client,
    ):  # fmt: skip
        try:
            assert client.stdin is not None
            for line in (json.dumps(note), "what do you remember?"):
                client.stdin.write(line + "\n")
                client.stdin.flush()
            answers = _answers_in(trace, to, count=2, timeout=30)
        finally:
            client.kill()
    by_type = {answer["type"]: answer["body"] for answer in answers}
    assert json.loads(by_type["chat"]) == {
        "text": "Remembered information about this interaction: k=v"
    }
    assert "add_information" in by_type["error"]


def _answers_in(trace: Path, sender: str, count: int, timeout: float) -> list[dict[str, str]]:
    """The first ``count`` messages from ``sender`` in go-sendxmpp's debug trace: each
    one's type and body."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        stanzas = re.findall(r"<message\b.*?</message>", trace.read_text(errors="replace"), re.S)
        messages = [ElementTree.fromstring(_in_client_namespace(s)) for s in stanzas]
        found = [
            {"type": m.get("type", "normal"), "body": m.findtext("{jabber:client}body", "")}
            for m in messages
            if m.get("from", "").startswith(sender + "/")
        ]
        if len(found) >= count:
            return found[:count]
        time.sleep(0.2)
    raise AssertionError(f"{count} answers from {sender} not in: {trace.read_text()[-2000:]}")


def _in_client_namespace(stanza: str) -> str:
    """A stanza cut from its stream, given the stream's default namespace back."""
    return stanza.replace("<message", "<message xmlns='jabber:client'", 1)
