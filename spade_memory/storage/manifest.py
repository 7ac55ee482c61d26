"""What each store held when the service last ran, so a lost store is not taken for a new one.

SQLite never shrinks a database file on its own (deleted rows leave free
pages; only ``VACUUM`` gives them back, and no store runs it), so the page
count a store reached is a floor: a file that is missing, empty or smaller
than the manifest says lost data, and is refused like a damaged one. The
manifest (``manifest.json`` in the data directory) is written atomically
when a store opens and when it closes.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from spade_memory.storage.files import write_atomically

logger = logging.getLogger("spade_memory.storage")

FILE = "manifest.json"


class Manifest:
    """The page counts the stores of one data directory reached, by file name."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / FILE

    def _read(self) -> dict[str, dict[str, int]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as error:
            logger.warning("unreadable %s (%s): stores are not compared with it", self.path, error)
            return {}
        stores = data.get("stores") if isinstance(data, dict) else None
        return stores if isinstance(stores, dict) else {}

    def pages(self, store: Path) -> int:
        """The most pages ``store`` held (0 when the manifest does not know it)."""
        entry = self._read().get(store.name, {})
        pages = entry.get("pages", 0) if isinstance(entry, dict) else 0
        return pages if isinstance(pages, int) else 0

    def record(self, store: Path, pages: int) -> None:
        """Remember that ``store`` holds ``pages`` pages (never lowering what it held)."""
        stores = self._read()
        held = stores.get(store.name, {})
        if isinstance(held, dict) and isinstance(held.get("pages"), int) and held["pages"] >= pages:
            return
        stores[store.name] = {"pages": pages}
        write_atomically(self.path, json.dumps({"stores": stores}, indent=2, sort_keys=True))

    def forget(self, store: Path) -> None:
        """Forget ``store`` (it was restored, or moved aside on purpose)."""
        stores = self._read()
        if stores.pop(store.name, None) is not None:
            write_atomically(self.path, json.dumps({"stores": stores}, indent=2, sort_keys=True))
