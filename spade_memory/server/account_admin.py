"""The embedded server's accounts, read and changed in its account database: while the
service runs, or not.

pyjabber keeps an account as a row of ``credentials`` (its name and a salted PBKDF2
hash) and reads that row at every login, through a new transaction: a password set or
an account deleted here holds from the next login on (sessions already connected stay
until they end). pyjabber records no time, so the embedded server notes when it made
each account in a table of its own beside them (``MADE``; accounts made before it
existed show no time). Writes go through SQLite's own locking (the file is in WAL
mode, pyjabber's writes and these wait for each other), never shrink the file (no
``VACUUM``), and raise the page count the manifest keeps (``account_database.record``),
so the guard of the account database still holds.
"""

from __future__ import annotations

import binascii
import hashlib
import secrets
import sqlite3
from contextlib import closing
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from spade_memory.server.account_database import FILE, record

MADE = "spade_memory_account_made"
"""The table of when each account was made (name, ISO 8601 UTC time)."""
MADE_TABLE = f"CREATE TABLE IF NOT EXISTS {MADE} (jid TEXT PRIMARY KEY, made TEXT NOT NULL)"
ITERATIONS = 100_000
"""PBKDF2 rounds of a password set here (pyjabber's own choice at registration)."""
BUSY_SECONDS = 10.0
"""How long a write waits for the running server's own writes."""


class NoSuchAccount(LookupError):
    """The account database holds no account of that name (or there is none yet)."""


@dataclass(frozen=True)
class Account:
    """An account of the embedded server: its name (the JID's local part) and when it was
    made (None: before times were noted)."""

    name: str
    made: datetime | None


def now_text() -> str:
    """The current time as the ``MADE`` table keeps it."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def hash_password(password: str) -> str:
    """``password`` hashed as pyjabber stores and checks it (``sha256$ROUNDS$SALT$HASH``,
    PBKDF2-HMAC-SHA256, salt and hash in hex)."""
    salt = secrets.token_bytes(16)
    derived = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, ITERATIONS)
    return f"sha256${ITERATIONS}${binascii.hexlify(salt).decode()}${derived.hex()}"


def list_accounts(data_dir: Path) -> list[Account]:
    """Every account of ``data_dir``'s embedded server, oldest first (none when the
    server never ran there). Raises ``sqlite3.Error`` when the file is not a database."""
    path = data_dir / FILE
    if not path.exists() or path.stat().st_size == 0:
        return []
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=BUSY_SECONDS)) as db:
        if not _has_table(db, "credentials"):
            return []
        joined = _has_table(db, MADE)
        rows = db.execute(
            f"SELECT c.jid, m.made FROM credentials c LEFT JOIN {MADE} m ON m.jid = c.jid"
            " ORDER BY c.id"
            if joined
            else "SELECT jid, NULL FROM credentials ORDER BY id"
        ).fetchall()
    return [Account(str(name), _time(made)) for name, made in rows]


def set_password(data_dir: Path, name: str, password: str) -> None:
    """Give the account ``name`` a new password (from its next login on).

    Raises ``NoSuchAccount`` when there is no such account, ``sqlite3.Error`` when the
    file cannot be written.
    """
    hashed = hash_password(password)
    with _writing(data_dir) as db:
        changed = db.execute("UPDATE credentials SET hash_pwd = ? WHERE jid = ?", (hashed, name))
        if changed.rowcount == 0:
            raise NoSuchAccount(name)
    record(data_dir)


def delete_account(data_dir: Path, name: str) -> None:
    """Delete the account ``name`` and its roster; its name is then anyone's to register.

    Raises ``NoSuchAccount`` when there is no such account, ``sqlite3.Error`` when the
    file cannot be written.
    """
    with _writing(data_dir) as db:
        if db.execute("DELETE FROM credentials WHERE jid = ?", (name,)).rowcount == 0:
            raise NoSuchAccount(name)
        prefix = f"{name}@"
        db.execute("DELETE FROM roster WHERE substr(jid, 1, ?) = ?", (len(prefix), prefix))
        if _has_table(db, MADE):
            db.execute(f"DELETE FROM {MADE} WHERE jid = ?", (name,))
    record(data_dir)


class _writing:
    """One write transaction on the account database (it must exist already)."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / FILE

    def __enter__(self) -> sqlite3.Connection:
        if not self.path.exists() or self.path.stat().st_size == 0:
            raise NoSuchAccount("")
        self.db = sqlite3.connect(
            f"file:{self.path}?mode=rw", uri=True, timeout=BUSY_SECONDS, isolation_level=None
        )
        self.db.execute("BEGIN IMMEDIATE")
        return self.db

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        try:
            self.db.execute("COMMIT" if error is None else "ROLLBACK")
        finally:
            self.db.close()


def _has_table(db: sqlite3.Connection, name: str) -> bool:
    found = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,))
    return found.fetchone() is not None


def _time(text: object) -> datetime | None:
    try:
        return datetime.fromisoformat(str(text)) if text else None
    except ValueError:
        return None
