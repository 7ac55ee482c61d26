"""A space's vector index filled in a daemon thread (its vectors read from the file, or
an approximate index built), while the changes committed to the space meanwhile are
noted, to be replayed on the result before it takes over."""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Mapping
from typing import Any, Protocol


class Changeable(Protocol):
    def put(self, vectors: Mapping[int, Any]) -> None: ...

    def remove(self, seqs: Collection[int]) -> None: ...


class BackgroundFill:
    """Runs ``work`` in a daemon thread named ``name``; notes ``put`` and ``remove``."""

    def __init__(self, name: str, work: Callable[..., None], *args: Any) -> None:
        self._changes: list[tuple[bool, Any]] = []
        self._thread = threading.Thread(target=work, args=args, name=name, daemon=True)
        self._thread.start()

    @property
    def done(self) -> bool:
        return not self._thread.is_alive()

    def put(self, vectors: Mapping[int, Any]) -> None:
        self._changes.append((True, dict(vectors)))

    def remove(self, seqs: Collection[int]) -> None:
        self._changes.append((False, list(seqs)))

    def replay(self, index: Changeable) -> None:
        """Apply the changes noted, in order, to ``index``."""
        for put, change in self._changes:
            if put:
                index.put(change)
            else:
                index.remove(change)
