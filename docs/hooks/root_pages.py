"""mkdocs hook: CHANGELOG.md and CONTRIBUTING.md of the repository's root, on the site.

The two files stay where GitHub and contributors look for them; the site shows them as
``changelog.md`` and ``contributing.md``, with their links into ``docs/`` made relative
to the site's pages.
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

PAGES = {"CHANGELOG.md": "changelog.md", "CONTRIBUTING.md": "contributing.md"}
_INTO_DOCS = re.compile(r"\]\(docs/")


def on_files(files: Files, config: MkDocsConfig) -> Files:
    root = Path(config.config_file_path).parent
    for source, uri in PAGES.items():
        text = (root / source).read_text(encoding="utf-8")
        files.append(File.generated(config, uri, content=_INTO_DOCS.sub("](", text)))
    return files
