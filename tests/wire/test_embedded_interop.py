"""The embedded server speaks XMPP as other clients expect (issue 77, items 1-4): streams
restarted with an XML declaration, a stream header that names the server, stanzas in
the stream's default namespace, bare-JID delivery by RFC 6121's priorities, and kept
subscription requests that survive a restart. Raw clients (``raw_xmpp``) write and read
the bytes themselves, as clients nobody here wrote do; go-sendxmpp's test is in
``test_plain_peers``.
"""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

from spade_memory.testing import MemoryServiceProcess
from tests.conftest import STARTED_WITHIN
from tests.support.raw_xmpp import RawXMPP, login

PREFIXED = re.compile(r"<\w+:(message|iq|presence|body|thread|error)\b")
"""A stanza or a child of one written with a namespace prefix (``<ns0:message``)."""
MESSAGE = r"<message\b[^>]*>.*?</message>"


def _name(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:6]}"


def test_a_client_that_declares_every_stream_logs_in_and_is_answered(
    memory_service: MemoryServiceProcess,
) -> None:
    client = login(memory_service.port, _name("declared"), "pw", declared=True)
    try:
        thread = uuid.uuid4().hex
        stats = json.dumps({"op": "memory_stats"})
        client.send(
            f"<message to='base-memory@localhost' type='chat'><body>{stats}</body>"
            f"<thread>{thread}</thread></message>"
        )
        answer = client.until(rf"<thread>{thread}</thread>\s*</message>")
        assert '"total_memories"' in answer.replace("&quot;", '"')
        assert not PREFIXED.search(answer)
    finally:
        client.close()


def test_the_stream_header_names_the_server(memory_service: MemoryServiceProcess) -> None:
    client = RawXMPP(memory_service.port, declared=True)
    try:
        assert re.search(r"\bfrom=['\"]localhost['\"]", client.header), client.header
    finally:
        client.close()


def test_a_routed_stanza_is_written_in_the_streams_namespace(
    memory_service: MemoryServiceProcess,
) -> None:
    sender = login(memory_service.port, _name("sender"), "pw")
    receiver = login(memory_service.port, _name("receiver"), "pw")
    try:
        sender.send(
            f"<message to='{receiver.jid}' type='chat' id='m1'><body>a &amp; b</body>"
            "<x xmlns='jabber:x:data' type='result'><field var='k'><value>v</value></field></x>"
            "</message>"
        )
        message = receiver.until(MESSAGE)
        assert not PREFIXED.search(message) and "ns0" not in message, message
        assert "<body>a &amp; b</body>" in message
        assert '<x xmlns="jabber:x:data"' in message and "<value>v</value>" in message
        ping = "<ping xmlns='urn:xmpp:ping'/>"
        sender.send(f"<iq to='{receiver.jid}' type='get' id='q1'>{ping}</iq>")
        iq = receiver.until(r"<iq\b[^>]*id=\"q1\"[^>]*>.*?</iq>")
        assert '<ping xmlns="urn:xmpp:ping"' in iq and "ns0" not in iq, iq
    finally:
        sender.close()
        receiver.close()


def test_a_bare_jid_message_reaches_a_new_session_after_an_ended_one(
    memory_service: MemoryServiceProcess,
) -> None:
    """The ended session stated a priority and the new one none (0): the message is the
    new session's at once, not kept for a next login."""
    name = _name("again")
    login(memory_service.port, name, "pw", "<presence><priority>5</priority></presence>").close()
    again = login(memory_service.port, name, "pw")
    sender = login(memory_service.port, _name("sender"), "pw")
    try:
        again.sync()
        sender.send(f"<message to='{name}@localhost' type='chat'><body>now</body></message>")
        assert "<body>now</body>" in again.until(MESSAGE, timeout=20)
    finally:
        for client in (again, sender):
            client.close()


def test_a_bare_jid_message_goes_to_the_highest_priority_and_never_to_a_negative_one(
    memory_service: MemoryServiceProcess,
) -> None:
    name = _name("ranked")
    high = login(memory_service.port, name, "pw", "<presence><priority>2</priority></presence>")
    plain = login(memory_service.port, name, "pw")  # no priority: 0
    sender = login(memory_service.port, _name("sender"), "pw")
    try:
        for client in (high, plain):
            client.sync()
        sender.send(f"<message to='{name}@localhost' type='chat'><body>to-high</body></message>")
        sender.send(f"<message to='{plain.jid}' type='chat'><body>marker</body></message>")
        assert "to-high" in high.until(MESSAGE, timeout=20)
        assert "to-high" not in plain.until(r"marker")
        high.send("<presence><priority>-1</priority></presence>")
        plain.send("<presence><priority>-3</priority></presence>")
        for client in (high, plain):
            client.sync()
        sender.send(f"<message to='{name}@localhost' type='chat'><body>kept</body></message>")
        sender.sync()
        for client in (high, plain):
            client.send(f"<message to='{client.jid}' type='chat'><body>self</body></message>")
            assert "kept" not in client.until(r"<body>self</body>")  # held for the account
        later = login(memory_service.port, name, "pw")  # available at 0: it is delivered
        try:
            assert "<body>kept</body>" in later.until(MESSAGE, timeout=20)
        finally:
            later.close()
    finally:
        for client in (high, plain, sender):
            client.close()


def test_a_kept_subscription_request_survives_a_restart(tmp_path: Path) -> None:
    """pyjabber read its kept requests back wrongly: the data directory never started
    again."""
    service = MemoryServiceProcess(tmp_path / "data")
    service.start(timeout=STARTED_WITHIN)
    asker, asked = _name("asker"), _name("asked")
    try:
        login(service.port, asked, "pw").close()  # an account, offline now
        client = login(service.port, asker, "pw")
        client.send(f"<presence to='{asked}@localhost' type='subscribe'/>")
        client.sync()
        client.close()
    finally:
        service.stop()
    service.start(timeout=STARTED_WITHIN)  # raised "did not start" before
    try:
        again = login(service.port, asked, "pw")
        try:
            request = again.until(r"<presence\b[^>]*type=\"subscribe\"[^>]*/?>", timeout=20)
            assert f"{asker}@localhost" in request and "ns0" not in request
        finally:
            again.close()
    finally:
        service.stop()
