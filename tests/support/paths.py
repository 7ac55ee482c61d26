"""Where the repository's files are, for the tests that read them."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
ROOT = TESTS.parent
"""The repository's root (``docs/``, ``examples/``, ``prosody/``, ``benchmarks/``)."""
FIXTURES = TESTS / "fixtures"
SNAPSHOTS = TESTS / "snapshots"
SUPPORT = TESTS / "support"
