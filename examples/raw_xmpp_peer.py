"""A peer that is not a SPADE agent: plain slixmpp speaking the JSON protocol.

Any XMPP client can use the memory agents. A request is a chat message whose
body is one op as JSON (``spade-memory schema`` lists them all), its request id in
the standard ``<thread>``; SPADE's metadata form is not needed. The reply comes back
in the same thread: the result as JSON, or ``{"condition", "text"}`` (its
performative, ``inform``, ``failure`` or ``refuse``, is also in the SPADE form the
reply carries for SPADE peers). A body that is no op is answered with an error
message saying what to send.

Start the memory service first (``spade-memory run``), then:

    python examples/raw_xmpp_peer.py

(``SPADE_MEMORY_PORT`` selects another XMPP port than 5222.)
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import ssl
import sys
import uuid
from typing import Any

from slixmpp import ClientXMPP
from slixmpp.exceptions import IqError
from slixmpp.stanza import Message

FORM = "{jabber:x:data}"
MEMORY = "base-memory@localhost"


class MemoryPeer(ClientXMPP):  # type: ignore[misc]
    def __init__(self, jid: str, password: str) -> None:
        super().__init__(jid, password)
        self.enable_direct_tls = False  # STARTTLS on the client port
        self.ssl_context.check_hostname = False  # a local server's self-signed certificate
        self.ssl_context.verify_mode = ssl.CERT_NONE
        self.register_plugin("xep_0077")  # in-band registration: create the account
        self.add_event_handler("register", self.create_account)
        self.add_event_handler("session_start", self.started)
        self.add_event_handler("message", self.answered)
        self.pending: dict[str, asyncio.Future[tuple[str, Any]]] = {}
        self.ready = asyncio.Event()

    async def create_account(self, _event: Any) -> None:
        iq = self.Iq()
        iq["type"] = "set"
        iq["register"]["username"] = self.boundjid.user
        iq["register"]["password"] = self.password
        with contextlib.suppress(IqError):  # the account exists already
            await iq.send()

    async def started(self, _event: Any) -> None:
        self.send_presence()
        self.ready.set()

    async def request(self, to: str, op: dict[str, Any]) -> tuple[str, Any]:
        """Send one op; (performative, decoded JSON body) of the reply."""
        return await self.send_body(to, json.dumps(op))

    async def send_body(self, to: str, body: str) -> tuple[str, Any]:
        """Send ``body`` in a new thread; (performative, decoded JSON body) of the reply,
        or ("error", its text) for an error message."""
        request_id = uuid.uuid4().hex
        message = self.make_message(mto=to, mbody=body, mtype="chat")
        message["thread"] = request_id
        answer = asyncio.get_running_loop().create_future()
        self.pending[request_id] = answer
        message.send()
        return await asyncio.wait_for(answer, 10)

    def answered(self, message: Message) -> None:
        answer = self.pending.pop(message["thread"], None)
        if answer is None or answer.done():
            return
        if message["type"] == "error":  # the body was no op
            answer.set_result(("error", message["error"]["text"]))
            return
        performative = "inform"
        for field in message.xml.iter(f"{FORM}field"):  # SPADE's form, for SPADE peers
            if field.get("var") == "performative":
                performative = field.findtext(f"{FORM}value") or performative
        answer.set_result((performative, json.loads(message["body"])))


async def main() -> None:
    port = int(os.environ.get("SPADE_MEMORY_PORT", "5222"))
    peer = MemoryPeer("raw-peer@localhost", "raw-peer-secret")
    peer.connect(host="localhost", port=port)
    await asyncio.wait_for(peer.ready.wait(), 15)
    try:
        store = {"op": "store_memory", "category": "fact", "content": "Invoices are due in 30 days"}
        print("store:", *await peer.request(MEMORY, store))
        search = {"op": "search_memories", "query": "when are invoices due", "limit": 3}
        performative, found = await peer.request(MEMORY, search)
        for memory in found["memories"]:
            print(f"{performative}: [{memory['category']}] {memory['content']}")
        print("bad op:", *await peer.request(MEMORY, {"op": "forget_everything"}))
        print("not an op:", *await peer.send_body(MEMORY, "hello?"))
    finally:
        peer.disconnect()
        await peer.disconnected


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:  # Ctrl-C: the connection was closed on the way out
        print("raw_xmpp_peer: interrupted", file=sys.stderr)
        sys.exit(130)
