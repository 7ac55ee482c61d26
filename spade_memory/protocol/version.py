"""The installed package's version, for ``--version``, XEP-0092 and MCP's server info."""

from __future__ import annotations

import importlib.metadata


def package_version() -> str:
    """The installed package's version ("unknown" when run from a tree never installed)."""
    try:
        return importlib.metadata.version("spade-memory")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"
