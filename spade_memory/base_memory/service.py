"""The base memory agent: what it serves, how it tells its mirror and the subscribers of
spaces, and its registry entry."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import TypeAdapter
from slixmpp.jid import InvalidJID
from spade.agent import Agent
from spade.behaviour import CyclicBehaviour

from spade_memory.base_memory import NAME
from spade_memory.base_memory.commands import COMMANDS
from spade_memory.base_memory.retrieval.embeddings import load_embedder
from spade_memory.base_memory.spaces import SpaceOps
from spade_memory.base_memory.store.journal import SpaceEvent
from spade_memory.base_memory.store.listeners import Listeners
from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.base_memory.work_items import DEFAULT_PATTERNS, WorkItems, WorkLink
from spade_memory.protocol.errors import BadRequest, MemoryServiceError, NotAuthorized
from spade_memory.protocol.expiry import PURGE_EVERY_SECONDS
from spade_memory.protocol.limits import Limits
from spade_memory.protocol.memories import (
    WRITE_OPS,
    AllForgotten,
    BaseMemoryOp,
    ChangeList,
    ChangesSince,
    base_memory_ops,
)
from spade_memory.protocol.ops import AppliesOps, Outcome, Request, in_place
from spade_memory.protocol.spaces import SPACE_OPS, DeleteSpace
from spade_memory.serving.agent import MemoryAgent
from spade_memory.serving.plugin import (
    Behaviours,
    MemoryService,
    ServiceConfig,
    ServiceContext,
    ServicePlugin,
)
from spade_memory.spaces.directory import SpaceDirectory
from spade_memory.spaces.gate import Gate
from spade_memory.xmpp import wire
from spade_memory.xmpp.notices import EVENTS_ONTOLOGY, change_notice

T = TypeVar("T")
logger = logging.getLogger("spade_memory.base_memory")
WORK_ONTOLOGY = "spade-memory-work-items"
"""Ontology of the messages telling a work engine of a memory linked to a work item."""

DATABASE = "base-memory.db"
"""The store's file in the data directory."""


class Committed:
    """What the store tells of its commits, kept for the agent's behaviours: the mirror's
    wake-up (``changed``), shared spaces' events and work-item links (the queues of
    ``NotifySubscribers`` and ``NotifyWorkEngine``). Made before the store, which is
    opened with its ``listeners()``."""

    def __init__(self, work_items: WorkItems | None = None) -> None:
        self.work_items = work_items or WorkItems()
        self.changed = asyncio.Event()
        """Set after a write the mirror should read."""
        self.events: asyncio.Queue[SpaceEvent | None] = asyncio.Queue()
        """Committed writes in shared spaces, for ``NotifySubscribers``."""
        self.links: asyncio.Queue[list[WorkLink] | None] = asyncio.Queue()
        """Committed links to work items, for ``NotifyWorkEngine`` (with a JID to tell)."""

    def listeners(self) -> Listeners:
        """Returns the store's listeners feeding these queues (links only when a work
        engine's JID is to be told)."""
        return Listeners(
            events=self._committed,
            links=None if self.work_items.notify_jid is None else self._linked,
            purged=self.changed.set,  # expired memories' deletions reach the mirror
        )

    def _linked(self, links: list[WorkLink]) -> None:
        if self.work_items.notify is not None:
            self.work_items.notify(links)
        self.links.put_nowait(links)

    def _committed(self, events: list[SpaceEvent]) -> None:
        for event in events:
            self.events.put_nowait(event)


