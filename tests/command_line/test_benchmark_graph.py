"""The entity graph's benchmark command, on a few hundred memories: it compares a store
and a search with the graph against the same without it (``entity_graph=False``), in
one run, and prints each ratio."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from tests.support.paths import ROOT


def test_one_command_prints_the_graph_s_costs_against_none() -> None:
    result = subprocess.run(
        [
            sys.executable, "-m", "benchmarks.graph", "--stores", "20", "--memories", "300",
            "--queries", "10", "--skip-wire",
        ],
        capture_output=True, text=True, timeout=240, cwd=ROOT,
        env={**os.environ, "COLUMNS": "200"},  # rich: one line per row
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    for row in ("with its entities", "asks for several", "asks for one"):
        assert re.search(rf"{row}\s.*\d+\.\d\dx", result.stdout), (row, result.stdout)
    disk = re.search(r"disk: (\d+) bytes per memory with the graph, (\d+) without", result.stdout)
    assert disk is not None and int(disk[1]) > int(disk[2])  # the links take room
    assert "relink at open: 300 memories linked again" in result.stdout  # the same links


def test_one_command_compares_where_links_could_live() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.link_layouts", "--memories", "600", "--counts", "3"],
        capture_output=True, text=True, timeout=240, cwd=ROOT,
        env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr  # every layout counted the same
    for layout in ("table", "delta", "FTS5"):
        assert re.search(rf"{layout}\s.*\d+\.\d\dx.*\d+\.\d\dx.*\d+\.\d\dx", result.stdout), (
            layout,
            result.stdout,
        )
