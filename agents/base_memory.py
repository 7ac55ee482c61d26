"""Deployment: the base memory agent as its own process (one container).

Wiring only, from the environment:
  SPADE_MEMORY_DOMAIN    XMPP domain, also the host the agent connects to (default localhost)
  SPADE_MEMORY_PORT      XMPP client port (default 5222)
  SPADE_MEMORY_BASE_JID  the agent's JID (default base-memory@DOMAIN)
  SPADE_MEMORY_PASSWORD  its XMPP password (required)
  SPADE_MEMORY_DATA      data directory (default /data)
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path

from spade_memory.runtime import RunConfig, serve


def config_from_environment() -> RunConfig:
    return RunConfig(
        data_dir=Path(os.environ.get("SPADE_MEMORY_DATA", "/data")),
        domain=os.environ.get("SPADE_MEMORY_DOMAIN", "localhost"),
        port=int(os.environ.get("SPADE_MEMORY_PORT", "5222")),
        base_jid=os.environ.get("SPADE_MEMORY_BASE_JID"),
        embedded_server=False,
    )


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    asyncio.run(serve(config_from_environment(), lambda c: print(f"{c.base_memory_jid} ready")))
