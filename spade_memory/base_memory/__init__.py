"""The base memory service: long-term memories (fact, pattern, preference, capability).

``service`` (what its agent serves, and the agent), ``notifiers`` (the behaviours
telling the mirror, the spaces' subscribers and a work engine what committed),
``plugin`` (its registry entry: configuration, flags, environment), ``commands`` (its
XEP-0050 forms), ``spaces`` (the space ops applied), ``work_items`` (ids of work a
memory came from); ``store/`` (the long-term store), ``retrieval/`` (ranking),
``classify/`` (categories guessed offline). Its ops are in ``protocol.memories``; the
client's calls in ``client.memories``. It imports ``protocol``, ``xmpp``, ``storage``,
``serving`` and ``spaces``; never another service or ``server``.
"""

from spade_memory.protocol.services import BASE_MEMORY

NAME = BASE_MEMORY
"""The service's name, and the default local part of its agent's JID."""
