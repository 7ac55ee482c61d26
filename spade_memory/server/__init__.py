"""Running the memory service: ``runtime`` (start and stop the agents of the registry),
``cli`` (the ``spade-memory`` command), ``embedded`` (SPADE's embedded XMPP server),
``demo``."""
