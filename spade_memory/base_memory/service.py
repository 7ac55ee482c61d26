"""The base memory agent: what it serves, how it tells its mirror and the subscribers of
spaces, and its registry entry."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter
from spade.agent import Agent
from spade.behaviour import CyclicBehaviour

from .. import wire
from ..errors import BadRequest, MemoryServiceError, NotAuthorized
from ..limits import Limits
from ..ops import AppliesOps, Outcome, Request, in_place
from ..plugin import Behaviours, MemoryService, ServiceConfig, ServiceContext, ServicePlugin
from ..serving import MemoryAgent
from ..spaces.access import Gate
from ..spaces.directory import SpaceDirectory
from ..spaces.ops import SPACE_OPS, DeleteSpace
from . import NAME
from .commands import COMMANDS
from .embeddings import load_embedder
from .journal import SpaceEvent
from .notices import EVENTS_ONTOLOGY, change_notice
from .ops import WRITE_OPS, BaseMemoryOp, ChangeList, ChangesSince, base_memory_ops
from .spaces import SpaceOps
from .store import LongTermStore

DATABASE = "base-memory.db"
"""The store's file in the data directory."""


class BaseMemoryService(AppliesOps):
    """Serves the base memory ops from an injected long-term store, and the space ops
    from the directory of spaces (none given: personal spaces only).

    ``mirror`` (the beads sync agent's JID) is the one sender allowed to read
    the whole change feed; it is told after every committed write. Subscribers
    of a space are told of each committed write in it.
    """

    name = NAME

    def __init__(
        self,
        store: LongTermStore,
        limits: Limits | None = None,
        mirror: str | None = None,
        directory: SpaceDirectory | None = None,
    ) -> None:
        self.store = store
        self.limits = limits or Limits()
        self.ops: TypeAdapter[BaseMemoryOp] = base_memory_ops
        self.mirror = None if mirror is None else wire.bare(mirror)
        self.changed = asyncio.Event()
        self.gate = Gate(directory)
        self.spaces = None if directory is None else SpaceOps(directory, store)
        self.events: asyncio.Queue[SpaceEvent | None] = asyncio.Queue()
        """Committed writes in shared spaces, for ``NotifySubscribers``."""
        store.on_events = self._committed

    def _committed(self, events: list[SpaceEvent]) -> None:
        for event in events:
            self.events.put_nowait(event)

    async def batch(self, owner: str, requests: Sequence[Request]) -> list[Outcome]:
        """Runs of memory ops in one store transaction each; space ops one by one, in order."""
        outcomes: list[Outcome] = []
        run: list[Request] = []
        for request in requests:
            if not isinstance(request.op, SPACE_OPS):
                run.append(request)
                continue
            outcomes += await self._memory_ops(owner, run)
            run = []
            outcomes.append(await self._space_op(owner, request))
        return outcomes + await self._memory_ops(owner, run)

    async def _space_op(self, owner: str, request: Request) -> Outcome:
        try:
            if self.spaces is None:
                raise BadRequest("spaces are not served by this memory agent")
            result = await self.spaces.apply(owner, request.op)
        except MemoryServiceError as error:
            return error
        if isinstance(request.op, DeleteSpace):
            self.changed.set()  # its memories reach the mirror as deletions
        return result

    async def _memory_ops(self, owner: str, requests: Sequence[Request]) -> list[Outcome]:
        """The ops applied in one store transaction, each where the gate let it act; the
        whole change feed is the mirror's only."""
        if not requests:
            return []
        refused: dict[int, Outcome] = {}
        candidates: list[tuple[int, Request]] = []
        for index, request in enumerate(requests):
            op = request.op
            if isinstance(op, ChangesSince) and op.space is None and owner != self.mirror:
                refused[index] = NotAuthorized("only the configured mirror may read the feed")
            else:
                candidates.append((index, request))
        gated, allowed = await self.gate.scope(owner, [request for _, request in candidates])
        refused.update({candidates[position][0]: error for position, error in gated.items()})
        applied = await self.store.batch(owner, allowed) if allowed else []
        if owner == self.mirror:
            applied = [await self._named(outcome) for outcome in applied]
        if self.mirror is not None and any(
            isinstance(request.op, WRITE_OPS) and not isinstance(outcome, MemoryServiceError)
            for request, outcome in zip(allowed, applied, strict=True)
        ):
            self.changed.set()
        return in_place(len(requests), refused, applied)

    async def _named(self, outcome: Outcome) -> Outcome:
        """The mirror's feed names spaces as their members do (the store knows their ids)."""
        if not isinstance(outcome, ChangeList) or self.spaces is None:
            return outcome
        keys = {change.space for change in outcome.changes if change.space is not None}
        spaces = await self.spaces.directory.by_ids(keys)
        names = {key: space.name for key, space in spaces.items()}
        changes = [
            change.model_copy(
                update={
                    "space": names.get(change.space, change.space),
                    "memory": None
                    if change.memory is None
                    else change.memory.model_copy(
                        update={"space": names.get(change.memory.space, change.memory.space)}
                    ),
                }
            )
            if change.space is not None
            else change
            for change in outcome.changes
        ]
        return outcome.model_copy(update={"changes": changes})

    commands = COMMANDS
    """Its ad-hoc commands (XEP-0050), for people in their own clients."""

    def behaviours(self, agent: Agent) -> Behaviours:
        """The behaviours telling the mirror (if any) and the spaces' subscribers."""
        behaviours: list[tuple[CyclicBehaviour, None]] = []
        if self.mirror is not None:
            behaviours.append((NotifyMirror(self), None))
        if self.spaces is not None:
            behaviours.append((NotifySubscribers(self, self.spaces.directory), None))
        return behaviours


