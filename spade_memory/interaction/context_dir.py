"""A human-readable, git-friendly directory of what survives between sessions.

Per owner (a directory named after the owner's bare JID) and per shared
space (a directory named after the space, holding its knowledge), laid out as

    conversations/{conversation}_{unix_ts}.md   summary, YAML frontmatter
    user-preferences/{user}.yaml                one user's preferences
    knowledge/{name}.md                         named knowledge, YAML frontmatter

File names come from ids through ``safe_name`` (a slug plus a hash of the
id), so no id can leave the directory. Files are written atomically and read
at search time, so hand edits are picked up and a malformed file is skipped.
"""

from __future__ import annotations

import hashlib
import logging
import re
import shutil
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..storage.files import write_atomically
from ..storage.fts import match_expression
from .context_ops import ContextType

FOLDERS: dict[ContextType, str] = {
    "conversation": "conversations",
    "preferences": "user-preferences",
    "knowledge": "knowledge",
}
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
logger = logging.getLogger("spade_memory.interaction")


def safe_name(identifier: str, keep: int = 60) -> str:
    """A file-name stem for any id: readable, unique per id, never a path."""
    slug = _UNSAFE.sub("_", identifier).strip("._-")[:keep] or "id"
    digest = hashlib.sha256(identifier.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{slug}-{digest}"


@dataclass(frozen=True)
class ContextFile:
    type: ContextType
    path: str
    """Relative to the owner's directory."""
    title: str
    text: str


class ContextDirectory:
    def __init__(self, root: Path) -> None:
        self.root = root

    def owner_dir(self, owner: str) -> Path:
        return self._inside(self.root, safe_name(owner))

    def write_conversation(
        self, owner: str, conversation_id: str, summary: str, tags: list[str]
    ) -> ContextFile:
        now = time.time()
        front = {
            "type": "conversation", "owner": owner, "conversation": conversation_id,
            "created_at": _iso(now), "tags": tags,
        }  # fmt: skip
        name = f"{safe_name(conversation_id)}_{int(now)}.md"
        return self._write_markdown(owner, "conversation", name, front, summary, conversation_id)

    def write_knowledge(
        self, owner: str, name: str, content: str, tags: list[str], author: str | None = None
    ) -> ContextFile:
        """Write ``name`` in the folder of ``owner`` (a JID, or a shared space's folder
        key); the front matter names ``author`` (default: the owner) as its owner."""
        front = {
            "type": "knowledge", "owner": author or owner, "name": name,
            "created_at": _iso(time.time()), "tags": tags,
        }  # fmt: skip
        return self._write_markdown(
            owner, "knowledge", f"{safe_name(name)}.md", front, content, name
        )

    def save_preferences(self, owner: str, user: str, values: dict[str, Any]) -> dict[str, Any]:
        """Merge ``values`` into the user's preferences (given keys win); all of them."""
        path = self._file(owner, "preferences", f"{safe_name(user)}.yaml")
        merged = {**self.preferences(owner, user), **values}
        document = {"user": user, "preferences": merged}
        write_atomically(path, yaml.safe_dump(document, allow_unicode=True, sort_keys=False))
        return merged

    def preferences(self, owner: str, user: str) -> dict[str, Any]:
        path = self._file(owner, "preferences", f"{safe_name(user)}.yaml")
        document = _load_yaml(path)
        found = document.get("preferences") if document else None
        return dict(found) if isinstance(found, dict) else {}

    def search(
        self, owner: str, query: str, kind: ContextType | None = None, limit: int = 5
    ) -> list[ContextFile]:
        """The owner's files best matching ``query`` (BM25 over title and text)."""
        expression = match_expression(query)
        files = self._read_all(owner, kind)
        if expression is None or not files:
            return []
        with sqlite3.connect(":memory:") as db:
            db.execute(
                "CREATE VIRTUAL TABLE f USING fts5(title, text, tokenize='porter unicode61')"
            )
            db.executemany(
                "INSERT INTO f (rowid, title, text) VALUES (?, ?, ?)",
                [(n, file.title, file.text) for n, file in enumerate(files)],
            )
            rows = db.execute(
                "SELECT rowid FROM f WHERE f MATCH ? ORDER BY bm25(f, 2.0, 1.0) LIMIT ?",
                (expression, limit),
            ).fetchall()
        return [files[row[0]] for row in rows]

    def forget(self, owner: str, dry_run: bool = False) -> int:
        """Delete ``owner``'s folder (unless ``dry_run``); the number of files it held."""
        folder = self.owner_dir(owner)
        if not folder.is_dir():
            return 0
        count = sum(1 for path in folder.rglob("*") if path.is_file())
        if not dry_run:
            shutil.rmtree(folder)
        return count

    def _read_all(self, owner: str, kind: ContextType | None) -> list[ContextFile]:
        base = self.owner_dir(owner)
        found = []
        for file_type in [kind] if kind else list(FOLDERS):
            folder = base / FOLDERS[file_type]
            suffix = ".yaml" if file_type == "preferences" else ".md"
            for path in sorted(folder.glob(f"[!.]*{suffix}")) if folder.is_dir() else []:
                read = _read(file_type, path)
                if read is None:
                    logger.warning("%s cannot be read as a %s file; skipped", path, file_type)
                else:
                    found.append(_relative(read, base))
        return found

    def _write_markdown(
        self, owner: str, kind: ContextType, name: str, front: dict[str, Any], body: str,
        title: str,
    ) -> ContextFile:  # fmt: skip
        path = self._file(owner, kind, name)
        text = f"---\n{yaml.safe_dump(front, allow_unicode=True, sort_keys=False)}---\n{body}\n"
        write_atomically(path, text)
        return ContextFile(kind, str(path.relative_to(self.owner_dir(owner))), title, body)

    def _file(self, owner: str, kind: ContextType, name: str) -> Path:
        return self._inside(self.owner_dir(owner) / FOLDERS[kind], name)

    @staticmethod
    def _inside(folder: Path, name: str) -> Path:
        path = (folder / name).resolve()
        if path.parent != folder.resolve():  # safe_name makes this unreachable; kept as a guard
            raise ValueError(f"{name!r} would leave {folder}")
        return path


def _read(kind: ContextType, path: Path) -> ContextFile | None:
    """A file as written (or edited by hand); None if it cannot be parsed."""
    try:
        text = path.read_text(encoding="utf-8")
        if kind == "preferences":
            document = yaml.safe_load(text)
            if not isinstance(document, dict):
                return None
            return ContextFile(kind, str(path), str(document.get("user", path.stem)),
                               yaml.safe_dump(document.get("preferences", {})))  # fmt: skip
        if not text.startswith("---\n"):
            return None
        front_text, _, body = text[4:].partition("\n---\n")
        front = yaml.safe_load(front_text)
        if not isinstance(front, dict):
            return None
        title = str(front.get("conversation") or front.get("name") or path.stem)
        tags = " ".join(str(tag) for tag in front.get("tags") or [])
        return ContextFile(kind, str(path), title, f"{body.strip()}\n{tags}".strip())
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None


def _relative(file: ContextFile, base: Path) -> ContextFile:
    return ContextFile(file.type, str(Path(file.path).relative_to(base)), file.title, file.text)


def _load_yaml(path: Path) -> dict[str, Any] | None:
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    return document if isinstance(document, dict) else None


def _iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))
