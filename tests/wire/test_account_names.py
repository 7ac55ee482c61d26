"""Account names on the embedded server: only canonical names are registered or logged in,
so no second account maps onto the bare JID of another (issue 47, items 1 and 2).

The attacker is a raw client (``raw_xmpp``) that sends the bytes it likes: slixmpp
would prepare a name before sending it, an attacker's client does not.
"""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path

import pytest

from spade_memory.server.embedded.names import name_refusal, speaker_refusal
from spade_memory.testing import MemoryServiceProcess
from spade_memory.xmpp.lifecycle import stop_agent
from tests.support.harness import start_client
from tests.support.raw_xmpp import RawXMPP, login

CANONICAL = ("alice", "base-memory", "a.b", "x(y", "émile", "漢字", "user_1")
NOT_CANONICAL = {
    "Alice": "a capital letter (case variant)",
    "ALICE": "capitals",
    "Base-Memory": "a service account's name in capitals",
    "\uff41\uff4c\uff49\uff43\uff45": "fullwidth letters",
    "al\u200bice": "a zero-width space",
    "ali\u200dce": "a zero-width joiner",
    "e\u0301mile": "a combining accent (not NFC)",
    "alice@localhost/x": "a separator",
    "m/x@y": "a slash",
    "a@b": "an at sign",
    "a b": "a space",
    "tab\there": "a tab",
    "": "nothing",
    "ǅ": "a compatibility character",
    "ß": "a letter slixmpp reads as another (ss)",
    "x\x00y": "a control character",
}


@pytest.mark.parametrize("name", CANONICAL)
def test_a_canonical_name_is_accepted(name: str) -> None:
    assert name_refusal(name) is None


@pytest.mark.parametrize("name", NOT_CANONICAL)
def test_a_name_that_is_not_canonical_is_refused_with_a_reason(name: str) -> None:
    why = name_refusal(name)
    assert why is not None and len(why) < 200


def test_a_stamped_address_must_read_back_as_the_same_account() -> None:
    assert speaker_refusal("alice", "localhost", "r1") is None
    # what pyjabber stamped for the account "alice@localhost/x": slixmpp reads alice
    assert speaker_refusal("alice@localhost/x", "localhost", "r1") is not None
    assert speaker_refusal("Alice", "localhost", "r1") is not None


def _suffix() -> str:
    return uuid.uuid4().hex[:6]


@pytest.mark.parametrize("name", list(NOT_CANONICAL))
def test_the_server_refuses_to_register_or_log_in_a_name_that_is_not_canonical(
    memory_service: MemoryServiceProcess, name: str
) -> None:
    client = RawXMPP(memory_service.port)
    try:
        if "\x00" not in name:  # XML cannot carry it; SASL's base64 can
            answer = client.register(name, "a-password")
            assert 'type="error"' in answer and "not-acceptable" in answer, answer
        assert not client.authenticate(name, "a-password")
    finally:
        client.close()


def test_a_case_variant_cannot_act_as_the_account(memory_service: MemoryServiceProcess) -> None:
    """The attack of item 1: register ``Alice`` beside ``alice`` and store as her."""
    alice = f"alice{_suffix()}"
    honest = login(memory_service.port, alice, "alice-password")
    try:
        for variant in (alice.capitalize(), alice.upper(), alice.replace("a", "\uff41", 1)):
            attacker = RawXMPP(memory_service.port)
            try:
                assert "not-acceptable" in attacker.register(variant, "mallory-password")
                assert not attacker.authenticate(variant, "mallory-password")
            finally:
                attacker.close()
        # a name that would read as alice's address, with a separator (item 2)
        attacker = RawXMPP(memory_service.port)
        try:
            separated = f"{alice}@localhost/x"
            assert "not-acceptable" in attacker.register(separated, "mallory-password")
            assert not attacker.authenticate(separated, "mallory-password")
        finally:
            attacker.close()
    finally:
        honest.close()


def test_login_as_another_identity_is_refused(memory_service: MemoryServiceProcess) -> None:
    """SASL PLAIN's authorization identity may only name the account itself."""
    mallory, alice = f"mallory{_suffix()}", f"alice{_suffix()}"
    login(memory_service.port, alice, "alice-password").close()
    client = RawXMPP(memory_service.port)
    try:
        client.register(mallory, "mallory-password")
        assert not client.authenticate(mallory, "mallory-password", authzid=f"{alice}@localhost")
    finally:
        client.close()
    client = RawXMPP(memory_service.port)
    try:
        assert client.authenticate(mallory, "mallory-password", authzid=f"{mallory}@localhost")
    finally:
        client.close()


