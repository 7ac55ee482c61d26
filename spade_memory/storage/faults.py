"""Named faults of a store's file: damaged, lost, unreachable, full.

A fault met while opening a store stops the service with one sentence that
names the file and the way out. A fault met while serving is answered as a
typed failure: a full disk is ``resource-constraint`` ("disk full"; reads go
on, writes resume by themselves), a damaged file puts its store out of service
(``service-unavailable`` for every op after it, so nothing is acknowledged
into a damaged file and no partial answer passes for a complete one).
"""

from __future__ import annotations

import errno
import shutil
import sqlite3
import sys
from pathlib import Path

from spade_memory.protocol.errors import (
    InternalServerError,
    MemoryServiceError,
    ResourceConstraint,
    ServiceUnavailable,
)

SQLITE_PERM, SQLITE_READONLY, SQLITE_IOERR = 3, 8, 10
SQLITE_CORRUPT, SQLITE_FULL, SQLITE_CANTOPEN, SQLITE_NOTADB = 11, 13, 14, 26

RESTORE = (
    "restore it from a backup, or, to start with an empty store, move it aside (with its -wal"
    " and -shm files) and remove its entry from manifest.json in the data directory;"
    " --allow-damaged starts the other services"
)


class StoreFault(Exception):
    """A store's file cannot be used: which file, what is wrong, and the way out."""

    def __init__(self, path: str | Path, problem: str, way_out: str) -> None:
        super().__init__(f"{path}: {problem}; {way_out}")
        self.path = Path(path)
        self.problem = problem
        self.way_out = way_out


class DamagedStore(StoreFault):
    """The file is not a sound SQLite database (or holds less than it did), or a file
    store (the beads file) cannot be read."""

    def __init__(self, path: str | Path, problem: str, way_out: str = RESTORE) -> None:
        super().__init__(path, problem, way_out)


class UnreachableStore(StoreFault):
    """The file (or its folder) cannot be opened for reading and writing."""

    def __init__(self, path: str | Path, problem: str) -> None:
        super().__init__(path, problem, "give the service a writable --data-dir")


LOW_DISK_BYTES = 100 * 1024 * 1024
"""Below this much free space the service warns (at start, and when a write fails)."""


def free_bytes(path: Path) -> int | None:
    """Free space on the disk holding ``path`` (None for an in-memory store or when unknown)."""
    folder = path if path.is_dir() else path.parent
    try:
        return shutil.disk_usage(folder).free if str(path) != ":memory:" else None
    except OSError:
        return None


def _code(error: BaseException) -> int | None:
    code = getattr(error, "sqlite_errorcode", None)
    return None if code is None else int(code) & 0xFF  # the primary code of an extended one


def is_damage(error: BaseException) -> bool:
    """SQLite found the file malformed, or not a database at all."""
    return _code(error) in (SQLITE_CORRUPT, SQLITE_NOTADB)


def is_full(error: BaseException) -> bool:
    """The disk (or the database's size limit) is full."""
    if isinstance(error, OSError) and error.errno == errno.ENOSPC:
        return True
    return _code(error) == SQLITE_FULL


def opening_fault(path: str | Path, error: BaseException) -> StoreFault | None:
    """The named fault behind an error met while opening ``path``, if it is one."""
    if is_damage(error):
        return DamagedStore(path, str(error))
    if _code(error) in (SQLITE_CANTOPEN, SQLITE_READONLY, SQLITE_PERM):
        return UnreachableStore(path, str(error))
    if isinstance(error, OSError) and not isinstance(error, FileNotFoundError):
        return UnreachableStore(path, error.strerror or str(error))
    if is_full(error):
        return UnreachableStore(path, "the disk is full")
    return None


def serving_fault(path: str | Path, error: BaseException) -> MemoryServiceError | None:
    """The typed failure to answer for an error met while serving, if it is a named one."""
    name = Path(path).name
    if is_full(error):
        return ResourceConstraint(
            f"disk full: {name} cannot grow; reads still work, writes resume when space is freed"
        )
    if is_damage(error):
        return ServiceUnavailable(f"{name} is damaged ({error}); {RESTORE}")
    if _code(error) == SQLITE_IOERR or isinstance(error, OSError):
        return InternalServerError(f"I/O error on {name}: {error}")
    if isinstance(error, sqlite3.OperationalError) and "readonly" in str(error):
        return InternalServerError(f"{name} has become read-only: {error}")
    return None


def store_errors() -> tuple[type[BaseException], ...]:
    """What a store's engine raises for a failed statement or a lost file or server:
    SQLite's errors and OSError, and asyncpg's once it is loaded (a store on PostgreSQL
    loads it; without one, none of its errors can occur, and it costs no start-up)."""
    asyncpg = sys.modules.get("asyncpg")
    if asyncpg is None:
        return (sqlite3.Error, OSError)
    return (sqlite3.Error, OSError, asyncpg.PostgresError, asyncpg.InterfaceError)
