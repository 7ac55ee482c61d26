"""The embedded server's filter of XML declarations (``streams.DeclarationFilter``): every
stream header may come after one, in one read or split between reads, and nothing else
a client writes is changed."""

from __future__ import annotations

from spade_memory.server.embedded.streams import HELD_AT_MOST, DeclarationFilter

HEADER = b"<stream:stream to='localhost' xmlns='jabber:client' version='1.0'>"
DECLARED = b"<?xml version='1.0' encoding='UTF-8'?>\n" + HEADER


def test_a_declaration_split_anywhere_is_left_out_whole() -> None:
    for cut in range(1, len(DECLARED)):
        declarations = DeclarationFilter()
        passed = declarations.feed(b"<presence/>" + DECLARED[:cut])
        passed += declarations.feed(DECLARED[cut:] + b"<iq id='1'/>")
        assert passed == b"<presence/>\n" + HEADER + b"<iq id='1'/>", cut


def test_every_streams_declaration_goes_and_nothing_else_changes() -> None:
    declarations = DeclarationFilter()
    text = b"<message><body>a &lt;?xml b</body></message><?xml-stylesheet href='x'?><a/>"
    assert declarations.feed(DECLARED + text + DECLARED) == b"\n" + HEADER + text + b"\n" + HEADER


def test_a_text_that_only_looks_like_a_beginning_is_held_for_one_read_only() -> None:
    declarations = DeclarationFilter()
    assert declarations.feed(b"<a>x</a><") == b"<a>x</a>"  # "<" may begin "<?xml"
    assert declarations.feed(b"b/>") == b"<b/>"
    long = b"<?xml " + b"x" * HELD_AT_MOST
    assert declarations.feed(long) == long  # no declaration: the parser refuses it
