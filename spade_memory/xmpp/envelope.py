"""The parts of the wire's envelope that need no SPADE: the names it uses, a failure's
body, and SPADE's metadata form as XML, written and read.

``wire`` builds SPADE messages from them; a client that speaks slixmpp alone (the
shell's, ``client.stanza_transport``) uses them directly, so that a command that sends
one request does not spend a second importing SPADE first.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from slixmpp import JID

from spade_memory.protocol.ops import Record
from spade_memory.xmpp.xml_escape import escape

ONTOLOGY = "spade-memory"
LANGUAGE = "json"
METADATA_TITLE = "spade:x:metadata"
"""The title of SPADE's metadata form (``spade.message.SPADE_X_METADATA``)."""
DATA = "{jabber:x:data}"


class Failure(Record):
    """Body of a ``failure`` or ``refuse`` reply."""

    condition: str
    text: str
    retry_after: float | None = None
    """Set when the same request (same request id) may be sent again after that many
    seconds: the sender had too many requests in flight."""
    proposal: str | None = None
    """Set with ``pending-approval``: the id of the proposal the write became."""


def request_metadata() -> dict[str, str]:
    """The metadata of a memory request."""
    return {"performative": "request", "ontology": ONTOLOGY, "language": LANGUAGE}


def metadata_form(metadata: dict[str, str], thread: str | None) -> ET.Element:
    """SPADE's metadata form (``spade:x:metadata``) as XML, typed ``result``: a
    ``text-single`` field per entry, then the request id as ``_thread_node``."""
    form = ET.Element(f"{DATA}x", {"type": "result"})
    for name, value in _form_entries(metadata, thread):
        field = ET.SubElement(form, f"{DATA}field", {"var": name, "type": "text-single"})
        ET.SubElement(field, f"{DATA}value").text = value
    ET.SubElement(form, f"{DATA}title").text = METADATA_TITLE
    return form


def metadata_form_text(metadata: dict[str, str], thread: str | None) -> str:
    """``metadata_form`` as slixmpp writes it inside a stanza."""
    parts = ['<x xmlns="jabber:x:data" type="result">']
    for name, value in _form_entries(metadata, thread):
        parts.append(f'<field var="{escape(name)}" type="text-single">')
        parts.append(f"<value>{escape(value)}</value>" if value else "<value />")
        parts.append("</field>")
    parts.append(f"<title>{METADATA_TITLE}</title></x>")
    return "".join(parts)


def metadata_of(stanza: ET.Element) -> dict[str, str]:
    """The metadata a stanza's ``spade:x:metadata`` form carries (empty without one)."""
    for form in stanza.iter(f"{DATA}x"):
        if form.findtext(f"{DATA}title") != METADATA_TITLE:
            continue
        return {
            field.get("var", ""): field.findtext(f"{DATA}value") or ""
            for field in form.iter(f"{DATA}field")
        }
    return {}


def _form_entries(metadata: dict[str, str], thread: str | None) -> list[tuple[str, str]]:
    """The form's fields in order: the metadata, then the request id (SPADE's
    ``_thread_node``) when there is one."""
    return [*metadata.items(), ("_thread_node", thread)] if thread else [*metadata.items()]


def bare(jid: JID | str) -> str:
    """The bare JID (``name@domain``) of a full or bare JID.

    Raises slixmpp's ``InvalidJID`` for text that is not a JID.
    """
    return str(JID(str(jid)).bare)