def test_an_unknown_account_is_refused_as_a_wrong_password_is_and_logs_no_error(
    memory_service: MemoryServiceProcess,
) -> None:
    """Every new account's first login meets an account that does not exist yet (the shell
    logs in, then registers): refused as a wrong password is, with nothing that says who
    exists, and no ERROR in the service's log (pyjabber logged one each time)."""
    name = f"newcomer{_suffix()}"
    unknown = _answer_to_login(memory_service.port, name, "its-password")
    login(memory_service.port, name, "its-password").close()  # registered now
    wrong = _answer_to_login(memory_service.port, name, "another-password")
    assert "<failure" in unknown and unknown == wrong
    login(memory_service.port, name, "its-password").close()  # and served
    assert not [line for line in memory_service.output if "Exception during auth" in line]


def _answer_to_login(port: int, username: str, password: str) -> str:
    """The server's answer to a SASL PLAIN login on a new connection."""
    client = RawXMPP(port)
    try:
        return client.login_answer(username, password)
    finally:
        client.close()


async def test_a_spade_agent_given_a_capitalised_jid_is_the_canonical_account(
    memory_service: MemoryServiceProcess,
) -> None:
    """slixmpp prepares the JID it is given: ``Carol@localhost`` logs in as ``carol``."""
    name = f"carol{_suffix()}"
    agent = await start_client(f"{name.capitalize()}@localhost", memory_service.port)
    try:
        memory_id = await agent.memory.store_memory("fact", "capitalised")
        stored = await agent.memory.get_memory(str(memory_id))
        assert stored.owner == f"{name}@localhost"
    finally:
        await stop_agent(agent)


def test_new_accounts_are_limited_per_source_address(tmp_path: Path) -> None:
    service = MemoryServiceProcess(
        tmp_path, "--services", "beads-sync", "--registrations-per-minute", "4"
    )
    service.start(timeout=90)
    try:  # the beads sync agent's own account was the first of four
        made = [f"new{_suffix()}" for _ in range(4)]
        answers = []
        for name in made:
            client = RawXMPP(service.port)
            answers.append(client.register(name, "pw"))
            client.close()
        assert ['type="result"' in answer for answer in answers] == [True, True, True, False]
        assert "not-acceptable" in answers[3] and "too many new accounts" in answers[3]
        client = RawXMPP(service.port)  # an existing account: conflict, not counted
        assert "conflict" in client.register(made[0], "pw")
        assert client.authenticate(made[0], "pw")  # and its login is not limited
        client.close()
    finally:
        service.stop()


def test_an_old_account_database_is_reported_and_its_odd_names_refused(tmp_path: Path) -> None:
    """Accounts an earlier version made with names that are not canonical: named at start,
    refused at login; the canonical account keeps working."""
    service = MemoryServiceProcess(tmp_path, "--services", "beads-sync")
    service.start(timeout=90)
    try:
        login(service.port, "dora", "dora-password").close()
    finally:
        service.stop()
    with sqlite3.connect(tmp_path / "xmpp-server.db") as database:
        (hashed,) = database.execute(
            "SELECT hash_pwd FROM credentials WHERE jid = 'dora'"
        ).fetchone()
        for odd in ("Dora", "dora@localhost/x"):  # as the old version stored them
            database.execute("INSERT INTO credentials (jid, hash_pwd) VALUES (?, ?)", (odd, hashed))
    service = MemoryServiceProcess(tmp_path, "--services", "beads-sync")
    service.start(timeout=90)
    try:
        said = "".join(service.output)
        assert "2 accounts whose names are not canonical" in said
        assert "'Dora'" in said and "refused at login" in said
        for odd in ("Dora", "dora@localhost/x"):
            client = RawXMPP(service.port)
            assert not client.authenticate(odd, "dora-password")
            client.close()
        client = login(service.port, "dora", "dora-password")
        assert client.jid is not None and client.jid.startswith("dora@localhost/")
        client.close()
    finally:
        service.stop()
