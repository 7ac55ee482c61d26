"""Running the memory service: ``runtime`` (start and stop the agents of the registry),
``cli`` (the ``spade-memory`` command), ``xmpp_server`` (SPADE's embedded server),
``demo``."""
