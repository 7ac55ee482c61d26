"""XMPP plumbing shared by the client and the memory agents: ``wire`` (SPADE metadata,
JSON body, request id in ``thread``; the one place that writes a reply's text for
slixmpp; ``envelope`` is its part that needs no SPADE), ``xml_escape`` and
``stanza_guard`` (text and stanzas XML can carry), ``plain_peers`` (peers that send
bare JSON), ``adhoc`` (XEP-0050 commands), ``discovery`` (XEP-0030), ``reconnect``,
``liveness`` and ``lifecycle`` (start, stay connected, stop without hangs), ``notices``
(the base memory's change notices). It imports ``protocol``, slixmpp and SPADE
(``envelope``, ``connect_errors``, ``output_task`` and ``reachability`` need no SPADE,
for the shell's login); no store, no service.
"""
