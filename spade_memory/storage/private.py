"""Files readable by their owner alone: the data directory, backups, and what they hold.

Everything there is someone's: memories, conversation notes, the agents' password,
the embedded server's account database (every account's SCRAM hash) and its TLS
key. Whatever the umask of the shell that starts ``spade-memory``, folders are
made 0700 and files 0600: the command sets the process's umask to ``UMASK`` (files
SQLite makes beside a store, ``-wal`` and ``-shm``, take the store's own mode), and
``tighten`` takes group and other bits off what an earlier run or another tool left
looser. Symbolic links are not followed: what one points at is not the service's.
"""

from __future__ import annotations

import logging
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

logger = logging.getLogger("spade_memory.storage")

UMASK = 0o077
"""No bit for group or others: folders 0700, files 0600."""
_OPEN = 0o077
"""The bits ``tighten`` takes off: any access by group or others."""


def private_umask() -> int:
    """Make every file and folder this process creates from now on its user's alone.

    Returns the umask it replaces.
    """
    return os.umask(UMASK)


@dataclass
class Tightened:
    """What ``tighten`` changed: each path, with its mode before."""

    changed: list[tuple[Path, int]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.changed)

    def sentence(self, root: Path) -> str:
        """One line: how many, and one as an example (a file, if any was changed)."""
        files = [(path, mode) for path, mode in self.changed if not path.is_dir()]
        path, mode = (files or self.changed)[0]
        now = mode & ~_OPEN
        where = path.relative_to(root) if path != root else path
        return (
            f"{root}: made {len(self.changed)} files and folders that others could read"
            f" private (e.g. {where} was {mode:04o}, now {now:04o})"
        )


def tighten(root: Path) -> Tightened:
    """Take group and other access off ``root`` and everything under it.

    Symbolic links are neither changed nor followed. Returns what was changed
    (nothing when ``root`` does not exist); raises ``OSError`` when a mode cannot be
    changed.
    """
    done = Tightened()
    if not root.is_dir() or root.is_symlink():
        return done
    _tighten_one(root, done)
    for folder, folders, files in os.walk(root):  # os.walk follows no link by default
        for name in (*folders, *files):
            _tighten_one(Path(folder, name), done)
    return done


def _tighten_one(path: Path, done: Tightened) -> None:
    status = os.lstat(path)
    mode = stat.S_IMODE(status.st_mode)
    if stat.S_ISLNK(status.st_mode) or not mode & _OPEN:
        return
    os.chmod(path, mode & ~_OPEN)
    done.changed.append((path, mode))


def tighten_and_say(root: Path) -> Tightened:
    """``tighten``, with one warning line when anything was changed."""
    done = tighten(root)
    if done:
        logger.warning("%s", done.sentence(root))
    return done
