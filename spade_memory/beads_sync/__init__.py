"""The beads sync service: memories kept as issues of a beads tracker, travelling with git.

``service`` (what its agent serves), ``plugin`` (its registry entry), ``store`` (memories as
issues), ``read_rules`` (who reads what), ``mirror`` (the debounced mirror of the
base memory change feed), ``footprint`` (bytes held), ``forget`` (redaction). Its
ops are in ``protocol.beads``; the client's calls in ``client.beads``. Besides the
lower layers and ``beads``, it imports the client (it reads the base memory's change
feed as any agent would) and ``base_memory.work_items``; never a store of another service.
"""

from spade_memory.protocol.services import BEADS_SYNC

NAME = BEADS_SYNC
"""The service's name, and the default local part of its agent's JID."""
