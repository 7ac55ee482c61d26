"""No certificate bundle for what the tests start, and the real one where it is needed.

Every server the tests reach is on this machine, and nothing they start checks its
certificate (SPADE's agents connect without checking, as deployed); yet each SPADE agent
loads the system's certificates three times as it starts (slixmpp's context, then
SPADE's): about 0.12 s of CPU, a fifth of what a wire test's services and clients spend.
With ``SSL_CERT_FILE`` naming an empty file, OpenSSL loads nothing. A download from the
package index gets the system's bundle back (``with_certificates``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

VARIABLE = "SSL_CERT_FILE"


def load_none() -> None:
    """Have OpenSSL load no certificate in this process and those it starts (a bundle
    the environment names already is kept)."""
    os.environ.setdefault(VARIABLE, os.devnull)


def with_certificates(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with the system's certificates back, for a command that checks a real
    server's certificate (pip fetching from the package index)."""
    return {name: value for name, value in env.items() if (name, value) != (VARIABLE, os.devnull)}
