"""A human-readable, git-friendly directory of what survives between sessions.

Per owner (a directory named after the owner's bare JID) and per shared
space (a directory named after the space, holding its knowledge), laid out as

    conversations/{conversation}_{unix_ts}.md   summary, YAML frontmatter
    user-preferences/{user}.yaml                one user's preferences
    knowledge/{name}.md                         named knowledge, YAML frontmatter

File names come from ids through ``safe_name`` (a slug plus a hash of the
id), so no id can leave the directory. Files are written atomically; a search
finds them through each folder's index (``context_index``), which reads again
only the files changed since, so hand edits are picked up and a malformed file
is skipped. A write is prepared first (``Pending``: what it adds to its folder,
for the byte budget to allow), then written.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import yaml

from spade_memory.interaction.context_index import ContextIndex, Measure
from spade_memory.protocol.context import ContextType
from spade_memory.storage.files import write_atomically
from spade_memory.storage.fts import match_expression

FOLDERS: dict[ContextType, str] = {
    "conversation": "conversations",
    "preferences": "user-preferences",
    "knowledge": "knowledge",
}
SUFFIXES: dict[ContextType, str] = {
    "conversation": ".md",
    "preferences": ".yaml",
    "knowledge": ".md",
}
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


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


@dataclass(frozen=True)
class Pending:
    """A file about to be written: what it will hold, and how many bytes it adds to its
    folder (the file it replaces counted off; negative when it shrinks)."""

    owner: str
    """The folder's key: an owner's JID, or a shared space's folder key."""
    path: Path
    text: str
    written: ContextFile
    """The file as a search will show it."""
    grown: int


