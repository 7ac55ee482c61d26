"""Where the entity graph's links could live: the shipped table against two layouts that
write less, on the same memories in the same run.

``python -m benchmarks.link_layouts`` (``--memories N``, ``--counts N``) writes the links
of the benchmark corpus's memories (``benchmarks.graph.texts``, found by the graph's own
finder) in transactions of a hundred, as a batched store does, into a bare SQLite file
per layout (WAL, ``synchronous=NORMAL``, as the stores run), then counts the memories
naming 24 of their terms up to the bound search's second round reads
(``follow.MOST_FOLLOWED + 1``), as a list question does. Layouts:

- **table**: the shipped ``memory_entities`` (``graph.links.TABLE``) and its index by
  memory, a row per link;
- **delta**: the same rows written to a small table of their own, moved into the big one
  in key order every 5,000 memories (a B-tree written as a log-structured merge); reads
  look in both;
- **FTS5**: names, titles and days in the table, a memory's terms as one row of an FTS5
  index (``detail=none``), which writes each transaction's terms as a segment of its own;
  counts are ``MATCH`` queries.

Write time is the second half's (the file grown), per memory; the ratios are to the
table's.
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table

from spade_memory.base_memory.graph import links
from spade_memory.base_memory.graph.extract import Mention, mentions
from spade_memory.base_memory.graph.follow import MOST_FOLLOWED

from .graph import texts

BATCH = 100
MERGE_EVERY = 5_000
"""Memories whose links wait in the delta table before they move into the big one."""
ASKED = 24
"""Entities counted at a time (``expansion.MOST_KEYS``)."""
BOUND = MOST_FOLLOWED + 1
INSERT = "INSERT INTO {table} VALUES (1, ?, ?, ?, ?, ?)"
TABLE = links.TABLE.format(seq="INTEGER", without_rowid=" WITHOUT ROWID")

Row = tuple[str, int, str, str | None, int]


def rows(found: Sequence[list[Mention]], seqs: range, kinds: str = "any") -> list[Row]:
    """The link rows of memories ``seqs`` (``kinds``: ``any``, or ``names`` for all but
    terms)."""
    return [
        (m.key, seq, m.kind, None if m.name == m.key else m.name, int(m.subject))
        for seq in seqs
        for m in found[seq]
        if kinds == "any" or m.kind != "term"
    ]


class Layout:
    """One way of keeping links: its tables, its write of a batch, its count."""

    name = "table"
    schema: tuple[str, ...] = (
        TABLE,
        "CREATE INDEX by_memory ON memory_entities_numbered(seq, kind)",
    )

    def write(self, db: sqlite3.Connection, found: Sequence[list[Mention]], seqs: range) -> None:
        db.executemany(INSERT.format(table="memory_entities_numbered"), rows(found, seqs))

    def count_sql(self) -> tuple[str, Callable[[str], tuple[object, ...]]]:
        one = (
            "SELECT ?, COUNT(*) FROM (SELECT 1 FROM memory_entities_numbered"
            f" WHERE space_id IN (1) AND key = ? LIMIT {BOUND}) AS k"
        )
        return one, lambda key: (key, key)


class Delta(Layout):
    name = "delta"
    schema = (
        *Layout.schema,
        TABLE.replace("memory_entities_numbered", "delta"),
        "CREATE INDEX delta_by_memory ON delta(seq, kind)",
    )

    def write(self, db: sqlite3.Connection, found: Sequence[list[Mention]], seqs: range) -> None:
        db.executemany(INSERT.format(table="delta"), rows(found, seqs))
        if seqs.stop % MERGE_EVERY == 0:
            db.execute(
                "INSERT INTO memory_entities_numbered SELECT * FROM delta"
                " ORDER BY space_id, key, seq"
            )
            db.execute("DELETE FROM delta")

    def count_sql(self) -> tuple[str, Callable[[str], tuple[object, ...]]]:
        one = (
            "SELECT ?, COUNT(*) FROM (SELECT 1 FROM memory_entities_numbered"
            " WHERE space_id IN (1) AND key = ? UNION ALL SELECT 1 FROM delta"
            f" WHERE space_id IN (1) AND key = ? LIMIT {BOUND}) AS k"
        )
        return one, lambda key: (key, key, key)


class Segments(Layout):
    name = "FTS5"
    schema = (*Layout.schema, "CREATE VIRTUAL TABLE term_index USING fts5(terms, detail=none)")

    def write(self, db: sqlite3.Connection, found: Sequence[list[Mention]], seqs: range) -> None:
        db.executemany(INSERT.format(table="memory_entities_numbered"), rows(found, seqs, "names"))
        db.executemany(
            "INSERT INTO term_index (rowid, terms) VALUES (?, ?)",
            [(seq, " ".join(f"s1{m.key}" for m in found[seq] if m.kind == "term")) for seq in seqs],
        )

    def count_sql(self) -> tuple[str, Callable[[str], tuple[object, ...]]]:
        one = (
            "SELECT ?, COUNT(*) FROM (SELECT 1 FROM term_index"
            f" WHERE term_index MATCH ? LIMIT {BOUND}) AS k"
        )
        return one, lambda key: (key, f'"s1{key}"')


def measure(
    layout: Layout, folder: Path, found: Sequence[list[Mention]], asked: list[str], counts: int
) -> tuple[float, float, float, list[int]]:
    """Seconds per memory of the second half's writes, bytes per memory, seconds per
    count of ``asked`` (p50), and the counts."""
    path = folder / f"{layout.name}.db"
    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        for statement in layout.schema:
            db.execute(statement)
        taken: list[float] = []
        for start in range(0, len(found), BATCH):
            begun = time.perf_counter()
            db.execute("BEGIN")
            layout.write(db, found, range(start, min(len(found), start + BATCH)))
            db.execute("COMMIT")
            taken.append(time.perf_counter() - begun)
        second = taken[len(taken) // 2 :]
        per_memory = sum(second) / (len(second) * BATCH)
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        size = path.stat().st_size / len(found)
        one, values = layout.count_sql()
        sql = " UNION ALL ".join([one] * len(asked))
        parameters = [value for key in asked for value in values(key)]
        samples = []
        for _ in range(counts):
            begun = time.perf_counter()
            answer = db.execute(sql, parameters).fetchall()
            samples.append(time.perf_counter() - begun)
        return per_memory, size, statistics.median(samples), sorted(int(n) for _, n in answer)
    finally:
        db.close()


def main(args: argparse.Namespace) -> None:
    found = [mentions(text) for text in texts(args.memories, seed=5)]
    terms = sorted({m.key for memory in found for m in memory if m.kind == "term"})
    asked = random.Random(1).sample(terms, ASKED)
    figures = {}
    with tempfile.TemporaryDirectory() as tmp:
        for layout in (Layout(), Delta(), Segments()):
            figures[layout.name] = measure(layout, Path(tmp), found, asked, args.counts)
    counted = {name: figure[3] for name, figure in figures.items()}
    assert len({tuple(c) for c in counted.values()}) == 1, counted  # the same answer
    write0, size0, count0, _ = figures["table"]
    table = Table(
        f"links of {args.memories:,} memories", "write µs/memory", "vs table", "bytes/memory",
        "vs table", f"count {ASKED} entities, ms", "vs table",
    )  # fmt: skip
    for name, (write, size, count, _) in figures.items():
        table.add_row(
            name, f"{write * 1e6:.1f}", f"{write / write0:.2f}x", f"{size:.0f}",
            f"{size / size0:.2f}x", f"{count * 1e3:.3f}", f"{count / count0:.2f}x",
        )  # fmt: skip
    Console().print(table)


def run() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.link_layouts", description=__doc__)
    parser.add_argument("--memories", type=int, default=100_000, help="memories linked (100,000)")
    parser.add_argument("--counts", type=int, default=200, help="counts timed per layout (200)")
    main(parser.parse_args())


if __name__ == "__main__":
    run()
