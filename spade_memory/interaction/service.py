"""The interaction memory agent: notes and working memory from its store, the context
directory from files, and its registry entry.

A batch goes to the store in runs: consecutive note and working-memory ops
are one store transaction; a context-directory op between them is applied
on its own (files are not transactional) and answered from ``RecentAnswers``
when its request id comes again. Files count against the same byte budgets as
the store's notes and working memories (``budgeted_files``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter
from slixmpp.stanza import Message as Stanza
from spade.agent import Agent

from spade_memory.interaction import NAME
from spade_memory.interaction.budgeted_files import BudgetedFiles, folder_of
from spade_memory.interaction.context_dir import ContextDirectory, ContextFile, Pending
from spade_memory.interaction.rooms import CHECK_EVERY_SECONDS, KeepRooms
from spade_memory.interaction.session_notices import (
    NotifySessionSubscribers,
    SessionEvent,
    SessionEvents,
)
from spade_memory.interaction.store import InteractionStore
from spade_memory.protocol.context import (
    ContextEntries,
    ContextEntry,
    EndConversation,
    GetPreferences,
    Preferences,
    SaveKnowledge,
    SavePreferences,
    SearchContext,
)
from spade_memory.protocol.conversation_stats import InteractionStatsOp
from spade_memory.protocol.errors import (
    BadRequest,
    FeatureNotImplemented,
    InternalServerError,
    ItemNotFound,
    MemoryServiceError,
    NotAuthorized,
    ResourceConstraint,
)
from spade_memory.protocol.interaction import InteractionOp, interaction_ops
from spade_memory.protocol.interaction_forget import ForgetInteractions
from spade_memory.protocol.limits import Limits
from spade_memory.protocol.notes import ClearConversation, GetInformation, context_summary
from spade_memory.protocol.ops import AppliesOps, Op, Outcome, Place, Record, Request, in_place
from spade_memory.protocol.rooms import (
    JoinRoom,
    LeaveRoom,
    ListRooms,
    RoomInfo,
    RoomLeft,
    RoomList,
    RoomNotes,
    RoomOp,
)
from spade_memory.protocol.space_names import rank
from spade_memory.protocol.working import WorkingMemoryState
from spade_memory.serving.agent import MemoryAgent
from spade_memory.serving.plugin import (
    Behaviours,
)
from spade_memory.spaces.directory import SpaceDirectory
from spade_memory.spaces.gate import Gate
from spade_memory.storage.answers import RecentAnswers
from spade_memory.storage.faults import serving_fault

logger = logging.getLogger("spade_memory.interaction")
DATABASE = "interaction-memory.db"
"""The store's file in the data directory."""

FileHandler = Callable[[ContextDirectory, str, Request, str | None], Awaitable[Record]]


