"""The beads sync service: memories kept as issues of a beads tracker, travelling with git.

``ops`` (its ops and replies), ``store`` (memories as issues, who reads
what), ``mirror`` (the debounced mirror of the base memory change feed),
``service`` (what its agent serves, and its registry entry) and ``calls``
(the client's typed calls, ``client.beads``).
"""

NAME = "beads-sync"
"""The service's name, and the default local part of its agent's JID."""
