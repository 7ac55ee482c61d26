"""Backups of a data directory: ``spade-memory backup``, ``restore`` and ``check``.

A backup is taken from a running service without stopping it: every SQLite
file is copied with SQLite's online backup API (a consistent snapshot, even
mid-write; copying the files of a live WAL database can give a damaged copy),
every other file as it is (the beads JSONL and the context directory are
replaced atomically by the service, so a copy is one whole version). A
``backup.json`` lists each file with its size and SHA-256, and each store
with its schema version and row counts. The embedded server's account database
(``account_database``) is one of the SQLite files. ``check`` runs SQLite's full
``integrity_check`` on every store of a data directory or a backup, names an
account database the manifest knows but that is gone, and compares a backup
with its ``backup.json``. ``restore`` checks the backup, refuses a data
directory a service is running on (it holds the directory's lock), keeps what
was there beside it, and copies the backup in. Backups and restored
directories are private (folders 0700, files 0600), whatever the umask.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spade_memory.server import account_database
from spade_memory.server.lock import LOCK, lock
from spade_memory.storage.files import TEMPORARY
from spade_memory.storage.manifest import FILE as MANIFEST
from spade_memory.storage.manifest import Manifest
from spade_memory.storage.private import tighten

BACKUP = "backup.json"
_SKIP = {LOCK}
_SQLITE_HEADER = b"SQLite format 3\x00"


def is_sqlite(path: Path) -> bool:
    """Whether ``path`` starts like an SQLite database."""
    try:
        with path.open("rb") as file:
            return file.read(16) == _SQLITE_HEADER
    except OSError:
        return False


def _files(root: Path) -> Iterator[Path]:
    for path in sorted(root.rglob("*")):
        name = path.name
        if (
            path.is_file() and name not in _SKIP and not name.startswith(TEMPORARY)
            and not name.endswith(("-wal", "-shm"))
        ):  # fmt: skip
            yield path


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _store_facts(path: Path) -> dict[str, Any]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        version = db.execute("PRAGMA user_version").fetchone()[0]
        tables = [row[0] for row in db.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'"
            " AND name NOT LIKE '%_fts%'"
        )]  # fmt: skip
        rows = {name: db.execute(f'SELECT COUNT(*) FROM "{name}"').fetchone()[0] for name in tables}
    return {"user_version": version, "rows": rows}


def files_to_back_up(data_dir: Path) -> list[Path]:
    """The files ``backup`` copies, in its order (the count a progress display needs)."""
    return [source for source in _files(data_dir) if source.name != MANIFEST]


def backup(
    data_dir: Path, destination: Path, told: Callable[[Path], None] | None = None
) -> dict[str, Any]:
    """Copy ``data_dir`` (running or not) into the new folder ``destination``; ``told``
    gets each file's path (relative to ``data_dir``) before it is copied.

    Returns the backup's ``backup.json``; raises ``FileExistsError`` if
    ``destination`` exists, ``OSError`` or ``sqlite3.Error`` if a file cannot be read.
    A backup that fails or is interrupted (Ctrl-C) is removed: a half-made folder
    never passes for a backup. The backup is its user's alone (folders 0700, files
    0600): it holds every memory and the embedded server's accounts.
    """
    destination.mkdir(mode=0o700, parents=True, exist_ok=False)
    try:
        return _copy_into(data_dir, destination, told)
    except BaseException:
        shutil.rmtree(destination, ignore_errors=True)
        raise


def _copy_into(
    data_dir: Path, destination: Path, told: Callable[[Path], None] | None
) -> dict[str, Any]:
    listed: dict[str, Any] = {}
    for source in files_to_back_up(data_dir):
        relative = source.relative_to(data_dir)
        if told is not None:
            told(relative)
        target = destination / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if is_sqlite(source):
            with sqlite3.connect(source) as live, sqlite3.connect(target) as copy:
                live.backup(copy)  # a consistent snapshot, WAL included
            copy_of = {"kind": "sqlite", **_store_facts(target)}
        else:
            shutil.copy2(source, target)
            copy_of = {"kind": "file"}
        listed[str(relative)] = {
            **copy_of,
            "bytes": target.stat().st_size,
            "sha256": _sha256(target),
        }
    record = {"created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "files": listed}
    (destination / BACKUP).write_text(json.dumps(record, indent=2, sort_keys=True))
    tighten(destination)  # copies keep their source's mode
    return record


@dataclass(frozen=True)
class Finding:
    """One thing ``check`` found wrong."""

    path: Path
    problem: str

    def __str__(self) -> str:
        return f"{self.path}: {self.problem}"


def check(folder: Path) -> list[Finding]:
    """Every problem of a data directory or a backup (an empty list: it is sound)."""
    found: list[Finding] = []
    listed = _listed(folder)
    manifest = Manifest(folder) if listed is None else None  # a backup has its checksums
    for path in _files(folder):
        if path.name in (BACKUP, MANIFEST):
            continue
        relative = str(path.relative_to(folder))
        if listed is not None:
            entry = listed.pop(relative, None)
            if entry is None:
                found.append(Finding(path, "not in backup.json"))
            elif entry.get("sha256") != _sha256(path):
                found.append(Finding(path, "differs from what backup.json recorded"))
        if is_sqlite(path) or path.suffix == ".db":
            found.extend(_check_store(path, manifest))
    found.extend(
        Finding(folder / name, "listed in backup.json but missing") for name in listed or {}
    )
    if listed is None and not (folder / account_database.FILE).exists():  # the manifest may know it
        missing = account_database.lost(folder)
        if missing is not None:
            found.append(Finding(folder / account_database.FILE, missing))
    return found


def _listed(folder: Path) -> dict[str, Any] | None:
    path = folder / BACKUP
    if not path.exists():
        return None
    files = json.loads(path.read_text()).get("files", {})
    return dict(files) if isinstance(files, dict) else {}


def _check_store(path: Path, manifest: Manifest | None) -> list[Finding]:
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            problems = [row[0] for row in db.execute("PRAGMA integrity_check")]
            pages = db.execute("PRAGMA page_count").fetchone()[0]
    except sqlite3.Error as error:
        return [Finding(path, f"not a sound database ({error})")]
    found = [Finding(path, problem) for problem in problems if problem != "ok"]
    held = 0 if manifest is None else manifest.pages(path)
    if pages < held:
        found.append(Finding(path, f"holds {pages} pages, but held {held}"))
    return found


def restore(source: Path, data_dir: Path) -> Path | None:
    """Put the backup ``source`` in place as ``data_dir``.

    Returns where the directory's former contents were kept (None if there were
    none); raises ``DataDirectoryInUse`` for a running service's directory and
    ``ValueError`` naming the problems of a backup that fails ``check``.
    """
    problems = check(source)
    if problems:
        raise ValueError(f"the backup fails its check: {problems[0]}")
    kept = None
    if data_dir.exists() and any(data_dir.iterdir()):
        held = lock(data_dir)  # refuses while a service runs there
        held.close()
        kept = data_dir.with_name(
            f"{data_dir.name}.before-restore-{time.strftime('%Y%m%d-%H%M%S')}"
        )
        data_dir.rename(kept)
    shutil.copytree(source, data_dir, ignore=shutil.ignore_patterns(BACKUP), dirs_exist_ok=True)
    tighten(data_dir)  # copies keep the backup's modes, an older backup's may be open
    manifest = Manifest(data_dir)
    for path in _files(data_dir):
        if is_sqlite(path):
            manifest.forget(path)  # the floors are the restored files' own
            with sqlite3.connect(path) as db:
                manifest.record(path, db.execute("PRAGMA page_count").fetchone()[0])
    return kept
