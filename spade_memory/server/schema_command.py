"""``spade-memory schema``: the JSON Schema of every request and reply, or of one op's,
from the op models (the documentation's op reference is made from it)."""

from __future__ import annotations

import argparse
import json
import sys

from spade_memory.server.json_schema import json_schemas, op_names, op_schema
from spade_memory.server.parser import suggestion


def add_arguments(schema: argparse.ArgumentParser, name: str = "schema") -> None:
    """Add ``schema``'s one argument: the op."""
    schema.add_argument("op", nargs="?", help="one op, such as store_memory (default: all)")


def run(args: argparse.Namespace) -> int:
    """Print the schemas; returns 0, or 1 for an op it does not know."""
    return _schema(args.op)


def _schema(op: str | None) -> int:
    """Every schema, or one op's (an unknown op: one line naming the close ones)."""
    if op is None:
        print(json.dumps(json_schemas(), indent=2))
        return 0
    found = op_schema(op)
    if found is None:
        every = f"{len(op_names())} ops: the docs' op reference lists them"
        print(f"spade-memory schema: {suggestion(op, op_names(), every)}", file=sys.stderr)
        return 1
    print(json.dumps(found, indent=2))
    return 0
