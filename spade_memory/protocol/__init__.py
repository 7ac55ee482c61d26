"""The protocol: every op, reply and error of every memory service, and the limits they
obey: the floor every other package stands on.

Each op is a frozen pydantic model with an ``op`` tag and the type of its reply
(``Op[Stored]``); ``ops`` holds the base classes and the ids, ``errors`` the typed
failures, ``limits`` the bounds, ``batch`` the op that carries many. Per service:
``memories`` (base memory), ``notes``, ``working``, ``working_memory``, ``context``,
``conversation_stats``, ``interaction_forget`` and ``interaction`` (the interaction
memory's union), ``spaces`` and ``space_names``, ``beads`` and ``beads_labels``;
``services`` names the services. It imports pydantic and the standard library only.
"""
