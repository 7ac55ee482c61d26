"""Registration and login on the embedded server: canonical names only, new accounts
rate-limited per source address.

pyjabber registers any name it is sent and logs in whatever SASL PLAIN names,
byte for byte. Here a name that ``names.name_refusal`` refuses is refused at
registration (``not-acceptable``, with the reason) and at login
(``not-authorized``), whatever the client did or did not prepare; a PLAIN
authorization identity other than the account's own is refused too. At most
``RegistrationLimit.per_minute`` new accounts are made per source address in
any minute (``not-acceptable`` of type ``wait``, as Prosody answers: slixmpp cannot
read RFC 6120's ``policy-violation`` and fails the registration with a ValueError), so
one address cannot mint accounts by the thousand. When an account is made, its time is
noted beside it (``account_admin.MADE``: pyjabber keeps none), for ``spade-memory
accounts list``.
"""

from __future__ import annotations

import base64
import binascii
import logging
import re
import sqlite3
import time
import xml.etree.ElementTree as ET
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyjabber import AppConfig
from pyjabber.db.database import DB
from pyjabber.db.model import Model
from pyjabber.features.SASL.SASL import SASL
from pyjabber.stanzas.error import StanzaError as SE
from pyjabber.stream.negotiators.StreamNegotiator import StreamNegotiator
from sqlalchemy import select, text

from spade_memory.server.account_admin import MADE, MADE_TABLE, now_text
from spade_memory.server.embedded.names import name_refusal

logger = logging.getLogger("spade_memory.xmpp_server")
_REGISTER = "{jabber:iq:register}"
_STANZAS = "urn:ietf:params:xml:ns:xmpp-stanzas"
_SASL_FAILURE = (
    "<failure xmlns='urn:ietf:params:xml:ns:xmpp-sasl'><not-authorized/>"
    "<text xml:lang='en'>{text}</text></failure>"
)


@dataclass
class RegistrationLimit:
    """New accounts per source address and minute (0: no limit)."""

    per_minute: int = 60
    _made: dict[str, deque[float]] = field(default_factory=dict)

    def admit(self, address: str, now: float | None = None) -> float:
        """Count a new account from ``address``; 0 when admitted, else the seconds until
        one more would be."""
        if self.per_minute <= 0:
            return 0.0
        now = time.monotonic() if now is None else now
        made = self._made.setdefault(address, deque())
        while made and made[0] <= now - 60:
            made.popleft()
        if len(made) >= self.per_minute:
            return made[0] + 60 - now
        made.append(now)
        if len(self._made) > 4096:  # forget addresses that made nothing lately
            self._made = {key: times for key, times in self._made.items() if times[-1] > now - 60}
        return 0.0


LIMIT = RegistrationLimit()
"""The server's limit (one embedded server per process: pyjabber's state is global)."""


class CheckedSASL(SASL):  # type: ignore[misc]
    """pyjabber's SASL and in-band registration, with the checks above first."""

    async def handle_iq(self, element: ET.Element) -> None:
        query = element.find(f"{_REGISTER}query")
        username = query.findtext(f"{_REGISTER}username") if query is not None else None
        new = False
        if element.attrib.get("type") == "set" and username is not None:
            why = name_refusal(username)
            if why is not None:
                logger.info("registration of %s refused: %s", ascii(username), why)
                self._transport.write(_iq_error(element, "modify", "not-acceptable", why))
                return
            new = not await account_exists(username)
            if new:
                address = str(self._peer[0]) if self._peer else "?"
                wait = LIMIT.admit(address)
                if wait:
                    why = f"too many new accounts from {address}; try again in {wait:.0f} s"
                    logger.warning("registration of %s refused: %s", username, why)
                    self._transport.write(_iq_error(element, "wait", "not-acceptable", why))
                    return
        await super().handle_iq(element)
        if new and username is not None and await account_exists(username):
            await note_made(username)

    async def handle_auth(self, element: ET.Element) -> Any:
        if element.attrib.get("mechanism", "PLAIN") == "PLAIN":
            account, why = _plain_login(element.text or "")
            if why is not None:
                logger.info("login refused: %s", why)
                self._transport.write(_SASL_FAILURE.format(text=_escape(why)).encode())
                return None
            if not await account_exists(account):
                # pyjabber answers as to a wrong password, then reads the missing row and
                # logs an ERROR (with a second failure) for what is every new account's
                # first login (the shell logs in, then registers): the same answer here,
                # once, and no ERROR; no text either, or the answer would tell who exists
                logger.info("login refused: no such account")
                self._transport.write(SE.not_authorized_sasl())
                self._connection_manager.close(self._peer)
                return None
        return await super().handle_auth(element)