class InteractionMemoryService(AppliesOps):
    """Serves notes and working memory from a store, and the context directory."""

    name = NAME

    def __init__(
        self,
        store: InteractionStore,
        context: ContextDirectory | None = None,
        limits: Limits | None = None,
        answers: RecentAnswers | None = None,
        directory: SpaceDirectory | None = None,
        room_check_every: float = CHECK_EVERY_SECONDS,
    ) -> None:
        self.store = store
        self.context = context
        self.files = None if context is None else BudgetedFiles(store, context)
        """The context directory within the store's byte budgets."""
        self.limits = limits or Limits()
        self.directory = directory
        self.gate = Gate(directory)
        """Which spaces a working-memory session or knowledge file may live in."""
        self.rooms: KeepRooms | None = None
        """The rooms bound to spaces (once the agent runs, with spaces)."""
        self.room_check_every = room_check_every
        self.ops: TypeAdapter[InteractionOp] = interaction_ops
        self.answers = answers or RecentAnswers(max_bytes=self.limits.retry_answers_bytes)
        self.session_events = SessionEvents()
        """Committed changes of sessions in shared spaces, for their subscribers."""
        """Answers to recent context-directory requests (files are not transactional)."""
        self._files: dict[type[Op[Any]], FileHandler] = {
            EndConversation: self._end,
            ClearConversation: self._end,
            SavePreferences: self._save_preferences,
            GetPreferences: self._preferences,
            SaveKnowledge: self._save_knowledge,
            SearchContext: self._search,
        }

    async def sweep_deleted_spaces(self) -> int:
        """Delete what this agent keeps of spaces deleted since: the base memory agent
        deletes a space from the shared directory, and the space's sessions, byte count
        and knowledge files here, unreachable from then on, go at the next sweep.

        Returns how many spaces had something to delete; raises the store's typed
        failure, or what deleting a folder raised."""
        if self.directory is None:
            return 0
        deleted = await self.directory.deleted()
        kept = await self.store.space_keys()
        gone = set(deleted) | (kept - set(await self.directory.by_ids(kept)))
        swept = 0
        for key in sorted(gone):
            found = key in kept and await self.store.purge_space(key)  # no write for none
            if self.context is not None and key in deleted:
                folder = folder_of(Place(key, deleted[key]))
                found = bool(await asyncio.to_thread(self.context.forget, folder)) or found
            swept += found
        if swept:
            logger.info("deleted what %d deleted space(s) kept here", swept)
        return swept

    def behaviours(self, agent: Agent) -> Behaviours:
        """The behaviours telling spaces' subscribers of their sessions' changes and
        keeping the rooms bound to spaces (none without spaces)."""
        if self.directory is None:
            return []
        self.rooms = KeepRooms(self.store, self.directory, self.limits, self.room_check_every)
        return [
            (NotifySessionSubscribers(self.session_events, self.directory), None),
            (self.rooms, None),
        ]

    def claims(self, stanza: Stanza) -> bool:
        """Whether ``stanza`` is a room's, for ``KeepRooms`` (not a request to serve)."""
        return self.rooms is not None and self.rooms.claims(stanza)

    async def batch(self, owner: str, requests: Sequence[Request]) -> list[Outcome]:
        """Each op where the gate lets it act; runs of store ops in one transaction each,
        file ops one by one, in order."""
        refused, allowed = await self.gate.scope(owner, requests)
        return in_place(len(requests), refused, await self._apply(owner, allowed))

    async def _apply(self, owner: str, requests: Sequence[Request]) -> list[Outcome]:
        outcomes: list[Outcome] = []
        run: list[Request] = []
        for request in requests:
            if self._in_store(request.op):
                run.append(request)
                continue
            if run:
                outcomes += await self._store_run(owner, run)
                run = []
            outcomes.append(await self._file_op(owner, request, alone=len(requests) == 1))
        if run:
            outcomes += await self._store_run(owner, run)
        return outcomes

    async def _store_run(self, owner: str, run: Sequence[Request]) -> list[Outcome]:
        """A run of store ops, their places' files counted in their budgets first; the
        sessions of shared spaces it changed are told to their subscribers."""
        if self.files is not None:
            await self.files.measured(place for r in run for place in r.places_of(owner))
        outcomes = await self.store.batch(owner, run)
        for request, outcome in zip(run, outcomes, strict=True):
            place = request.places_of(owner)[0]
            changed = isinstance(outcome, WorkingMemoryState) and not request.op.reads_only
            if changed and not place.personal:
                session_id = getattr(request.op, "session_id", "")
                event = SessionEvent(place.key, session_id, owner, request.op.tag())
                self.session_events.committed(event)
        return outcomes

    def _in_store(self, op: Op[Any]) -> bool:
        archiving = isinstance(op, ClearConversation) and op.archive
        elsewhere = isinstance(op, ForgetInteractions | InteractionStatsOp)  # files too
        return self.store.applies(op) and not archiving and not elsewhere

    async def _file_op(self, owner: str, request: Request, *, alone: bool) -> Outcome:
        answered = self.answers.get(owner, request.id)
        if answered is not None:
            return answered
        try:
            if isinstance(request.op, ForgetInteractions):  # files too, where there are any
                result = await self._forget(owner, request)
            elif isinstance(request.op, InteractionStatsOp):
                result = await self._stats(owner, request)
            elif isinstance(request.op, RoomOp):
                result = await self._room_op(owner, request.op)
            elif self.context is None:
                raise BadRequest("this interaction memory agent has no context directory")
            else:
                handler = self._files[type(request.op)]
                result = await handler(self.context, owner, request, request.id)
        except MemoryServiceError as error:
            return error
        except OSError as error:  # a full or failing disk under the context directory
            return self._file_fault(error)
        except Exception:
            if alone:
                raise
            logger.exception("a batched %s failed", request.op.tag())
            return InternalServerError("the memory agent failed")
        if not request.op.reads_only:
            self.answers.keep(owner, request.id, result)
        return result

    def _file_fault(self, error: OSError) -> MemoryServiceError:
        """The typed failure for a context-directory file that could not be written or
        read, said in one line of the log: ``resource-constraint`` "disk full: context
        cannot grow" on a full disk, as the stores answer theirs."""
        root = self.context.root if self.context is not None else Path("context")
        failure = serving_fault(root, error) or InternalServerError(f"I/O error on {root.name}")
        logger.warning("%s: %s", root, failure.text)
        return failure

    async def _room_op(self, owner: str, op: RoomOp) -> Record:
        """Bind, unbind, list or search rooms (``interaction.rooms``), as ``owner``'s role
        in their spaces allows."""
        if self.rooms is None or self.directory is None:
            raise FeatureNotImplemented("rooms are bound to spaces, and this agent has none")
        if isinstance(op, ListRooms):
            spaces = dict((s.id, s) for s, _ in await self.directory.spaces_of(owner))
            return RoomList(rooms=[
                RoomInfo(room=b.room, space=spaces[b.space_id].name, nick=b.nick,
                         bound_by=b.bound_by, present=b.room in self.rooms.present)
                for b in await self.directory.rooms.of_spaces(list(spaces))
            ])  # fmt: skip
        if isinstance(op, JoinRoom):
            bound_to, its_role = await self.gate.membership(owner, op.space)
            _admin(its_role, bound_to.name)
            return await self.rooms.bind(op.room, bound_to, op.nick, owner)
        binding = await self.directory.rooms.get(op.room)
        space = None
        if binding is not None:
            space = await self.directory.by_id(binding.space_id)
        role = None if space is None else await self.directory.role_of(space, owner)
        if space is None or role is None:  # a stranger learns nothing of the room
            raise ItemNotFound(f"no room {op.room!r} bound to a space of yours")
        if isinstance(op, LeaveRoom):
            _admin(role, space.name)
            return RoomLeft(left=await self.rooms.unbind(op.room))
        notes = await self.store.search_room(space.id, op.room, op.query, op.limit)
        return RoomNotes(room=op.room, notes=notes)

    async def _forget(self, owner: str, request: Request) -> Record:
        """The owner's notes, sessions and stored answers (one transaction), then its
        context files and the answers kept here for its file ops."""
        op = request.op
        assert isinstance(op, ForgetInteractions)
        outcome = await self.store.apply(owner, op, request.id)
        files = 0
        if self.context is not None:
            files = await asyncio.to_thread(self.context.forget, owner, op.dry_run)
        replies = outcome.replies + self.answers.forget(owner, op.dry_run)
        return outcome.model_copy(update={"files": files, "replies": replies})

    async def _stats(self, owner: str, request: Request) -> Record:
        """The store's counts and usage, its files measured first and counted."""
        (place,) = request.places_of(owner)
        files = 0 if self.files is None else (await self.files.measure(place)).files
        (outcome,) = await self.store.batch(owner, [request])
        if isinstance(outcome, MemoryServiceError):
            raise outcome
        return outcome.model_copy(update={"files": files})

    async def _end(
        self, context: ContextDirectory, owner: str, request: Request, request_id: str | None
    ) -> Record:
        """Write the conversation's summary file; clear its notes if asked."""
        op = request.op
        assert isinstance(op, EndConversation | ClearConversation)
        conversation = op.conversation_id
        notes = await self.store.apply(owner, GetInformation(conversation_id=conversation))
        given = op.summary if isinstance(op, EndConversation) else None
        if not given and notes.next_offset is not None:  # a summary of part, then cleared
            raise ResourceConstraint(
                f"conversation {conversation!r} has more notes than one answer may carry"
                " (run --max-answer-bytes): give its summary yourself"
            )
        summary = given or context_summary(notes.notes)
        written = None
        if summary is not None:
            tags = op.tags if isinstance(op, EndConversation) else []

            def prepare() -> tuple[Pending, ContextFile]:
                pending = context.conversation_file(owner, conversation, summary, tags)
                return pending, pending.written

            written = await self._budgeted().write(Place(owner), prepare)
        clear = ClearConversation(conversation_id=conversation)
        if isinstance(op, ClearConversation):
            return await self.store.apply(owner, clear, request_id)
        if written is None:
            raise ItemNotFound(f"conversation {conversation!r} has no notes to summarize")
        if op.clear:
            await self.store.apply(owner, clear)
        return _entry(written)

    async def _save_preferences(
        self, context: ContextDirectory, owner: str, request: Request, _request_id: str | None
    ) -> Record:
        op = request.op
        assert isinstance(op, SavePreferences)
        saved = await self._budgeted().write(
            Place(owner), lambda: context.preferences_file(owner, op.user, op.preferences)
        )
        return Preferences(user=op.user, preferences=saved)

    async def _preferences(
        self, context: ContextDirectory, owner: str, request: Request, _request_id: str | None
    ) -> Record:
        op = request.op
        assert isinstance(op, GetPreferences)
        found = await asyncio.to_thread(context.preferences, owner, op.user)
        return Preferences(user=op.user, preferences=found)

    async def _save_knowledge(
        self, context: ContextDirectory, owner: str, request: Request, _request_id: str | None
    ) -> Record:
        op = request.op
        assert isinstance(op, SaveKnowledge)
        place = request.places_of(owner)[0]

        def prepare() -> tuple[Pending, ContextFile]:
            pending = context.knowledge_file(folder_of(place), op.name, op.content, op.tags, owner)
            return pending, pending.written

        return _entry(await self._budgeted().write(place, prepare))

    def _budgeted(self) -> BudgetedFiles:
        assert self.files is not None, "file ops need the context directory"
        return self.files

    async def _search(
        self, context: ContextDirectory, owner: str, request: Request, _request_id: str | None
    ) -> Record:
        op = request.op
        assert isinstance(op, SearchContext)
        place = request.places_of(owner)[0]
        kind = op.type if place.personal else "knowledge"  # a space keeps knowledge only
        found = await asyncio.to_thread(context.search, folder_of(place), op.query, kind, op.limit)
        return ContextEntries(entries=[_entry(file) for file in found])


def _admin(role: str, space: str) -> None:
    """Raises ``NotAuthorized`` unless ``role`` may bind and unbind rooms of ``space``."""
    if rank(role) < rank("admin"):
        raise NotAuthorized(f"only admins of {space!r} may bind rooms to it")


def _entry(file: ContextFile) -> ContextEntry:
    return ContextEntry(type=file.type, path=file.path, title=file.title, text=file.text)


class InteractionMemoryAgent(MemoryAgent):
    """A memory agent serving the interaction memory from ``store`` and ``context``."""

    def __init__(
        self,
        jid: str,
        password: str,
        store: InteractionStore,
        context: ContextDirectory | None = None,
        limits: Limits | None = None,
        *,
        directory: SpaceDirectory | None = None,
        **agent_options: Any,
    ) -> None:
        service = InteractionMemoryService(store, context, limits, directory=directory)
        super().__init__(jid, password, service, **agent_options)
