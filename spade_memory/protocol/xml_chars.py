"""Text XML 1.0 cannot carry: refused at the door, escaped on the way out.

XML 1.0 has no way to write U+FFFE, U+FFFF, a lone surrogate or a C0 control
other than tab, CR and LF; expat (Python's, slixmpp's, Prosody's) rejects a
stream holding one, and the server drops the sender's connection. JSON can
carry them (``"\\uffff"``) and pydantic accepts them, so one stored memory with
such a character, written raw into every later reply, notice and mirror read,
kept dropping the memory agent's stream. So a request whose strings hold one
is refused with ``bad-request`` naming the field and the position
(``uncarriable_in``), and whatever still holds one (data an older version
stored) leaves as the JSON escape of the character (``carriable``): inside a
JSON body, which every memory reply and notice is, the receiver reads back the
very same character.
"""

from __future__ import annotations

import json
import re
from typing import Any

UNCARRIABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
"""One character XML 1.0 cannot carry."""


def carriable(text: str) -> str:
    """``text`` with each character XML cannot carry written as its JSON escape
    (``\\uffff``); the same ``text`` object when it has none."""
    if UNCARRIABLE.search(text) is None:
        return text
    return UNCARRIABLE.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


def uncarriable_in(body: str) -> str | None:
    """Where a JSON request body holds, in a string, a character XML cannot carry: one
    sentence naming the field and the position; None when it holds none (or is not JSON:
    parsing it says why)."""
    if "\\u" not in body and UNCARRIABLE.search(body) is None:
        return None  # neither written raw (in-process) nor escaped
    try:
        value = json.loads(body)
    except ValueError:
        return None
    return uncarriable_value(value)


def uncarriable_value(value: Any, path: str = "") -> str | None:
    """``uncarriable_in`` for a decoded JSON value (strings, keys, lists, objects)."""
    if isinstance(value, str):
        found = UNCARRIABLE.search(value)
        if found is None:
            return None
        return (
            f"{path or 'body'}: U+{ord(found.group()):04X} at position {found.start()}"
            " is a character XML cannot carry"
        )
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{carriable(key)}" if path else carriable(str(key))
            why = uncarriable_value(key, f"{where} (the key)") or uncarriable_value(item, where)
            if why is not None:
                return why
    elif isinstance(value, list):
        for index, item in enumerate(value):
            why = uncarriable_value(item, f"{path}.{index}" if path else str(index))
            if why is not None:
                return why
    return None
