"""The context directory's index: each folder's files in SQLite FTS5, with their sizes.

A search that read and parsed every file of its folder and built an FTS5 table in memory
for one query would cost more the more files the folder holds. So each folder (an
owner's, a shared space's) has an index file holding what a search needs of each file
(type, title, text) and what shows whether it changed since (size, modification and
change times, inode: a file written atomically is a new inode). Before a folder is
searched or measured it is listed, one ``stat`` per file and no read: only the files new
or changed since are read and parsed again, and those gone are dropped. So hand edits
are still found, a search reads nothing that did not change, and the folder's bytes
(what it holds against the byte budget) are known without reading it.

One index per folder keeps BM25's statistics the folder's own, as they were, and a
search's cost within the owner's files. An index is a cache: deleting it loses
nothing, it is rebuilt as its folder is next read. The indexes live in a hidden
folder of the context directory that tells git to ignore it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger("spade_memory.interaction")

INDEX_FOLDER = ".index"
"""Where the indexes live, inside the context directory."""
_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS files (
        id INTEGER PRIMARY KEY,
        path TEXT NOT NULL UNIQUE,
        type TEXT NOT NULL,
        size INTEGER NOT NULL,
        mtime_ns INTEGER NOT NULL,
        ctime_ns INTEGER NOT NULL,
        inode INTEGER NOT NULL
    )""",
    # a file that cannot be parsed has its row in files (its bytes count) and none here
    "CREATE VIRTUAL TABLE IF NOT EXISTS words USING fts5(title, text, tokenize='porter unicode61')",
)
Read = Callable[[str, Path], tuple[str, str] | None]
"""Reads one file of a type as a search sees it: (title, text), None when malformed."""
Layout = dict[str, tuple[str, str]]
"""Per type, the subfolder its files are in and the suffix of their names."""


@dataclass(frozen=True)
class Found:
    """One file a search found: its type, path relative to its folder, title and text."""

    type: str
    path: str
    title: str
    text: str


@dataclass(frozen=True)
class Measure:
    """What a folder holds: its files and their bytes on disk."""

    files: int = 0
    bytes: int = 0


class ContextIndex:
    """The indexes of a context directory's folders, one SQLite file each."""

    def __init__(self, root: Path, layout: Layout, read: Read) -> None:
        self.root = root / INDEX_FOLDER
        self._layout = layout
        self._read = read

    def refresh(self, key: str, folder: Path) -> Measure:
        """Bring the index of ``folder`` (named ``key``) in step with its files: read the
        files new or changed since, drop the rows of those gone.

        Returns what the folder holds now."""
        with self._open(key) as db:
            db.execute("BEGIN IMMEDIATE")  # one refresh of a folder at a time
            known = {
                path: (row_id, tuple(stamp))
                for row_id, path, *stamp in db.execute(
                    "SELECT id, path, size, mtime_ns, ctime_ns, inode FROM files"
                )
            }
            for kind, path, stamp in self._listed(folder):
                relative = str(path.relative_to(folder))
                row_id, was = known.pop(relative, (None, None))
                if stamp != was:
                    _forget(db, row_id)
                    self._index(db, kind, path, relative, stamp)
            for row_id, _ in known.values():
                _forget(db, row_id)
            ((files, size),) = db.execute("SELECT COUNT(*), COALESCE(SUM(size), 0) FROM files")
            db.execute("COMMIT")
        return Measure(int(files), int(size))

    def search(self, key: str, expression: str, kind: str | None, limit: int) -> list[Found]:
        """The files of the folder ``key`` matching the FTS5 ``expression`` (of ``kind``
        only, if given), best first: BM25 with the title weighing twice the text. Call
        after ``refresh``."""
        of_kind, params = "", [expression]
        if kind is not None:
            of_kind, params = " AND f.type = ?", [expression, kind]
        with self._open(key) as db:
            rows = db.execute(
                "SELECT f.type, f.path, w.title, w.text FROM words w"
                f" JOIN files f ON f.id = w.rowid WHERE words MATCH ?{of_kind}"
                " ORDER BY bm25(words, 2.0, 1.0) LIMIT ?",
                (*params, limit),
            ).fetchall()
        return [Found(*map(str, row)) for row in rows]

    def drop(self, key: str) -> None:
        """Forget the index of the folder ``key`` (the folder is gone)."""
        self._file(key).unlink(missing_ok=True)

    def _listed(self, folder: Path) -> Iterator[tuple[str, Path, tuple[int, ...]]]:
        """(type, path, stamp) of each file of ``folder`` a search reads."""
        for kind, (subfolder, suffix) in self._layout.items():
            try:
                with os.scandir(folder / subfolder) as listing:
                    entries = list(listing)
            except (FileNotFoundError, NotADirectoryError):
                continue
            for entry in entries:
                if entry.name.startswith(".") or not entry.name.endswith(suffix):
                    continue
                with contextlib.suppress(FileNotFoundError):  # gone meanwhile
                    if entry.is_file():
                        stat = entry.stat()
                        stamp = (stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino)
                        yield kind, Path(entry.path), stamp

    def _index(
        self, db: sqlite3.Connection, kind: str, path: Path, relative: str, stamp: tuple[int, ...]
    ) -> None:
        (row_id,) = db.execute(
            "INSERT INTO files (path, type, size, mtime_ns, ctime_ns, inode)"
            " VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
            (relative, kind, *stamp),
        ).fetchone()
        read = self._read(kind, path)
        if read is None:
            logger.warning("%s cannot be read as a %s file; skipped", path, kind)
            return
        db.execute("INSERT INTO words (rowid, title, text) VALUES (?, ?, ?)", (row_id, *read))

    @contextlib.contextmanager
    def _open(self, key: str) -> Iterator[sqlite3.Connection]:
        path = self._file(key)
        if not path.parent.is_dir():
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            (path.parent / ".gitignore").write_text("# a cache of spade-memory's searches\n*\n")
        db = sqlite3.connect(path, timeout=30.0, isolation_level=None)
        try:
            for statement in _SCHEMA:
                db.execute(statement)
            yield db
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        finally:
            db.close()

    def _file(self, key: str) -> Path:
        return self.root / f"{key}.db"


def _forget(db: sqlite3.Connection, row_id: int | None) -> None:
    if row_id is not None:
        db.execute("DELETE FROM files WHERE id = ?", (row_id,))
        db.execute("DELETE FROM words WHERE rowid = ?", (row_id,))
