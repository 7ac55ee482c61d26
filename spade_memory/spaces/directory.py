"""The directory of spaces: who owns each space, who is a member with which role, who
subscribes to its changes, and which beads sessions agents share. One SQLite file
(``spaces.db`` in the data directory), or the deployment's PostgreSQL database, read by
every memory service of a deployment, so a grant or a revoke takes effect on the next
request, whichever agent serves it.

Spaces are keyed by an id that is never reused: the rows a deleted space leaves in
other stores can never reach a new space of the same name.

A write that meets a named fault of the file (see ``storage.faults``) raises its typed
failure, as the stores answer theirs: on a full disk ``ResourceConstraint``.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from spade_memory.protocol.errors import Conflict
from spade_memory.protocol.space_names import domain_member, rank
from spade_memory.spaces.proposals import Proposals
from spade_memory.spaces.rooms import RoomBindings
from spade_memory.storage.connection import (
    Database,
    Migration,
    Synchronous,
    Transacting,
    Transactions,
    open_migrated,
)
from spade_memory.storage.faults import store_errors
from spade_memory.storage.manifest import Manifest
from spade_memory.storage.postgres import is_url, open_pool, statements
from spade_memory.storage.statements import placeholders

logger = logging.getLogger("spade_memory.spaces")

FILE = "spaces.db"
"""The directory's file in the data directory."""

_V1 = (
    """CREATE TABLE spaces (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        owner TEXT NOT NULL,
        description TEXT,
        created_at REAL NOT NULL,
        max_memories INTEGER,
        max_bytes INTEGER
    )""",
    "CREATE INDEX spaces_owner ON spaces(owner)",
    """CREATE TABLE members (
        space_id TEXT NOT NULL REFERENCES spaces(id) ON DELETE CASCADE,
        member TEXT NOT NULL,
        role TEXT NOT NULL,
        granted_by TEXT NOT NULL,
        granted_at REAL NOT NULL,
        PRIMARY KEY (space_id, member)
    ) WITHOUT ROWID""",
    "CREATE INDEX members_member ON members(member)",
    """CREATE TABLE subscriptions (
        space_id TEXT NOT NULL REFERENCES spaces(id) ON DELETE CASCADE,
        subscriber TEXT NOT NULL,
        address TEXT NOT NULL,
        PRIMARY KEY (space_id, subscriber)
    ) WITHOUT ROWID""",
    """CREATE TABLE session_shares (
        owner TEXT NOT NULL,
        session TEXT NOT NULL,
        member TEXT NOT NULL,
        role TEXT NOT NULL,
        PRIMARY KEY (owner, session, member)
    ) WITHOUT ROWID""",
    "CREATE INDEX session_shares_member ON session_shares(member)",
)


async def _create_v1(db: Database) -> None:
    for statement in _V1:
        await db.execute(statement)


_V2 = (
    # A deleted space's name and id, so each memory agent can find and delete what it
    # kept of the space (the interaction memory agent's folder is named after both).
    """CREATE TABLE deleted_spaces (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        deleted_at REAL NOT NULL
    ) WITHOUT ROWID""",
)


async def _remember_deleted_v2(db: Database) -> None:
    for statement in _V2:
        await db.execute(statement)


_V3 = (
    # A governed space keeps a writer's store, update or delete as a proposal until an
    # admin decides it (``spaces.proposals``).
    "ALTER TABLE spaces ADD COLUMN governed INTEGER NOT NULL DEFAULT 0",
    """CREATE TABLE proposals (
        id TEXT PRIMARY KEY,
        space_id TEXT NOT NULL REFERENCES spaces(id) ON DELETE CASCADE,
        proposer TEXT NOT NULL,
        address TEXT NOT NULL,
        op TEXT NOT NULL,
        created_at REAL NOT NULL,
        expires_at REAL NOT NULL,
        state TEXT NOT NULL,
        decided_by TEXT,
        decided_at REAL,
        note TEXT,
        result TEXT
    )""",
    "CREATE INDEX proposals_state ON proposals(state, space_id)",
)


async def _govern_v3(db: Database) -> None:
    for statement in _V3:
        await db.execute(statement)


_V4 = (
    # A group-chat room bound to a space: the interaction memory agent that keeps its
    # notes there joins it at every start (``spaces.rooms``).
    """CREATE TABLE rooms (
        room TEXT PRIMARY KEY,
        space_id TEXT NOT NULL REFERENCES spaces(id) ON DELETE CASCADE,
        agent TEXT NOT NULL,
        nick TEXT NOT NULL,
        bound_by TEXT NOT NULL,
        bound_at REAL NOT NULL
    )""",
    "CREATE INDEX rooms_agent ON rooms(agent)",
)


