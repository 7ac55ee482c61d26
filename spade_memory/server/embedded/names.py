"""Which account names the embedded server accepts: the canonical ones, and no others.

The owner of a memory is the sender's bare JID as the memory agent's slixmpp
reads it, and slixmpp prepares what it reads (case, width, and it splits an
address at its first ``@`` and ``/``). pyjabber keeps names byte for byte, so
``Alice`` or ``alice@localhost/x`` were accounts of their own whose stamped
``from`` slixmpp read as ``alice@localhost``: anyone could act as alice. A
name is therefore accepted only when it is already in the form RFC 7622 gives
a localpart (PRECIS UsernameCaseMapped, through ``precis_i18n``), contains none
of the characters RFC 7622 forbids there, and comes back unchanged from
slixmpp's own reading: then one account is one bare JID, both ways.
"""

from __future__ import annotations

import unicodedata

import precis_i18n
from slixmpp.jid import JID, InvalidJID

_PROFILE = precis_i18n.get_profile("UsernameCaseMapped")
FORBIDDEN = frozenset("\"&'/:<>@")
"""Characters RFC 7622 (§3.3.1) forbids in a localpart, beyond what PRECIS forbids."""
MAX_BYTES = 1023
"""RFC 7622's bound on a localpart, in bytes of UTF-8."""


def name_refusal(name: str) -> str | None:
    """Why ``name`` cannot be an account name of this server, in one sentence; None when
    it can (it is canonical and reads back as itself)."""
    if not name:
        return "an account name cannot be empty"
    if len(name.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        return f"an account name is at most {MAX_BYTES} bytes"
    for position, char in enumerate(name):
        if char in FORBIDDEN or char.isspace():
            return f"{_describe(char)} at position {position} is not allowed in an account name"
    try:
        canonical = _PROFILE.enforce(name)
    except UnicodeEncodeError as refused:
        char = name[refused.start]
        return (
            f"{_describe(char)} at position {refused.start} is not allowed in an account"
            f" name ({refused.reason.split('/')[-1].replace('_', ' ')})"
        )
    if canonical != name:
        return f"{name!a} is not in canonical form: the account name is {canonical!a}"
    if not reads_back(f"{name}@example.org"):
        return f"{name!a} does not read back as itself in an XMPP address"
    return None


def speaker_refusal(user: str, domain: str, resource: str) -> str | None:
    """Why the address a stream authenticated as cannot be stamped on what it sends; None
    when slixmpp reads it back as this very account, domain and resource."""
    why = name_refusal(user)
    if why is not None:
        return why
    try:
        read = JID(f"{user}@{domain}/{resource}")
    except InvalidJID as error:
        return f"its address does not parse ({error})"
    if (read.user, read.domain, read.resource) != (user, domain, resource):
        return "its address reads back as another"
    return None


def reads_back(address: str) -> bool:
    """Whether ``address`` is a JID that slixmpp (so every memory agent) reads as exactly
    this text: parsing it neither fails nor changes it."""
    try:
        return str(JID(address)) == address
    except InvalidJID:
        return False


def _describe(char: str) -> str:
    code = f"U+{ord(char):04X}"
    name = unicodedata.name(char, "")
    return f"{code} {name}" if name else code
