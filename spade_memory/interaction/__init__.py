"""The interaction memory service: conversation notes, working memory, context directory.

``service`` (what its agent serves, and the agent), ``plugin`` (its registry entry,
and the sweep of deleted spaces), ``store`` (notes and,
through ``working_store``, working memories; ``usage`` counts their bytes;
``pg_tables`` for PostgreSQL), ``context_dir``, ``context_index`` and
``budgeted_files`` (the human-readable files and their search). Its ops are in
``protocol.notes``, ``protocol.working``, ``protocol.context`` and
``protocol.interaction``; the client's calls in ``client.conversations``. It imports
``protocol``, ``xmpp``, ``storage``, ``serving`` and ``spaces``; never another service.
"""

from spade_memory.protocol.services import INTERACTION_MEMORY

NAME = INTERACTION_MEMORY
"""The service's name, and the default local part of its agent's JID."""