async def _bind_rooms_v4(db: Database) -> None:
    for statement in _V4:
        await db.execute(statement)


MIGRATIONS: list[Migration] = [_create_v1, _remember_deleted_v2, _govern_v3, _bind_rooms_v4]

PG_STORE = "spaces"
"""The directory's name in a PostgreSQL database's ``spade_memory_schema``."""
PG_MIGRATIONS = [
    statements(
        *(
            statement.replace(" WITHOUT ROWID", "")
            .replace("REAL NOT NULL", "DOUBLE PRECISION NOT NULL")
            .replace("max_bytes INTEGER", "max_bytes BIGINT")
            for statement in _V1
        )
    ),
    statements(
        *(
            statement.replace(" WITHOUT ROWID", "").replace(
                "REAL NOT NULL", "DOUBLE PRECISION NOT NULL"
            )
            for statement in _V2
        )
    ),
    statements(
        *(
            statement.replace("REAL NOT NULL", "DOUBLE PRECISION NOT NULL").replace(
                "decided_at REAL", "decided_at DOUBLE PRECISION"
            )
            for statement in _V3
        )
    ),
    statements(
        *(statement.replace("REAL NOT NULL", "DOUBLE PRECISION NOT NULL") for statement in _V4)
    ),
]
"""The same tables in PostgreSQL's types (a float8 time, a bigint byte quota)."""


@dataclass(frozen=True)
class Space:
    """One space as the directory holds it."""

    id: str
    name: str
    owner: str
    description: str | None
    created_at: float
    max_memories: int | None = None
    max_bytes: int | None = None
    governed: bool = False
    """A writer's store, update and delete wait for an admin's approval."""


@dataclass(frozen=True)
class SessionShare:
    """``owner``'s memories of a beads ``session``, shared with the reader at ``role``."""

    owner: str
    session: str
    role: str


_SPACE = (
    "s.id, s.name, s.owner, s.description, s.created_at, s.max_memories, s.max_bytes, s.governed"
)


