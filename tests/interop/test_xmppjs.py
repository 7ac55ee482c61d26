"""xmpp.js (``@xmpp/client`` from npm), a client nobody here wrote, logs in to the memory
service on SPADE's embedded server and on Prosody, runs the JSON protocol, and reads the
agent's disco#info, ad-hoc command list and ping answers (``js/xmpp_peer.mjs``).

On the embedded server it could not log in once (an XML declaration at a stream restart)
nor read a routed stanza (written ``<ns0:message>``): issue 77."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid

import pytest

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
    assert {"search", "store", "stats"} <= set(seen["commands"])
    assert seen["ping"] == "result"
