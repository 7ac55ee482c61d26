"""The base memory service: long-term memories (fact, pattern, preference, capability).

``ops`` (its ops and replies), ``store`` (SQLite, FTS5, one transaction per
batch) with ``schema``, ``ranking``, ``dense``, ``access`` and
``embeddings``; ``service`` (what its agent serves, and its registry entry);
``calls`` (the client's typed calls); ``notices`` (change notices to its mirror).
"""

NAME = "base-memory"
"""The service's name, and the default local part of its agent's JID."""