class SpaceDirectory:
    """Spaces, members, subscriptions and shared beads sessions, in one SQLite file or
    one PostgreSQL database."""

    def __init__(self, tx: Transacting) -> None:
        self._tx = tx
        self.proposals = Proposals(tx, self._write)
        """The writes of governed spaces waiting for an admin."""
        self.rooms = RoomBindings(tx, self._write)
        """The group-chat rooms bound to spaces."""

    @classmethod
    async def open(
        cls, path: str | Path, synchronous: Synchronous = "NORMAL", manifest: Manifest | None = None
    ) -> SpaceDirectory:
        """Open (creating or migrating) the directory at ``path``: a SQLite file, or a
        ``postgresql://`` URL.

        Returns it; raises ``StoreFault`` naming the file (or the server) when it is
        damaged, unusable or out of reach.
        """
        if is_url(path):
            return cls(await open_pool(str(path), PG_STORE, PG_MIGRATIONS, size=4))
        db = await open_migrated(path, MIGRATIONS, synchronous, manifest)
        return cls(Transactions(db, Path(path)))

    async def close(self) -> None:
        """Close the file (or the pool)."""
        await self._tx.close()

    @asynccontextmanager
    async def _write(self) -> AsyncIterator[Database]:
        """A write transaction whose named fault (a full disk, damage, an I/O error: see
        ``storage.faults``) is raised as its typed failure, said in one line of the log,
        as the stores answer theirs: a grant on a full disk is ``resource-constraint``
        "disk full: spaces.db cannot grow", not an unexpected error with a traceback.
        """
        try:
            async with self._tx.write() as db:
                yield db
        except store_errors() as error:
            failure = self._tx.fault(error)
            if failure is None:
                raise
            logger.warning("%s: %s", self._tx.path, failure.text)
            raise failure from None

    # -- spaces ------------------------------------------------------------------------

    async def find(self, name: str) -> Space | None:
        """The space called ``name``, if there is one."""
        rows = await self._tx.read(f"SELECT {_SPACE} FROM spaces s WHERE name = ?", (name,))
        return next((_space(row) for row in rows), None)

    async def by_ids(self, ids: Iterable[str]) -> dict[str, Space]:
        """The spaces with these ids (deleted ones are simply absent)."""
        wanted = list(set(ids))
        if not wanted:
            return {}
        rows = await self._tx.read(
            f"SELECT {_SPACE} FROM spaces s WHERE id IN ({placeholders(wanted)})", wanted
        )
        return {row[0]: _space(row) for row in rows}

    async def by_id(self, space_id: str) -> Space | None:
        """The space with this id (None when there is none, or it was deleted)."""
        return (await self.by_ids([space_id])).get(space_id)

    async def create(
        self, name: str, owner: str, description: str | None, governed: bool = False
    ) -> Space:
        """A new space owned by ``owner`` (``governed``: see ``Space.governed``); the
        owner's own space of that name if it exists, as it is.

        Raises ``Conflict`` when someone else owns a space of that name.
        """
        existing = await self.find(name)
        if existing is None:
            space = Space(
                str(uuid.uuid4()), name, owner, description, time.time(), governed=governed
            )
            async with self._write() as db:
                made = await db.execute_fetchall(
                    "INSERT INTO spaces (id, name, owner, description, created_at, governed)"
                    " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (name) DO NOTHING RETURNING id",
                    (space.id, space.name, space.owner, space.description, space.created_at,
                     int(governed)),
                )  # fmt: skip
            if made:
                return space
            existing = await self.find(name)  # created meanwhile (another agent)
        if existing is None or existing.owner != owner:
            raise Conflict(f"the space name {name!r} is taken")
        return existing

    async def delete(self, space_id: str) -> None:
        """Forget the space, its members and subscriptions; keep its id and name among
        the deleted spaces (``deleted``)."""
        async with self._write() as db:
            await db.execute(
                "INSERT INTO deleted_spaces (id, name, deleted_at)"
                " SELECT id, name, ? FROM spaces WHERE id = ? ON CONFLICT (id) DO NOTHING",
                (time.time(), space_id),
            )
            await db.execute("DELETE FROM spaces WHERE id = ?", (space_id,))

    async def deleted(self) -> dict[str, str]:
        """The name of every deleted space, by id."""
        rows = await self._tx.read("SELECT id, name FROM deleted_spaces")
        return {str(row[0]): str(row[1]) for row in rows}

    async def set_quota(
        self, space_id: str, max_memories: int | None, max_bytes: int | None
    ) -> None:
        """The space's own limits (None: the deployment's default)."""
        async with self._write() as db:
            await db.execute(
                "UPDATE spaces SET max_memories = ?, max_bytes = ? WHERE id = ?",
                (max_memories, max_bytes, space_id),
            )

    async def set_governed(self, space_id: str, governed: bool) -> None:
        """Govern the space's writes, or stop (proposals already made stay to be decided)."""
        async with self._write() as db:
            await db.execute(
                "UPDATE spaces SET governed = ? WHERE id = ?", (int(governed), space_id)
            )

    # -- members -----------------------------------------------------------------------

    async def role_of(self, space: Space, jid: str) -> str | None:
        """``jid``'s role in ``space``: ``owner``, its best grant (as itself or through its
        domain), or None."""
        if jid == space.owner:
            return "owner"
        rows = await self._tx.read(
            "SELECT role FROM members WHERE space_id = ? AND member IN (?, ?)",
            (space.id, jid, domain_member(jid)),
        )
        return max((str(row[0]) for row in rows), key=rank, default=None)

    async def spaces_of(self, jid: str) -> list[tuple[Space, str]]:
        """Every space ``jid`` belongs to, with its best role, by name."""
        rows = await self._tx.read(
            f"SELECT {_SPACE}, 'owner' FROM spaces s WHERE s.owner = ?"
            f" UNION ALL SELECT {_SPACE}, m.role FROM spaces s JOIN members m ON m.space_id = s.id"
            " WHERE m.member IN (?, ?)",
            (jid, jid, domain_member(jid)),
        )
        best: dict[str, tuple[Space, str]] = {}
        for row in rows:
            space, role = _space(row), str(row[8])
            if space.id not in best or rank(role) > rank(best[space.id][1]):
                best[space.id] = (space, role)
        return sorted(best.values(), key=lambda pair: pair[0].name)

    async def members(self, space: Space) -> list[tuple[str, str]]:
        """(member, role) of the space, the owner first."""
        rows = await self._tx.read(
            "SELECT member, role FROM members WHERE space_id = ? ORDER BY member", (space.id,)
        )
        return [(space.owner, "owner"), *((str(m), str(r)) for m, r in rows)]

    async def grant(self, space: Space, member: str, role: str, by: str) -> None:
        """Give ``member`` ``role`` (replacing the role it had)."""
        async with self._write() as db:
            await db.execute(
                "INSERT INTO members VALUES (?, ?, ?, ?, ?)"
                " ON CONFLICT (space_id, member) DO UPDATE"
                " SET role = excluded.role, granted_by = excluded.granted_by,"
                " granted_at = excluded.granted_at",
                (space.id, member, role, by, time.time()),
            )

    async def revoke(self, space: Space, member: str) -> bool:
        """Take ``member``'s grant away (and its subscription); False if it had none."""
        async with self._write() as db:
            cursor = await db.execute(
                "DELETE FROM members WHERE space_id = ? AND member = ?", (space.id, member)
            )
            await db.execute(
                "DELETE FROM subscriptions WHERE space_id = ? AND subscriber = ?",
                (space.id, member),
            )
            return bool(cursor.rowcount)

    async def revoke_granted_by(self, space: Space, member: str, by: str) -> bool:
        """Take ``member``'s grant away if ``by`` made it (a room's grant to one of its
        members, taken back when the room bans it); False if it had no such grant."""
        async with self._write() as db:
            gone = await db.execute_fetchall(
                "DELETE FROM members WHERE space_id = ? AND member = ? AND granted_by = ?"
                " RETURNING member",
                (space.id, member, by),
            )
        return bool(list(gone))

    async def domain_grants(self) -> list[tuple[str, str]]:
        """(space name, member) of every grant to a whole domain."""
        rows = await self._tx.read(
            "SELECT s.name, m.member FROM members m JOIN spaces s ON s.id = m.space_id"
            " WHERE m.member LIKE '*@%' ORDER BY s.name"
        )
        return [(str(name), str(member)) for name, member in rows]

    # -- subscriptions -----------------------------------------------------------------

    async def subscribe(self, space: Space, subscriber: str, address: str) -> None:
        """Send ``space``'s change notices to ``address`` (the subscriber's full JID)."""
        async with self._write() as db:
            await db.execute(
                "INSERT INTO subscriptions VALUES (?, ?, ?)"
                " ON CONFLICT (space_id, subscriber) DO UPDATE"
                " SET address = excluded.address",
                (space.id, subscriber, address),
            )

    async def unsubscribe(self, space: Space, subscriber: str) -> None:
        async with self._write() as db:
            await db.execute(
                "DELETE FROM subscriptions WHERE space_id = ? AND subscriber = ?",
                (space.id, subscriber),
            )

    async def subscribers(self, space_id: str) -> list[tuple[str, str]]:
        """(subscriber, address) of the space's subscribers."""
        rows = await self._tx.read(
            "SELECT subscriber, address FROM subscriptions WHERE space_id = ?", (space_id,)
        )
        return [(str(subscriber), str(address)) for subscriber, address in rows]

    async def listening(self, space: Space) -> list[tuple[str, str]]:
        """(subscriber, address) of the space's subscribers that are still members: a
        subscription does not outlive the membership, and is dropped here."""
        kept = []
        for subscriber, address in await self.subscribers(space.id):
            if await self.role_of(space, subscriber) is None:
                await self.unsubscribe(space, subscriber)
            else:
                kept.append((subscriber, address))
        return kept

    # -- shared beads sessions ---------------------------------------------------------

    async def share_session(self, owner: str, session: str, member: str, role: str) -> None:
        """Let ``member`` (a JID or ``*@domain``) read ``owner``'s memories of ``session``
        (``writer``: also link and mark them; ``admin``: also close them)."""
        async with self._write() as db:
            await db.execute(
                "INSERT INTO session_shares VALUES (?, ?, ?, ?)"
                " ON CONFLICT (owner, session, member) DO UPDATE"
                " SET role = excluded.role",
                (owner, session, member, role),
            )

    async def unshare_session(self, owner: str, session: str, member: str) -> None:
        async with self._write() as db:
            await db.execute(
                "DELETE FROM session_shares WHERE owner = ? AND session = ? AND member = ?",
                (owner, session, member),
            )

    async def shared_with(self, jid: str) -> list[SessionShare]:
        """Every (owner, session) shared with ``jid``, with its best role."""
        rows = await self._tx.read(
            "SELECT owner, session, role FROM session_shares WHERE member IN (?, ?)",
            (jid, domain_member(jid)),
        )
        best: dict[tuple[str, str], str] = {}
        for owner, session, role in rows:
            key = (str(owner), str(session))
            if rank(str(role)) > rank(best.get(key)):
                best[key] = str(role)
        return [SessionShare(owner, session, role) for (owner, session), role in best.items()]


def _space(row: Sequence[object]) -> Space:
    return Space(
        id=str(row[0]),
        name=str(row[1]),
        owner=str(row[2]),
        description=None if row[3] is None else str(row[3]),
        created_at=float(str(row[4])),
        max_memories=None if row[5] is None else int(str(row[5])),
        max_bytes=None if row[6] is None else int(str(row[6])),
        governed=bool(row[7]),
    )
