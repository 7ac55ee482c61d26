"""Running the memory service: ``runtime`` (start and stop the agents of the registry),
``cli`` (the ``spade-memory`` command), ``embedded`` (SPADE's embedded XMPP server),
``demo``, ``registry`` (the services, by name), ``json_schema``, backups, migration
and imports. It stands above every other package and may import any of them."""
