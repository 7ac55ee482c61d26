"""The embedded XMPP server's account database, guarded like the stores.

On the embedded server an account is made at its first login, by whoever logs in
first, and the owner of a memory is the JID that sent it: were
``DATA_DIR/xmpp-server.db`` lost, every agent's name (and the memories kept under
it) would go to whoever registered it first. So once the file has held accounts,
the manifest keeps its page count as it keeps the stores' (``storage/manifest.py``;
pyjabber never runs ``VACUUM`` either), and ``run`` refuses to start when it is
missing, empty, smaller than that, or fails its integrity check: one line naming
the file and the way out (``spade-memory restore`` from a backup, or
``spade-memory reset-accounts`` to start with no accounts on purpose). ``backup``
copies it like a store (SQLite's backup API) and ``check`` checks it. With an
external XMPP server there is no account database here.
"""

from __future__ import annotations

import os
import sqlite3
import time
from contextlib import closing
from pathlib import Path

from spade_memory.server.lock import lock
from spade_memory.storage.faults import DamagedStore
from spade_memory.storage.manifest import Manifest

FILE = "xmpp-server.db"
"""The account database's name in the data directory (pyjabber's SQLite file)."""


def way_out(data_dir: Path) -> str:
    """What to do about a lost account database of ``data_dir``."""
    return (
        f"restore the data directory from a backup (spade-memory restore BACKUP --data-dir"
        f" {data_dir}), or, to start with no accounts on purpose (each agent's name is then"
        f" anyone's to register first), run spade-memory reset-accounts --data-dir {data_dir}"
    )


def lost(data_dir: Path) -> str | None:
    """What is wrong with the account database of ``data_dir`` if it holds less than it
    held (None: it is sound, or has never held accounts)."""
    path = data_dir / FILE
    held = Manifest(data_dir).pages(path)
    if not path.exists() or path.stat().st_size == 0:
        if not held:
            return None  # a first start: pyjabber makes it
        state = "is missing" if not path.exists() else "is empty"
        return f"{state}, but held {held} pages of accounts when the service last ran"
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
            problems = [str(row[0]) for row in db.execute("PRAGMA quick_check")]
            pages = int(db.execute("PRAGMA page_count").fetchone()[0])
    except sqlite3.Error as error:
        return f"not a sound database ({error})"
    if problems != ["ok"]:
        return f"fails its integrity check ({problems[0]})"
    if pages < held:
        return f"holds {pages} pages, but held {held} when the service last ran"
    return None


def guarded(data_dir: Path) -> Path:
    """The account database's path, once it is found to hold what it held.

    Raises ``DamagedStore`` naming the file and the way out when it is missing,
    empty, smaller than the manifest says, or damaged.
    """
    problem = lost(data_dir)
    if problem is not None:
        raise DamagedStore(data_dir / FILE, problem, way_out(data_dir))
    return data_dir / FILE


def record(data_dir: Path) -> None:
    """Keep the account database's page count in the manifest (nothing without one)."""
    path = data_dir / FILE
    if not path.exists():
        return
    # read-write (it writes nothing): closed last, after the server's stop, it folds the
    # WAL back into the file and removes it, as pyjabber's own last connection would
    with closing(sqlite3.connect(f"file:{path}?mode=rw", uri=True)) as db:
        pages = int(db.execute("PRAGMA page_count").fetchone()[0])
    Manifest(data_dir).record(path, pages)


def reset(data_dir: Path) -> Path | None:
    """Start the embedded server's accounts afresh: the account database (with its
    ``-wal`` and ``-shm`` files) is moved aside and the manifest forgets it, so the
    next ``run`` makes a new one (each account at its first login).

    Returns where the old file was kept (None if there was none); raises
    ``DataDirectoryInUse`` while a service runs there and ``ValueError`` when
    ``data_dir`` is not a directory.
    """
    if not data_dir.is_dir():
        raise ValueError(f"{data_dir} is not a data directory")
    held = lock(data_dir)  # refuses while a service runs there
    try:
        path = data_dir / FILE
        kept = None
        if path.exists():
            kept = path.with_name(f"{FILE}.before-reset-{time.strftime('%Y%m%d-%H%M%S')}")
            for suffix in ("", "-wal", "-shm"):
                if Path(f"{path}{suffix}").exists():
                    os.replace(f"{path}{suffix}", f"{kept}{suffix}")
        Manifest(data_dir).forget(path)
        return kept
    finally:
        held.close()
