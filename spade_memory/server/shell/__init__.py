"""``spade-memory memories …``, ``spade-memory spaces …`` and ``spade-memory forget``: one
agent's data from the shell.

Each command logs in as that agent (``--jid`` or ``$SPADE_MEMORY_JID``, its password
from ``$SPADE_MEMORY_AGENT_PASSWORD``) and goes through the running service like any
peer, so the owner is who XMPP says it is and every rule of the service applies (spaces,
limits, the beads mirror and change notices hear of every change). Its reads do not
count as a use of what they show. Tables in a terminal, JSON with ``--json``; export and
import are JSON lines, one memory each.
"""

from spade_memory.server.shell.commands import add_arguments, run
from spade_memory.server.shell.errors import ShellError
from spade_memory.server.shell.reading import every_memory

__all__ = ["ShellError", "add_arguments", "every_memory", "run"]
