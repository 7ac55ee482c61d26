"""No one stanza can hurt a connection of the embedded server, a bare JID's sessions are
exactly its own, and what waits for an absent account is bounded (issue 47, items 3, 4
and 7). Raw clients (``raw_xmpp``) send what no slixmpp client would.
"""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import pytest

from spade_memory.testing import MemoryServiceProcess
from tests.support.raw_xmpp import RawXMPP, login

STATS = json.dumps({"op": "memory_stats"})


def _name(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:6]}"


def _ask_memory(client: RawXMPP) -> str:
    """A plain peer's request to the base memory agent, and its reply: the connection
    still carries stanzas both ways."""
    thread = uuid.uuid4().hex
    client.send(
        f"<message to='base-memory@localhost' type='chat'><body>{STATS}</body>"
        f"<thread>{thread}</thread></message>"
    )
    return client.until(rf"<(?:\w+:)?thread>{thread}</(?:\w+:)?thread>\s*</(?:\w+:)?message>")


BAD_STANZAS = {
    "a message to an address with two @": (
        "<message to='a@b@localhost/x' type='chat' id='bad1'><body>hi</body></message>",
        "jid-malformed",
    ),
    "a message to a resource with an @ and a /": (
        "<message to='m/x@y@localhost/RES' type='chat' id='bad2'><body>hi</body></message>",
        None,
    ),
    "a message to the server itself": (
        "<message to='localhost' type='chat' id='bad3'><body>hi</body></message>",
        "jid-malformed",
    ),
    "a message with no address": (
        "<message type='chat' id='bad4'><body>hi</body></message>",
        "jid-malformed",
    ),
    "an iq to an address with two @": (
        "<iq to='a@b@localhost/x' type='get' id='bad5'><ping xmlns='urn:xmpp:ping'/></iq>",
        "jid-malformed",
    ),
    "a presence to an address with two @": (
        "<presence to='a@b@localhost/x' type='subscribe'/>",
        None,
    ),
    "a presence to an account named like a pattern": ("<presence to='x(y@localhost'/>", None),
    "a stanza of no known kind": ("<nonsense xmlns='jabber:client'/>", None),
}


@pytest.mark.parametrize("kind", BAD_STANZAS)
def test_one_stanza_fails_alone_and_the_connection_keeps_serving(
    memory_service: MemoryServiceProcess, kind: str
) -> None:
    stanza, bounced = BAD_STANZAS[kind]
    client = login(memory_service.port, _name("sender"), "pw")
    try:
        client.send(stanza)
        if bounced is not None:
            error = client.until(r"type=\"error\".*?</(?:\w+:)?(message|iq)>")
            assert bounced in error
        for _ in range(3):  # pyjabber's routing task for this connection died here
            assert "inform" in _ask_memory(client)
    finally:
        client.close()


def test_a_bare_jid_names_its_own_sessions_only(memory_service: MemoryServiceProcess) -> None:
    """pyjabber matched a bare JID as a regular expression: presence for ``a.b`` also
    reached ``axb``."""
    stem = uuid.uuid4().hex[:6]
    dotted = login(memory_service.port, f"dot.{stem}", "pw")
    lookalike = login(memory_service.port, f"dotx{stem}", "pw")
    sender = login(memory_service.port, _name("sender"), "pw")
    try:
        sender.send(f"<presence to='dot.{stem}@localhost' type='subscribe'/>")
        dotted.until(r"<(?:\w+:)?presence\b[^>]*subscribe")
        sender.send(f"<message to='dotx{stem}@localhost' type='chat'><body>marker</body></message>")
        seen = lookalike.until(r"marker")  # what reached it before the marker
        assert "subscribe" not in seen
    finally:
        for client in (dotted, lookalike, sender):
            client.close()


