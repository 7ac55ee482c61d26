"""The beads sync service's registry entry: its configuration, command-line flags and
environment, and how ``spade-memory run`` opens it (the engine, the mirror's cursor)."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from spade_memory import base_memory
from spade_memory.base_memory.work_items import beads_pattern
from spade_memory.beads.engine import BeadsEngine, EngineName
from spade_memory.beads.engines import open_engine
from spade_memory.beads.errors import BeadsError
from spade_memory.beads.git import GitCommitter
from spade_memory.beads.issue import IssueFilter
from spade_memory.beads.native import NativeEngine, prefixes_of
from spade_memory.beads_sync import NAME
from spade_memory.beads_sync.mirror import Mirror, SyncCursor
from spade_memory.beads_sync.service import (
    BEADS_WAY_OUT,
    CURSOR,
    BeadsSyncService,
    new_session_id,
)
from spade_memory.beads_sync.store import BeadsMemoryStore
from spade_memory.protocol.beads import BeadsSyncOp, beads_sync_ops
from spade_memory.serving.plugin import (
    MemoryService,
    ServiceConfig,
    ServiceContext,
    ServicePlugin,
)
from spade_memory.storage.faults import DamagedStore


@dataclass(frozen=True)
class BeadsSyncConfig(ServiceConfig):
    project: Path | None = None
    """The project whose ``.beads/issues.jsonl`` holds the memories (default: DATA_DIR/beads)."""
    engine: EngineName = "auto"
    prefix: str = "mem"
    debounce: float = 5.0
    poll: float = 30.0
    git_commit: bool = False
    session: str | None = None
    """The current session (default: one new id per run)."""
    project_space: str | None = None
    """The space whose members see the project's own open issues in a session's ready
    work (default: no one; the memory service gives memories)."""

    def project_dir(self, data_dir: Path) -> Path:
        return self.project or data_dir / "beads"


class BeadsSyncPlugin(ServicePlugin):
    """Registry entry of the beads sync service."""

    name = NAME
    title = "beads sync agent"
    union = BeadsSyncOp
    ops = beads_sync_ops
    default_config = BeadsSyncConfig()
    follows = base_memory.NAME

    async def open(self, config: BeadsSyncConfig, context: ServiceContext) -> MemoryService:
        project = config.project_dir(context.data_dir)
        issues = project / ".beads" / "issues.jsonl"
        try:
            engine = open_engine(project, config.engine, config.prefix)
        except BeadsError as error:
            raise RuntimeError(f"cannot start the beads sync agent: {error}") from None
        await check_beads(engine, issues)
        mirror = Mirror(
            base_memory_jid=context.jids[base_memory.NAME],
            cursor=SyncCursor(context.data_dir / CURSOR),
            debounce=config.debounce,
            poll=config.poll,
            git=GitCommitter(project, [issues]) if config.git_commit else None,
        )
        session = config.session or new_session_id()
        store = BeadsMemoryStore(
            engine, session, context.spaces, context.limits, config.project_space
        )
        return BeadsSyncService(store, context.limits, mirror=mirror)

    def add_arguments(self, parser: argparse._ActionsContainer) -> None:
        parser.add_argument(
            "--beads-project", type=Path, default=None,
            help="project whose .beads/issues.jsonl keeps the memories, e.g. your git repository"
            " (default: DATA_DIR/beads)",
        )  # fmt: skip
        parser.add_argument(
            "--beads-engine", choices=["auto", "native", "bd"], default="auto",
            help="bd on PATH (auto, when present) or the built-in JSONL engine",
        )  # fmt: skip
        parser.add_argument(
            "--beads-debounce", type=float, default=5.0,
            help="seconds to gather base memory changes before one beads write",
        )  # fmt: skip
        parser.add_argument(
            "--beads-git-commit", action="store_true",
            help="commit .beads/issues.jsonl to git after each beads write",
        )  # fmt: skip
        parser.add_argument(
            "--session", default=None, help="the beads sync agent's current session id"
        )
        parser.add_argument(
            "--beads-project-space", default=None, metavar="SPACE",
            help="the space whose members see the project's own open issues in a session's"
            " ready work (default: no one)",
        )  # fmt: skip

    def configure(self, args: argparse.Namespace) -> BeadsSyncConfig:
        return BeadsSyncConfig(
            project=args.beads_project,
            engine=args.beads_engine,
            debounce=args.beads_debounce,
            git_commit=args.beads_git_commit,
            session=args.session,
            project_space=args.beads_project_space,
        )

    def from_environment(self, environ: Mapping[str, str]) -> BeadsSyncConfig:
        project = environ.get("SPADE_MEMORY_BEADS_PROJECT")
        return BeadsSyncConfig(
            project=Path(project) if project else None,
            project_space=environ.get("SPADE_MEMORY_BEADS_PROJECT_SPACE") or None,
            git_commit=environ.get("SPADE_MEMORY_BEADS_GIT_COMMIT", "").lower() == "true",
        )

    def places(
        self, config: BeadsSyncConfig, data_dir: Path, database: str | None = None
    ) -> list[tuple[str, str]]:
        return [("beads issues", str(config.project_dir(data_dir) / ".beads" / "issues.jsonl"))]

    def work_item_patterns(self, config: BeadsSyncConfig, data_dir: Path) -> list[str]:
        """The ids of the project's beads issues (every prefix its file uses)."""
        beads_dir = config.project_dir(data_dir) / ".beads"
        return [beads_pattern(prefix) for prefix in sorted(prefixes_of(beads_dir))]


async def check_beads(engine: BeadsEngine, issues: Path) -> None:
    """Read the beads file once at start, as the SQLite stores are checked when they
    open: a torn last line is repaired and reported now, not at the first request.

    Raises ``DamagedStore`` naming the file when the native engine cannot read it,
    ``RuntimeError`` when bd fails.
    """
    try:
        await engine.list_issues(IssueFilter(limit=1))
    except BeadsError as error:
        if isinstance(engine, NativeEngine):
            raise DamagedStore(issues, str(error.__cause__ or error), BEADS_WAY_OUT) from None
        raise RuntimeError(f"cannot start the beads sync agent: {error}") from None


PLUGIN = BeadsSyncPlugin()
