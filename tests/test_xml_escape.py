"""The faster escape must be indistinguishable from slixmpp's own."""

from __future__ import annotations

import importlib
import random

from spade_memory import xml_escape

TRICKY = [
    "",
    "plain",
    "<a href='x'>&amp;</a>",
    '"quoted" & <tagged>',
    "]]>",
    "\x00\ttab\n",
    "é漢字🙂",
]


def random_texts(count: int) -> list[str]:
    rng = random.Random(3)
    alphabet = "<>&'\"]] abcXYZ\n\té漢🙂;#"
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60))) for _ in range(count)]


def test_same_output_as_slixmpp_for_text_and_cdata() -> None:
    for text in TRICKY + random_texts(2000):
        for cdata in (False, True):
            assert xml_escape.escape(text, cdata) == xml_escape.slixmpp_escape(text, cdata)


def test_installed_into_slixmpp_serialisation() -> None:
    import spade_memory.protocol  # noqa: F401  (installs on import)

    tostring = importlib.import_module("slixmpp.xmlstream.tostring")
    assert tostring.escape is xml_escape.escape