class BaseMemoryService(AppliesOps):
    """Serves the base memory ops from an injected long-term store, and the space ops
    from the directory of spaces (none given: personal spaces only).

    ``mirror`` (the beads sync agent's JID) is the one sender allowed to read
    the whole change feed; it is told after every committed write. Subscribers
    of a space are told of each committed write in it, when the store was opened
    with the ``listeners()`` of ``committed``.
    """

    name = NAME

    def __init__(
        self,
        store: LongTermStore,
        limits: Limits | None = None,
        mirror: str | None = None,
        directory: SpaceDirectory | None = None,
        committed: Committed | None = None,
    ) -> None:
        self.store = store
        self.limits = limits or Limits()
        self.ops: TypeAdapter[BaseMemoryOp] = base_memory_ops
        self.mirror = None if mirror is None else wire.bare(mirror)
        committed = committed or Committed(store.work_items)
        self.changed = committed.changed
        self.gate = Gate(directory)
        self.spaces = None if directory is None else SpaceOps(directory, store)
        self.events = committed.events
        """Committed writes in shared spaces, for ``NotifySubscribers``."""
        self.links = committed.links
        """Committed links to work items, for ``NotifyWorkEngine`` (with a JID to tell)."""

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
        applied = [
            outcome.model_copy(update={"mirror": self.mirror})
            if isinstance(outcome, AllForgotten)
            else outcome
            for outcome in applied
        ]  # where the shell's forget goes next
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
        if self.store.work_items.notify_jid is not None:
            behaviours.append((NotifyWorkEngine(self, self.store.work_items.notify_jid), None))
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


class Drains(CyclicBehaviour, Generic[T]):  # type: ignore[misc]
    """Handles what the service puts in ``items``, one at a time; killing it puts None
    there, which wakes its wait so it ends at once. (Not ``queue``: that is SPADE's
    own, for the messages a behaviour receives.)"""

    def __init__(self, items: asyncio.Queue[T | None]) -> None:
        super().__init__()
        self.items = items

    def kill(self, exit_code: object | None = None) -> None:
        """Kill it, and wake its wait."""
        super().kill(exit_code)
        self.items.put_nowait(None)

    async def run(self) -> None:
        try:
            item = await asyncio.wait_for(self.items.get(), timeout=1.0)
        except asyncio.TimeoutError:
            return
        if item is not None and not self.is_killed():
            await self.handle(item)

    async def handle(self, item: T) -> None:
        """Act on one item."""
        raise NotImplementedError


class NotifySubscribers(Drains[SpaceEvent]):
    """Sends each committed write in a shared space to the space's subscribers that are
    still members (a subscription does not outlive the membership)."""

    def __init__(self, service: BaseMemoryService, directory: SpaceDirectory) -> None:
        super().__init__(service.events)
        self.directory = directory

    async def handle(self, event: SpaceEvent) -> None:
        space = (await self.directory.by_ids([event.space])).get(event.space)
        if space is None:
            return  # deleted meanwhile
        body = dataclasses.replace(event, name=space.name).change().model_dump_json()
        for subscriber, address in await self.directory.subscribers(space.id):
            if await self.directory.role_of(space, subscriber) is None:
                await self.directory.unsubscribe(space, subscriber)
                continue
            try:
                notice = wire.notice(address, EVENTS_ONTOLOGY, body)
            except InvalidJID as error:  # kept by an older version, which took any name
                logger.warning(
                    "space %s: the subscription of %s is dropped: its address %s does not"
                    " parse (%s)", space.name, subscriber, ascii(address), error,
                )  # fmt: skip
                await self.directory.unsubscribe(space, subscriber)
                continue
            await self.send(notice)


class NotifyWorkEngine(Drains[list[WorkLink]]):
    """Tells a deployment's work engine (a JID) of each link of a memory to a work item:
    one message per link, its body ``{"event": "memory_linked", "work_id", "memory_id",
    "author"}``, with the ontology ``WORK_ONTOLOGY``."""

    def __init__(self, service: BaseMemoryService, to: str) -> None:
        super().__init__(service.links)
        self.to = to

    async def handle(self, links: list[WorkLink]) -> None:
        for link in links:
            body = json.dumps({
                "event": "memory_linked", "work_id": link.work_id,
                "memory_id": link.memory_id, "author": link.author,
            })  # fmt: skip
            await self.send(wire.notice(self.to, WORK_ONTOLOGY, body))


