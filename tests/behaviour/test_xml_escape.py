"""The faster escape must be indistinguishable from slixmpp's own, but where slixmpp wrote
what XML cannot carry."""

from __future__ import annotations

import random
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from spade_memory.xmpp import xml_escape

TRICKY = [
    "",
    "plain",
    "<a href='x'>&amp;</a>",
    '"quoted" & <tagged>',
    "]]>",
    "\ttab\n\r",
    "é漢字🙂",
]
UNCARRIABLE = ["\x00\ttab\n", "noncharacter \uffff and \ufffe", "bell\x07", "lone \ud800"]


def random_texts(count: int) -> list[str]:
    rng = random.Random(3)
    alphabet = "<>&'\"]] abcXYZ\n\té漢🙂;#"
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60))) for _ in range(count)]


@pytest.mark.parametrize("text", UNCARRIABLE)
def test_what_xml_cannot_carry_is_written_as_its_json_escape(text: str) -> None:
    """slixmpp wrote it raw, and every XML parser on the way refused the stream."""
    escaped = xml_escape.escape(text)
    assert ET.fromstring(f"<body>{escaped}</body>").text == escaped
    with pytest.raises((ET.ParseError, UnicodeEncodeError)):
        ET.fromstring(f"<body>{xml_escape.slixmpp_escape(text)}</body>".encode())


def test_same_output_as_slixmpp_for_text_and_cdata() -> None:
    for text in TRICKY + random_texts(2000):
        for cdata in (False, True):
            assert xml_escape.escape(text, cdata) == xml_escape.slixmpp_escape(text, cdata)


def test_installed_by_a_memory_agent_not_by_importing() -> None:
    """Importing spade_memory patches nothing; building a memory agent installs the escape."""
    script = (
        "import importlib\n"
        "import spade_memory\n"
        "from spade_memory.xmpp import xml_escape\n"
        "from spade_memory.serving.agent import MemoryAgent\n"
        "tostring = importlib.import_module('slixmpp.xmlstream.tostring')\n"
        "assert tostring.escape is not xml_escape.escape, 'patched at import'\n"
        "MemoryAgent('someone@localhost', 'secret', service=None)\n"
        "assert tostring.escape is xml_escape.escape, 'not installed by the agent'\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