_STREAM = "{http://etherx.jabber.org/streams}stream"
_XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
_LANGUAGE = re.compile(r"[A-Za-z]{1,8}(-[A-Za-z0-9]{1,8})*")


class CheckedStreamNegotiator(StreamNegotiator):  # type: ignore[misc]
    """pyjabber's client stream negotiation with ``CheckedSASL``, and a stream header
    that says which server answers (``from``, RFC 6120 §4.7.1)."""

    async def handle_open_stream(self, elem: ET.Element | None = None) -> Any:
        if elem is not None and elem.tag == _STREAM:
            # pyjabber's answer reads the header's ``to`` and ``xml:lang`` under keys its
            # parser never makes, so its header had no ``from`` (clients such as aioxmpp
            # refuse it); it answers from this server's domain, whatever was asked
            read: dict[Any, str] = elem.attrib  # pyjabber reads (namespace, name) keys
            read[(None, "to")] = AppConfig.app_config.host
            if _LANGUAGE.fullmatch(lang := elem.attrib.get(_XML_LANG, "")):
                read[("http://www.w3.org/XML/1998/namespace", "lang")] = lang
        return await super().handle_open_stream(elem)

    async def _handle_ssl(self, element: ET.Element) -> None:
        if self._sasl is None:  # type: ignore[has-type]
            self._sasl = CheckedSASL(self._transport, self._parser, self._peer)
        await super()._handle_ssl(element)


def _plain_login(token: str) -> tuple[str, str | None]:
    """The account a SASL PLAIN message names, and why the message is refused before its
    password is checked (None: it is not)."""
    try:
        authzid, authcid, _ = base64.b64decode(token, validate=True).decode().split("\0")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return "", "a SASL PLAIN message must be authzid NUL authcid NUL password, in base64"
    why = name_refusal(authcid)
    if why is not None:
        return authcid, f"{authcid!a}: {why}"
    if authzid and authzid != f"{authcid}@{AppConfig.app_config.host}":
        return authcid, f"{authcid} may not act as {authzid!a}"
    return authcid, None


async def note_made(username: str) -> None:
    """Note that the account ``username`` was made now (its first registration)."""
    async with await DB.connection_async() as connection, connection.begin():
        await connection.execute(text(MADE_TABLE))
        await connection.execute(
            text(f"INSERT OR IGNORE INTO {MADE} (jid, made) VALUES (:jid, :made)"),
            {"jid": username, "made": now_text()},
        )


async def account_exists(username: str) -> bool:
    """Whether the account database holds ``username``."""
    async with await DB.connection_async() as connection:
        found = await connection.execute(
            select(Model.Credentials.c.id).where(Model.Credentials.c.jid == username)
        )
        return found.first() is not None


def _iq_error(request: ET.Element, kind: str, condition: str, text: str) -> bytes:
    reply = ET.Element(
        "iq",
        {"type": "error", "id": request.attrib.get("id", ""), "from": AppConfig.app_config.host},
    )
    error = ET.SubElement(reply, "error", {"type": kind})
    ET.SubElement(error, condition, {"xmlns": _STANZAS})
    ET.SubElement(error, "text", {"xmlns": _STANZAS}).text = text
    return ET.tostring(reply)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def report_names(database: Path) -> list[str]:
    """Log the accounts of an existing account database whose names are not canonical
    (made by an earlier version, which took any name): they can no longer log in.
    Returns those names."""
    if not database.exists():
        return []
    try:
        with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as connection:
            names = [row[0] for row in connection.execute("SELECT jid FROM credentials")]
    except sqlite3.Error:
        return []  # a new or foreign file: pyjabber makes or reports it
    refused = [name for name in names if not isinstance(name, str) or name_refusal(name)]
    if refused:
        shown = ", ".join(ascii(name) for name in refused[:5])
        more = f" and {len(refused) - 5} more" if len(refused) > 5 else ""
        logger.warning(
            "%s holds %d accounts whose names are not canonical (%s%s), which an earlier"
            " version took; they are refused at login from now on",
            database, len(refused), shown, more,
        )  # fmt: skip
    return refused
