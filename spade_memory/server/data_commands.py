"""The commands on a data directory: ``backup``, ``check``, ``restore``,
``reset-accounts``, ``import-base-memory``, ``import-interactions`` and ``migrate``. Each
says what it did in a line, or what is wrong, one per line (exit status 1)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sqlite3
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from spade_memory.server import account_database, backup, imports, progress
from spade_memory.server.data_dir import default_data_dir
from spade_memory.server.runtime import EXIT_AT_ONCE
from spade_memory.storage.faults import StoreFault
from spade_memory.storage.postgres import shown


def add_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    """Add the flags of the command ``name``."""
    if name == "backup":
        parser.add_argument("destination", type=Path, help="a new folder for the backup")
        parser.add_argument("--data-dir", type=Path, default=None)
    elif name == "check":
        parser.add_argument("folder", type=Path, nargs="?", default=None, help="default: DATA_DIR")
    elif name == "restore":
        parser.add_argument("source", type=Path, help="a folder made by spade-memory backup")
        parser.add_argument("--data-dir", type=Path, required=True)
    elif name == "reset-accounts":
        parser.add_argument("--data-dir", type=Path, default=None)
    elif name == "import-base-memory":
        parser.add_argument("files", type=Path, nargs="+", metavar="FILE")
        parser.add_argument("--data-dir", type=Path, default=None)
    elif name == "import-interactions":
        parser.add_argument("file", type=Path)
        parser.add_argument("--data-dir", type=Path, default=None)
        parser.add_argument(
            "--owner", default=None, help="owner JID (default: the file's agent_id)"
        )
    else:  # migrate
        parser.add_argument(
            "--from", dest="source", type=Path, default=None, metavar="DATA_DIR",
            help="the data directory of a stopped service (default: DATA_DIR)",
        )  # fmt: skip
        parser.add_argument(
            "--to", dest="database", required=True, metavar="URL",
            help="an empty PostgreSQL database (postgresql://USER@HOST/DB)",
        )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    """Run the parsed command; returns 0, or 1 with what is wrong on stderr (130 when
    a backup or migration is interrupted)."""
    if args.command in ("import-base-memory", "import-interactions"):
        return _import(args)
    if args.command == "migrate":
        return _migrate(args.source or default_data_dir(), args.database)
    return _data_command(args)


def _data_command(args: argparse.Namespace) -> int:
    """backup, check, restore and reset-accounts: what was done in a line, or what is
    wrong, one per line."""
    try:
        if args.command == "reset-accounts":
            return _reset_accounts(args.data_dir or default_data_dir())
        if args.command == "backup":
            source = args.data_dir or default_data_dir()
            if args.destination.exists():
                print(
                    f"spade-memory: {args.destination} already exists; back up into a new"
                    " folder (or remove that one first)",
                    file=sys.stderr,
                )
                return 1
            return _backup(source, args.destination)
        if args.command == "restore":
            kept = backup.restore(args.source, args.data_dir)
            where = f"; what was there is kept in {kept}" if kept else ""
            print(f"restored {args.source} into {args.data_dir}{where}")
            return 0
        folder = args.folder or default_data_dir()
        problems = backup.check(folder)
    except (OSError, ValueError, RuntimeError, sqlite3.Error) as error:
        print(f"spade-memory: {error}", file=sys.stderr)
        return 1
    for problem in problems:
        print(f"spade-memory: {problem}", file=sys.stderr)
    if not problems:
        print(f"{folder}: every store passes its integrity check")
    return 1 if problems else 0


def _backup(source: Path, destination: Path) -> int:
    """A backup with its progress (files copied); an interrupted one is removed."""
    try:
        total = len(backup.files_to_back_up(source)) if source.is_dir() else None
        with progress.steps(Console(), f"backing up {source}", total) as step:
            record = backup.backup(source, destination, lambda file: step(str(file)))
    except KeyboardInterrupt:
        print("spade-memory: backup interrupted; the unfinished copy is removed", file=sys.stderr)
        return EXIT_AT_ONCE
    print(f"backed up {len(record['files'])} files of {source} into {destination}")
    return 0


def _reset_accounts(data_dir: Path) -> int:
    """The account database moved aside: what was done, in a line."""
    kept = account_database.reset(data_dir)
    old = f"; the old one is kept as {kept} (remove it when done with it)" if kept else ""
    print(f"{data_dir}: the next run starts with no accounts, each made at its first login{old}")
    return 0


def _import(args: argparse.Namespace) -> int:
    """spade_llm's files into the data directory: a line per file, or one sentence."""
    data_dir = args.data_dir or default_data_dir()
    try:
        if args.command == "import-base-memory":
            with progress.counting(Console(stderr=True), "importing memories", None) as advance:
                done = asyncio.run(imports.import_base_memory(data_dir, args.files, advance))
            what = "memories"
        else:
            done = [asyncio.run(imports.import_interactions(data_dir, args.file, args.owner))]
            what = "notes"
    except (OSError, ValueError, StoreFault, sqlite3.Error, RuntimeError) as error:
        print(f"spade-memory: cannot import: {error}", file=sys.stderr)
        return 1
    for imported in done:
        print(imported.sentence(what))
    return 0


def _migrate(data_dir: Path, url: str) -> int:
    """A data directory into PostgreSQL: the rows moved per table, or one sentence."""
    from spade_memory.server import migrate

    logging.basicConfig(level=logging.CRITICAL)  # what fails is said in one sentence
    console = Console(stderr=True)
    where = shown(url) if url.startswith(("postgresql://", "postgres://")) else url
    try:
        with progress.steps(console, f"migrating {data_dir} to {where}") as step:
            moved = asyncio.run(
                migrate.migrate(data_dir, url, lambda table, rows: step(f"{table}, {rows:,} rows"))
            )
    except KeyboardInterrupt:  # the migration's one transaction is rolled back
        print("spade-memory: migration interrupted; nothing was moved", file=sys.stderr)
        return EXIT_AT_ONCE
    except Exception as error:  # every failure is one sentence; nothing was committed
        print(f"spade-memory: cannot migrate {data_dir} to {where}: {error}", file=sys.stderr)
        return 1
    table = Table("table", "rows", title=f"moved into {moved.url}")
    for name, rows in moved.rows.items():
        table.add_row(name, f"{rows:,}")
    Console().print(table)
    print(
        f"{moved.memories:,} memories, {moved.notes:,} notes moved;"
        " now run: spade-memory run --database URL"
    )
    return 0