@pytest.fixture(scope="module")
def small_offline(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """A server that keeps at most 3 messages (and 2,000 bytes) for an absent account."""
    service = MemoryServiceProcess(
        tmp_path_factory.mktemp("offline"), "--services", "beads-sync",
        "--offline-messages", "3", "--offline-bytes", "100000", "--offline-bytes-in-all", "2000",
    )  # fmt: skip
    service.start(timeout=90)
    yield service
    service.stop()


def _send(client: RawXMPP, to: str, text: str) -> None:
    client.send(f"<message to='{to}' type='chat' id='{text[:12]}'><body>{text}</body></message>")


def test_messages_for_an_absent_account_are_kept_in_order_up_to_its_share(
    small_offline: MemoryServiceProcess,
) -> None:
    absent = _name("absent")
    login(small_offline.port, absent, "pw").close()
    sender = login(small_offline.port, _name("sender"), "pw")
    try:
        for n in range(5):
            _send(sender, f"{absent}@localhost", f"kept-{n}")
        refusals = [sender.until(r"type=\"error\".*?</(?:\w+:)?message>") for _ in range(2)]
        assert all("resource-constraint" in refusal for refusal in refusals)
        assert "kept-3" in refusals[0] and "kept-4" in refusals[1]
        back = login(small_offline.port, absent, "pw")
        try:
            delivered = back.until(r"kept-2.*?</(?:\w+:)?message>")
            assert re.findall(r"<(?:\w+:)?body>(kept-\d)<", delivered) == [
                "kept-0",
                "kept-1",
                "kept-2",
            ]
        finally:
            back.close()
    finally:
        sender.close()


def test_a_message_to_a_gone_resource_waits_for_the_account(
    small_offline: MemoryServiceProcess,
) -> None:
    """pyjabber kept it under the old full JID, for a resource that never comes back."""
    name = _name("roamer")
    first = login(small_offline.port, name, "pw")
    gone = first.jid
    first.close()
    sender = login(small_offline.port, _name("sender"), "pw")
    try:
        _send(sender, str(gone), "for-the-account")
        again = login(small_offline.port, name, "pw")
        try:
            assert "for-the-account" in again.until(r"for-the-account")
        finally:
            again.close()
    finally:
        sender.close()


def test_nothing_is_kept_for_an_account_that_does_not_exist(
    small_offline: MemoryServiceProcess,
) -> None:
    sender = login(small_offline.port, _name("sender"), "pw")
    try:
        _send(sender, f"{_name('invented')}@localhost", "into-the-void")
        assert "service-unavailable" in sender.until(r"type=\"error\".*?</(?:\w+:)?message>")
    finally:
        sender.close()


def test_what_all_absent_accounts_hold_together_is_bounded(
    small_offline: MemoryServiceProcess,
) -> None:
    """2,000 bytes in all: the third absent account's 600-byte message is refused."""
    absents = [_name("absent") for _ in range(3)]
    for absent in absents:
        login(small_offline.port, absent, "pw").close()
    sender = login(small_offline.port, _name("sender"), "pw")
    try:
        for absent in absents:
            _send(sender, f"{absent}@localhost", "x" * 600)
        refusal = sender.until(r"type=\"error\".*?</(?:\w+:)?message>")
        assert "resource-constraint" in refusal and "offline messages" in refusal
        assert f'from="{absents[2]}@localhost"' in refusal
    finally:
        sender.close()
        for absent in absents:  # taking them frees the room for the next test
            login(small_offline.port, absent, "pw").close()


def test_a_flood_to_invented_jids_keeps_nothing(tmp_path: Path) -> None:
    """Item 7 as seen: messages of 100 KB to invented JIDs. Each is answered
    service-unavailable at once; none is kept (the server's total is untouched, so an
    existing absent account still gets its message kept)."""
    service = MemoryServiceProcess(
        tmp_path, "--services", "beads-sync", "--offline-bytes-in-all", "300000"
    )
    service.start(timeout=90)
    try:
        absent = _name("absent")
        login(service.port, absent, "pw").close()
        sender = login(service.port, _name("sender"), "pw")
        try:
            for n in range(20):
                _send(
                    sender, f"invented{n}-{uuid.uuid4().hex[:4]}@localhost", f"{n}-" + "y" * 100_000
                )
            for _ in range(20):
                assert "service-unavailable" in sender.until(
                    r"type=\"error\".*?</(?:\w+:)?message>"
                )
            _send(sender, f"{absent}@localhost", "z" * 200_000)
            sender.sync()
        finally:
            sender.close()
        back = login(service.port, absent, "pw")
        try:
            assert "zzzz" in back.until(r"z{1000}")
        finally:
            back.close()
    finally:
        service.stop()


def test_a_headline_reaches_a_bare_jids_sessions_and_is_never_kept_for_an_absent_one(
    small_offline: MemoryServiceProcess,
) -> None:
    """RFC 6121 §8.5.2: a headline (what the base memory agent asks a governed space's
    admins in) goes to the account's available sessions, and is dropped when it has
    none, so it takes no room another's message would need."""
    reader = _name("reader")
    present = login(small_offline.port, reader, "pw")
    sender = login(small_offline.port, _name("sender"), "pw")
    try:
        sender.send(
            f"<message to='{reader}@localhost' type='headline'><body>read-now</body></message>"
        )
        assert "read-now" in present.until(r"read-now.*?</(?:\w+:)?message>")
        present.close()
        for n in range(5):  # more headlines than the account's offline share (3)
            sender.send(
                f"<message to='{reader}@localhost' type='headline'><body>h-{n}</body></message>"
            )
        for n in range(3):  # the share is whole: every chat message is kept
            _send(sender, f"{reader}@localhost", f"kept-{n}")
        _send(sender, f"{reader}@localhost", "one-too-many")
        refused = sender.until(r"type=\"error\".*?</(?:\w+:)?message>")
        assert "one-too-many" in refused and "h-" not in refused
        back = login(small_offline.port, reader, "pw")
        try:
            delivered = back.until(r"kept-2.*?</(?:\w+:)?message>")
            assert re.findall(r"<(?:\w+:)?body>(kept-\d|h-\d)<", delivered) == [
                "kept-0", "kept-1", "kept-2",
            ]  # fmt: skip
        finally:
            back.close()
    finally:
        sender.close()
