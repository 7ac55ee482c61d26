"""Configuration of a deployed memory agent, from environment variables.

SPADE_MEMORY_DOMAIN           XMPP domain, also the host agents connect to (localhost)
SPADE_MEMORY_PORT             XMPP client port (5222)
SPADE_MEMORY_PASSWORD         the agent's XMPP password (required)
SPADE_MEMORY_DATA             data directory (/data)
SPADE_MEMORY_BASE_JID         base memory agent's JID (base-memory@DOMAIN)
SPADE_MEMORY_INTERACTION_JID  interaction memory agent's JID (interaction-memory@DOMAIN)
SPADE_MEMORY_MIRROR_JID       beads sync agent the base memory agent reports to (none)
SPADE_MEMORY_BEADS_PROJECT    project whose .beads/ keeps the memories (DATA/beads)
SPADE_MEMORY_BEADS_GIT_COMMIT "true" to commit .beads/issues.jsonl after each write
SPADE_MEMORY_DATABASE         a PostgreSQL URL: the long-term memories, the notes and working
                              memories and the directory of spaces, shared by every agent
                              given it (none: SQLite files)
SPADE_MEMORY_SPACES_DB        the directory of spaces, one file every memory agent mounts,
                              when there is no database (DATA/spaces.db: each agent would
                              have its own)
SPADE_MEMORY_SPACES           spaces file applied at start (TOML or YAML; none)
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from spade_memory.server import runtime
from spade_memory.server.registry import SERVICES
from spade_memory.storage.private import private_umask


def config_for(service: str) -> runtime.RunConfig:
    """The run of one memory agent; every service reads its own variables."""
    return runtime.RunConfig(
        data_dir=Path(os.environ.get("SPADE_MEMORY_DATA", "/data")),
        domain=os.environ.get("SPADE_MEMORY_DOMAIN", "localhost"),
        port=int(os.environ.get("SPADE_MEMORY_PORT", "5222")),
        embedded_server=False,
        services=(service,),
        settings={
            registered.name: registered.from_environment(os.environ) for registered in SERVICES
        },
        spaces_db=_path("SPADE_MEMORY_SPACES_DB"),
        spaces_file=_path("SPADE_MEMORY_SPACES"),
        database=os.environ.get("SPADE_MEMORY_DATABASE") or None,
    )


def _path(variable: str) -> Path | None:
    value = os.environ.get(variable)
    return Path(value) if value else None


def run_service(service: str) -> None:
    private_umask()  # the data volume's files are the agent's alone (0700/0600)
    logging.basicConfig(level=logging.INFO)
    runtime.run_service(config_for(service), lambda config: print(f"{service} ready"))
