"""A peer that is not a SPADE agent: plain slixmpp speaking the JSON protocol.

Any XMPP client can use the memory agents. A request is a chat message whose
body is one op as JSON (``spade-memory schema`` lists them all), with three
metadata fields and the request id in a XEP-0004 data form titled
``spade:x:metadata`` (SPADE's encoding). The reply comes back in the same
form: ``inform`` with the result, or ``failure`` / ``refuse`` with a condition.

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
        self.register_plugin("xep_0004")  # data forms
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
        request_id = uuid.uuid4().hex
        message = self.make_message(mto=to, mbody=json.dumps(op), mtype="chat")
        form = self["xep_0004"].make_form(ftype="form", title="spade:x:metadata")
        for name, value in [
            ("performative", "request"),
            ("ontology", "spade-memory"),
            ("language", "json"),
            ("_thread_node", request_id),
        ]:
            form.add_field(var=name, ftype="text-single", value=value)
        message.append(form)
        answer = asyncio.get_running_loop().create_future()
        self.pending[request_id] = answer
        message.send()
        return await asyncio.wait_for(answer, 10)

    def answered(self, message: Message) -> None:
        fields = {}
        for form in message.xml.iter(f"{FORM}x"):
            for field in form.iter(f"{FORM}field"):
                fields[field.get("var")] = field.findtext(f"{FORM}value")
        answer = self.pending.pop(fields.get("_thread_node") or "", None)
        if answer is not None and not answer.done():
            answer.set_result((fields.get("performative") or "", json.loads(message["body"])))


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
    finally:
        peer.disconnect()
        await peer.disconnected


if __name__ == "__main__":
    asyncio.run(main())
