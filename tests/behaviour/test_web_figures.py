"""The web view writes counts and sizes as a person reads them."""

from __future__ import annotations

import pytest

from spade_memory.web.figures import count, size


@pytest.mark.parametrize(
    ("number", "shown"),
    [(0, "0 B"), (309, "309 B"), (1023, "1,023 B"), (1024, "1 KiB"), (1536, "1.5 KiB"),
     (10 * 1024 + 700, "11 KiB"), (12 * 2**20, "12 MiB"), (2**30, "1 GiB"),
     (2**40 * 3 // 2, "1.5 TiB"), (2**60, "1,024 PiB")],
)  # fmt: skip
def test_sizes_are_in_the_largest_binary_unit_they_fill(number: int, shown: str) -> None:
    assert size(number) == shown


def test_counts_have_their_thousands_separated() -> None:
    assert count(1_000_000) == "1,000,000" and count(7) == "7"