class ContextDirectory:
    def __init__(self, root: Path) -> None:
        self.root = root
        layout: dict[str, tuple[str, str]] = {k: (FOLDERS[k], SUFFIXES[k]) for k in FOLDERS}
        self._index = ContextIndex(root, layout, _searched)

    def owner_dir(self, owner: str) -> Path:
        return self._inside(self.root, safe_name(owner))

    def conversation_file(
        self, owner: str, conversation_id: str, summary: str, tags: list[str]
    ) -> Pending:
        """The summary file of a conversation, to ``write``."""
        now = time.time()
        front = {
            "type": "conversation", "owner": owner, "conversation": conversation_id,
            "created_at": _iso(now), "tags": tags,
        }  # fmt: skip
        name = f"{safe_name(conversation_id)}_{int(now)}.md"
        return self._markdown(owner, "conversation", name, front, summary, conversation_id)

    def knowledge_file(
        self, owner: str, name: str, content: str, tags: list[str], author: str | None = None
    ) -> Pending:
        """The knowledge file ``name`` in the folder of ``owner`` (a JID, or a shared
        space's folder key), to ``write``; the front matter names ``author`` (default:
        the owner) as its owner."""
        front = {
            "type": "knowledge", "owner": author or owner, "name": name,
            "created_at": _iso(time.time()), "tags": tags,
        }  # fmt: skip
        return self._markdown(owner, "knowledge", f"{safe_name(name)}.md", front, content, name)

    def preferences_file(
        self, owner: str, user: str, values: dict[str, Any]
    ) -> tuple[Pending, dict[str, Any]]:
        """The user's preferences file with ``values`` merged in (given keys win), to
        ``write``, and all the preferences it holds."""
        path = self._file(owner, "preferences", f"{safe_name(user)}.yaml")
        merged = {**self.preferences(owner, user), **values}
        document = {"user": user, "preferences": merged}
        text = yaml.safe_dump(document, allow_unicode=True, sort_keys=False)
        written = ContextFile("preferences", self._relative_path(owner, path), user, text)
        return Pending(owner, path, text, written, _grown(path, text)), merged

    def write(self, pending: Pending) -> None:
        """Write a prepared file (atomically; the next search or measure indexes it)."""
        write_atomically(pending.path, pending.text)

    def write_conversation(
        self, owner: str, conversation_id: str, summary: str, tags: list[str]
    ) -> ContextFile:
        """Write the summary file of a conversation (whatever the budget)."""
        pending = self.conversation_file(owner, conversation_id, summary, tags)
        self.write(pending)
        return pending.written

    def write_knowledge(
        self, owner: str, name: str, content: str, tags: list[str], author: str | None = None
    ) -> ContextFile:
        """Write the knowledge file ``name`` (whatever the budget; see ``knowledge_file``)."""
        pending = self.knowledge_file(owner, name, content, tags, author)
        self.write(pending)
        return pending.written

    def save_preferences(self, owner: str, user: str, values: dict[str, Any]) -> dict[str, Any]:
        """Merge ``values`` into the user's preferences (given keys win); all of them."""
        pending, merged = self.preferences_file(owner, user, values)
        self.write(pending)
        return merged

    def preferences(self, owner: str, user: str) -> dict[str, Any]:
        path = self._file(owner, "preferences", f"{safe_name(user)}.yaml")
        document = _load_yaml(path)
        found = document.get("preferences") if document else None
        return dict(found) if isinstance(found, dict) else {}

    def measure(self, owner: str) -> Measure:
        """What the folder of ``owner`` holds (its index brought in step with it first)."""
        folder = self.owner_dir(owner)
        if not folder.is_dir():
            self._index.drop(folder.name)
            return Measure()
        return self._index.refresh(folder.name, folder)

    def search(
        self, owner: str, query: str, kind: ContextType | None = None, limit: int = 5
    ) -> list[ContextFile]:
        """The owner's files best matching ``query`` (BM25 over title and text); only the
        files changed since the last search are read."""
        expression = match_expression(query)
        if expression is None or not self.measure(owner).files:
            return []
        found = self._index.search(self.owner_dir(owner).name, expression, kind, limit)
        return [ContextFile(cast(ContextType, f.type), f.path, f.title, f.text) for f in found]

    def forget(self, owner: str, dry_run: bool = False) -> int:
        """Delete ``owner``'s folder (unless ``dry_run``); the number of files it held."""
        folder = self.owner_dir(owner)
        if not folder.is_dir():
            return 0
        count = sum(1 for path in folder.rglob("*") if path.is_file())
        if not dry_run:
            shutil.rmtree(folder)
            self._index.drop(folder.name)
        return count

    def _markdown(
        self, owner: str, kind: ContextType, name: str, front: dict[str, Any], body: str,
        title: str,
    ) -> Pending:  # fmt: skip
        path = self._file(owner, kind, name)
        text = f"---\n{yaml.safe_dump(front, allow_unicode=True, sort_keys=False)}---\n{body}\n"
        written = ContextFile(kind, self._relative_path(owner, path), title, body)
        return Pending(owner, path, text, written, _grown(path, text))

    def _relative_path(self, owner: str, path: Path) -> str:
        return str(path.relative_to(self.owner_dir(owner)))

    def _file(self, owner: str, kind: ContextType, name: str) -> Path:
        return self._inside(self.owner_dir(owner) / FOLDERS[kind], name)

    @staticmethod
    def _inside(folder: Path, name: str) -> Path:
        path = (folder / name).resolve()
        if path.parent != folder.resolve():  # safe_name makes this unreachable; kept as a guard
            raise ValueError(f"{name!r} would leave {folder}")
        return path


def _grown(path: Path, text: str) -> int:
    """What writing ``text`` over ``path`` adds to its folder, in bytes."""
    try:
        before = path.stat().st_size
    except FileNotFoundError:
        before = 0
    return len(text.encode("utf-8", "surrogatepass")) - before


def _searched(kind: str, path: Path) -> tuple[str, str] | None:
    """(title, text) of a file as a search sees it; None if it cannot be parsed."""
    read = _read(cast(ContextType, kind), path)
    return None if read is None else (read.title, read.text)


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


def _load_yaml(path: Path) -> dict[str, Any] | None:
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    return document if isinstance(document, dict) else None


def _iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))