class NotifyMirror(CyclicBehaviour):  # type: ignore[misc]
    """Tells the mirror when writes were committed (many writes, one notice)."""

    def __init__(self, service: BaseMemoryService) -> None:
        super().__init__()
        self.service = service

    def kill(self, exit_code: object | None = None) -> None:
        """Kill it, and wake its wait for writes (so it ends at once, telling no one)."""
        super().kill(exit_code)
        self.service.changed.set()

    async def run(self) -> None:
        try:
            await asyncio.wait_for(self.service.changed.wait(), timeout=1.0)
        except asyncio.TimeoutError:
            return
        if self.is_killed():
            return
        self.service.changed.clear()
        assert self.service.mirror is not None
        await self.send(change_notice(self.service.mirror))


class NotifySubscribers(CyclicBehaviour):  # type: ignore[misc]
    """Sends each committed write in a shared space to the space's subscribers that are
    still members (a subscription does not outlive the membership)."""

    def __init__(self, service: BaseMemoryService, directory: SpaceDirectory) -> None:
        super().__init__()
        self.service = service
        self.directory = directory

    def kill(self, exit_code: object | None = None) -> None:
        """Kill it, and wake its wait for events."""
        super().kill(exit_code)
        self.service.events.put_nowait(None)

    async def run(self) -> None:
        try:
            event = await asyncio.wait_for(self.service.events.get(), timeout=1.0)
        except asyncio.TimeoutError:
            return
        if event is None or self.is_killed():
            return
        space = (await self.directory.by_ids([event.space])).get(event.space)
        if space is None:
            return  # deleted meanwhile
        body = event.change().model_dump_json()
        for subscriber, address in await self.directory.subscribers(space.id):
            if await self.directory.role_of(space, subscriber) is None:
                await self.directory.unsubscribe(space, subscriber)
                continue
            await self.send(wire.notice(address, EVENTS_ONTOLOGY, body))


class BaseMemoryAgent(MemoryAgent):
    """A memory agent serving long-term memories from ``store``."""

    def __init__(
        self,
        jid: str,
        password: str,
        store: LongTermStore,
        limits: Limits | None = None,
        *,
        mirror: str | None = None,
        directory: SpaceDirectory | None = None,
        **agent_options: Any,
    ) -> None:
        service = BaseMemoryService(store, limits, mirror, directory)
        super().__init__(jid, password, service, **agent_options)


@dataclass(frozen=True)
class BaseMemoryConfig(ServiceConfig):
    dense_search: bool = True
    """Fuse BM25 with MiniLM similarity when the ``embeddings`` extra is installed."""
    mirror: str | None = None
    """The beads sync agent to report to when it runs elsewhere (default: the one in this run)."""


class BaseMemoryPlugin(ServicePlugin):
    """Registry entry of the base memory service."""

    name = NAME
    title = "base memory agent"
    union = BaseMemoryOp
    ops = base_memory_ops
    default_config = BaseMemoryConfig()

    async def open(self, config: BaseMemoryConfig, context: ServiceContext) -> MemoryService:
        embedder = await asyncio.to_thread(load_embedder) if config.dense_search else None
        path = context.data_dir / DATABASE
        store = await LongTermStore.open(
            path, context.synchronous, embedder, context.manifest, context.limits
        )
        context.closing.push_async_callback(store.close)
        mirror = config.mirror or next(iter(context.followers), None)
        return BaseMemoryService(store, context.limits, mirror, context.spaces)

    def add_arguments(self, parser: argparse._ActionsContainer) -> None:
        parser.add_argument(
            "--base-jid", default=None,
            help="JID of the base memory agent (default: base-memory@DOMAIN)",
        )  # fmt: skip
        parser.add_argument(
            "--no-dense-search", action="store_true",
            help="search with BM25 alone even when the embeddings extra is installed",
        )  # fmt: skip
        parser.add_argument(
            "--mirror-jid", default=None,
            help="beads sync agent the base memory agent reports to, when it runs elsewhere",
        )  # fmt: skip

    def configure(self, args: argparse.Namespace) -> BaseMemoryConfig:
        return BaseMemoryConfig(
            jid=args.base_jid, dense_search=not args.no_dense_search, mirror=args.mirror_jid
        )

    def from_environment(self, environ: Mapping[str, str]) -> BaseMemoryConfig:
        return BaseMemoryConfig(
            jid=environ.get("SPADE_MEMORY_BASE_JID"), mirror=environ.get("SPADE_MEMORY_MIRROR_JID")
        )

    def places(self, config: BaseMemoryConfig, data_dir: Path) -> list[tuple[str, str]]:
        return [("long-term memories", str(data_dir / DATABASE))]


PLUGIN = BaseMemoryPlugin()