class BaseMemoryAgent(MemoryAgent):
    """A memory agent serving long-term memories from ``store`` (opened with the
    ``listeners()`` of ``committed``, for its notices to reach their behaviours)."""

    def __init__(
        self,
        jid: str,
        password: str,
        store: LongTermStore,
        limits: Limits | None = None,
        *,
        mirror: str | None = None,
        directory: SpaceDirectory | None = None,
        committed: Committed | None = None,
        **agent_options: Any,
    ) -> None:
        service = BaseMemoryService(store, limits, mirror, directory, committed)
        super().__init__(jid, password, service, **agent_options)


@dataclass(frozen=True)
class BaseMemoryConfig(ServiceConfig):
    dense_search: bool = True
    """Fuse BM25 with MiniLM similarity when the ``embeddings`` extra is installed."""
    mirror: str | None = None
    """The beads sync agent to report to when it runs elsewhere (default: the one in this run)."""
    work_item_patterns: tuple[str, ...] = ()
    """Patterns of work-item ids to find in a memory's ``source``, besides the defaults
    (``ABC-123``, ``bd-…``, and the local beads database's prefix)."""
    work_engine: str | None = None
    """A JID told of each memory linked to a work item."""
    purge_every: float = PURGE_EVERY_SECONDS
    """Seconds between two purges of expired memories (reads hide them meanwhile)."""


class BaseMemoryPlugin(ServicePlugin):
    """Registry entry of the base memory service."""

    name = NAME
    title = "base memory agent"
    union = BaseMemoryOp
    ops = base_memory_ops
    default_config = BaseMemoryConfig()

    async def open(self, config: BaseMemoryConfig, context: ServiceContext) -> MemoryService:
        embedder = await asyncio.to_thread(load_embedder) if config.dense_search else None
        path = context.database or context.data_dir / DATABASE
        patterns = [*DEFAULT_PATTERNS, *context.work_item_patterns, *config.work_item_patterns]
        work_items = WorkItems(tuple(dict.fromkeys(patterns)), notify_jid=config.work_engine)
        committed = Committed(work_items)
        store = await LongTermStore.open(
            path, context.synchronous, embedder, context.manifest, context.limits, work_items,
            listeners=committed.listeners(), purge_every=config.purge_every,
        )  # fmt: skip
        context.closing.push_async_callback(store.close)
        mirror = config.mirror or next(iter(context.followers), None)
        return BaseMemoryService(store, context.limits, mirror, context.spaces, committed)

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
        parser.add_argument(
            "--work-item-pattern", action="append", default=[], metavar="REGEX",
            dest="work_item_patterns",
            help="a pattern of work-item ids to link memories to, found in their source"
            " (repeatable; ABC-123 and the beads ids are always on)",
        )  # fmt: skip
        parser.add_argument(
            "--work-engine-jid", default=None,
            help="a JID told of each memory linked to a work item",
        )  # fmt: skip
        parser.add_argument(
            "--purge-every", type=float, default=PURGE_EVERY_SECONDS, metavar="SECONDS",
            help="seconds between two purges of expired memories (default: %(default)s)",
        )  # fmt: skip

    def configure(self, args: argparse.Namespace) -> BaseMemoryConfig:
        for pattern in args.work_item_patterns:
            try:
                re.compile(pattern)
            except re.error as error:
                raise SystemExit(f"--work-item-pattern {pattern!r}: {error}") from None
        return BaseMemoryConfig(
            jid=args.base_jid, dense_search=not args.no_dense_search, mirror=args.mirror_jid,
            work_item_patterns=tuple(args.work_item_patterns), work_engine=args.work_engine_jid,
            purge_every=max(0.1, args.purge_every),
        )  # fmt: skip

    def from_environment(self, environ: Mapping[str, str]) -> BaseMemoryConfig:
        return BaseMemoryConfig(
            jid=environ.get("SPADE_MEMORY_BASE_JID"),
            mirror=environ.get("SPADE_MEMORY_MIRROR_JID"),
            work_engine=environ.get("SPADE_MEMORY_WORK_ENGINE_JID"),
        )

    def places(
        self, config: BaseMemoryConfig, data_dir: Path, database: str | None = None
    ) -> list[tuple[str, str]]:
        return [("long-term memories", database or str(data_dir / DATABASE))]


PLUGIN = BaseMemoryPlugin()
