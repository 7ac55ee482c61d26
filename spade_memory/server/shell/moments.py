"""The ``--as-of`` and ``--known-at`` times the reading verbs take (and the validity
times of a store): parsed here, apart from the verbs, so that the parser that every
command builds loads no verb's models."""

from __future__ import annotations

import argparse
from datetime import datetime, timezone
from typing import Any


def moment(text: str) -> datetime:
    """An ``--as-of`` or ``--known-at`` time: ISO 8601, UTC when it names no zone."""
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is no time: write it as 2026-05-01 or 2026-05-01T09:30+02:00"
        ) from None
    return when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)


def add_moment_options(parser: argparse.ArgumentParser) -> None:
    """``--as-of`` and ``--known-at`` on a reading verb."""
    parser.add_argument(
        "--as-of", type=moment, metavar="TIME",
        help="what was valid then (ISO 8601, UTC unless a zone is given; default: now)",
    )  # fmt: skip
    parser.add_argument("--known-at", type=moment, metavar="TIME", help="what the store held then")


def moments(args: argparse.Namespace) -> dict[str, Any]:
    """The op fields of a reading verb's ``--as-of`` and ``--known-at``."""
    return {"as_of": getattr(args, "as_of", None), "known_at": getattr(args, "known_at", None)}
