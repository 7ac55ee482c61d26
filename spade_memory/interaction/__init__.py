"""The interaction memory service: conversation notes, working memory, context directory.

``notes`` (note ops and replies), ``working_memory`` (the model),
``working_ops``, ``context_ops`` and ``ops`` (the union); ``store`` (notes and,
through ``working_store``, working memories: SQLite, one transaction per
batch); ``context_dir`` (the human-readable files); ``service`` (what its
agent serves, and its registry entry); ``session`` and ``calls`` (the client's
typed calls).
"""

NAME = "interaction-memory"
"""The service's name, and the default local part of its agent's JID."""
