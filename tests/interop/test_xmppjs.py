"""xmpp.js (``@xmpp/client`` from npm), a client nobody here wrote, logs in to the memory
service on SPADE's embedded server and on Prosody, runs the JSON protocol (answers and
failures), reads the agent's disco#info, ad-hoc command list, software version and ping
answers, and runs every ad-hoc command through its form (``js/xmpp_peer.mjs``).

On the embedded server it could not log in once (an XML declaration at a stream restart)
nor read a routed stanza (written ``<ns0:message>``): issue 77."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from typing import Any

import pytest

from spade_memory.base_memory.commands import COMMANDS
from spade_memory.protocol.version import package_version
from spade_memory.testing import MemoryServiceProcess
from tests.support.paths import ROOT
from tests.support.prosody import ACCOUNTS, register_on
from tests.support.raw_xmpp import login

PEER = ROOT / "tests" / "interop" / "js"
INSTALL = "`npm ci --prefix tests/interop/js`"


def test_xmppjs_logs_in_and_is_served(any_memory_service: MemoryServiceProcess) -> None:
    if shutil.which("node") is None or not (PEER / "node_modules" / "@xmpp").is_dir():
        pytest.skip(f"xmpp.js is not installed: {INSTALL} (with Node.js; CI does)")
    name, password = f"xmppjs{uuid.uuid4().hex[:6]}", "xmppjs-secret"
    register_on(any_memory_service.port, f"{name}@localhost", password)
    if any_memory_service.port not in ACCOUNTS:  # the embedded server: a first login makes it
        login(any_memory_service.port, name, password).close()
    env = {**os.environ, "NODE_TLS_REJECT_UNAUTHORIZED": "0", "NODE_NO_WARNINGS": "1"}
    done = subprocess.run(
        ["node", str(PEER / "xmpp_peer.mjs"), str(any_memory_service.port), name, password],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["jid"].startswith(f"{name}@localhost/")
    stored = json.loads(seen["answers"]["store"]["body"])
    found = json.loads(seen["answers"]["search"]["body"])
    assert seen["answers"]["store"]["type"] == "chat" and stored["id"]
    assert [m["id"] for m in found["memories"]] == [stored["id"]]
    assert found["memories"][0]["author"] == f"{name}@localhost"  # as the server stamped it
    assert seen["agent"].startswith("base-memory@localhost/")
    assert "urn:spade-memory:base-memory:1" in seen["features"]
    assert "http://jabber.org/protocol/commands" in seen["features"]
    assert seen["ping"] == "result"
    assert seen["version"] == {"name": "spade-memory", "version": package_version()}
    unknown = json.loads(seen["answers"]["unknown"]["body"])
    assert unknown["condition"] == "bad-request" and "search_memories" in unknown["text"]
    assert json.loads(seen["answers"]["space"]["body"])["name"] == "xmppjs-team"
    assert_every_command_ran(seen["ran"], name, stored["id"])


def assert_every_command_ran(ran: dict[str, Any], name: str, stored: str) -> None:
    """What each ad-hoc command answered xmpp.js, its form filled in as a person would."""
    assert set(ran) == {*(c.node for c in COMMANDS), "search-without-query"}
    for node in ("search", "store", "recent", "grant", "proposals", "decide"):
        assert ran[node]["asked"], node  # a form first: these take fields
    for node in ("stats", "spaces"):
        assert ran[node]["asked"] is None, node  # nothing to ask: run at once
    completed = {node for node, answer in ran.items() if answer.get("status") == "completed"}
    assert completed == {"search", "store", "recent", "stats", "spaces", "grant", "proposals"}
    assert [row["id"] for row in ran["search"]["form"]["items"]] == [stored]
    new = ran["store"]["form"]["fields"]
    assert new["category"] == "preference" and new["deduplicated"] == "false"
    recent = {row["id"]: row["content"] for row in ran["recent"]["form"]["items"]}
    assert recent == {stored: "xmpp.js peers are served", new["id"]: "xmpp.js users like forms"}
    assert ran["stats"]["form"]["fields"]["total_memories"] == "2"
    spaces = {row["name"]: row["role"] for row in ran["spaces"]["form"]["items"]}
    assert spaces["xmppjs-team"] == "owner"
    members = {row["member"]: row["role"] for row in ran["grant"]["form"]["items"]}
    assert members == {f"{name}@localhost": "owner", "someone@localhost": "writer"}
    assert ran["proposals"]["form"]["items"] == []
    assert ran["decide"]["error"] == "item-not-found", ran["decide"]
    missing = ran["search-without-query"]  # a required field left empty
    assert missing["error"] == "bad-request" and "query" in missing["text"], missing
