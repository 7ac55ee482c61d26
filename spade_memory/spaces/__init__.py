"""Memory spaces: named memory namespaces that agents of a team share, by explicit grant.

A space has an owner (the bare JID that created it) and members, each a
reader, a writer or an admin; a member is a bare JID or a whole domain
(``*@example.org``). Every agent also keeps its personal space, where
nothing is shared: it is what an op acts on when it names no space. The
directory of spaces (``directory``) is one SQLite file that every memory
service of a deployment reads; ``gate.Gate`` is the one place that decides,
for every op of every service, which spaces a sender may use and how; ``declared``
reads a spaces file. The ops are in ``protocol.spaces``, the client's calls in
``client.spaces``. It imports ``protocol`` and ``storage``.
"""

from spade_memory.protocol.ops import PERSONAL
from spade_memory.protocol.space_names import EVERY

__all__ = ["EVERY", "PERSONAL"]
