"""What a memory agent says about itself to any XMPP peer: a disco#info feature naming
its protocol (XEP-0030) under an identity that names the service, and the package's
version (XEP-0092). A peer in any language, or a person's client, can so find out by
XMPP alone which memory service answers at a JID, and which version of it."""

from __future__ import annotations

from typing import Any

from slixmpp import ClientXMPP

from spade_memory.protocol.version import package_version

PROTOCOL_VERSION = 1
"""Advances when a service's requests or replies change incompatibly."""


def protocol_feature(service: str) -> str:
    """The disco#info feature of ``service``'s protocol: ``urn:spade-memory:SERVICE:1``."""
    return f"urn:spade-memory:{service}:{PROTOCOL_VERSION}"


def describe(client: ClientXMPP, service: str) -> None:
    """Make ``client`` answer disco#info with ``service``'s feature and an automated
    client identity naming it, and XEP-0092 with the package's version, in this session
    and in every session after a reconnection (each may have another full JID)."""
    client.register_plugin("xep_0030")
    client.register_plugin(
        "xep_0092", pconfig={"software_name": "spade-memory", "version": package_version()}
    )

    def announce(_: Any = None) -> None:
        disco = client["xep_0030"]
        disco.del_identity(category="client", itype="bot")
        disco.add_identity(category="client", itype="bot", name=f"spade-memory {service}")
        disco.add_feature("jabber:iq:version")
        disco.add_feature(protocol_feature(service))

    client.add_event_handler("session_bind", announce)
    announce()
