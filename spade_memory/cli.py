"""The ``spade-memory`` command: ``run`` the memory agents, ``demo`` an LLM agent with
memory, print the protocol ``schema``, ``import-interactions`` from spade_llm."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from . import protocol
from .limits import Limits
from .runtime import PASSWORD_ENV, SERVICES, RunConfig, serve, use_uvloop
from .stores.interaction import InteractionStore

DATA_ENV = "SPADE_MEMORY_DATA"


def default_data_dir() -> Path:
    if os.environ.get(DATA_ENV):
        return Path(os.environ[DATA_ENV])
    xdg = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(xdg) / "spade-memory"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="spade-memory", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="run the memory agents (and an embedded XMPP server)")
    run.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help=f"where memories live (default: ${DATA_ENV} or ~/.local/share/spade-memory)",
    )
    run.add_argument(
        "--domain",
        default="localhost",
        help="XMPP domain of the agents, and the host they connect to",
    )
    run.add_argument("--port", type=int, default=5222, help="XMPP client port")
    run.add_argument(
        "--s2s-port", type=int, default=5269, help="server-to-server port of the embedded server"
    )
    run.add_argument(
        "--external-server",
        action="store_true",
        help=f"connect to an XMPP server already running at DOMAIN:PORT instead of"
        f" starting the embedded one (password from ${PASSWORD_ENV})",
    )
    run.add_argument(
        "--base-jid",
        default=None,
        help="JID of the base memory agent (default: base-memory@DOMAIN)",
    )
    run.add_argument(
        "--interaction-jid",
        default=None,
        help="JID of the interaction memory agent (default: interaction-memory@DOMAIN)",
    )
    limits = run.add_argument_group("limits (exceeding one is answered resource-constraint)")
    limits.add_argument(
        "--max-content-chars", type=int, default=Limits.max_content_chars,
        help="longest content, context or query (default: %(default)s)",
    )  # fmt: skip
    limits.add_argument(
        "--max-results", type=int, default=Limits.max_results,
        help="largest limit a query may ask for (default: %(default)s)",
    )  # fmt: skip
    limits.add_argument(
        "--max-batch-ops", type=int, default=Limits.max_batch_ops,
        help="most ops in one batch request (default: %(default)s)",
    )  # fmt: skip
    limits.add_argument(
        "--max-in-flight", type=int, default=Limits.max_in_flight,
        help="most requests of one sender served at once (default: %(default)s)",
    )  # fmt: skip
    limits.add_argument(
        "--max-body-bytes", type=int, default=Limits.max_body_bytes,
        help="largest request body in bytes (default: %(default)s)",
    )  # fmt: skip
    run.add_argument(
        "--context-dir",
        type=Path,
        default=None,
        help="human-readable context directory, e.g. inside your git repository"
        " (default: DATA_DIR/context)",
    )
    run.add_argument(
        "--connect-timeout",
        type=float,
        default=15.0,
        help="seconds to wait for the XMPP server before giving up",
    )
    run.add_argument(
        "--no-dense-search",
        action="store_true",
        help="search with BM25 alone even when the embeddings extra is installed",
    )
    run.add_argument(
        "--beads-project",
        type=Path,
        default=None,
        help="project whose .beads/issues.jsonl keeps the memories, e.g. your git repository"
        " (default: DATA_DIR/beads)",
    )
    run.add_argument(
        "--beads-engine",
        choices=["auto", "native", "bd"],
        default="auto",
        help="bd on PATH (auto, when present) or the built-in JSONL engine",
    )
    run.add_argument(
        "--beads-debounce",
        type=float,
        default=5.0,
        help="seconds to gather base memory changes before one beads write",
    )
    run.add_argument(
        "--beads-git-commit",
        action="store_true",
        help="commit .beads/issues.jsonl to git after each beads write",
    )
    run.add_argument(
        "--services",
        default=",".join(SERVICES),
        help=f"which memory agents to run, comma-separated (default: {','.join(SERVICES)})",
    )
    run.add_argument(
        "--mirror-jid",
        default=None,
        help="beads sync agent the base memory agent reports to, when it runs elsewhere",
    )
    run.add_argument("--session", default=None, help="the beads sync agent's current session id")
    run.add_argument(
        "--durable",
        action="store_true",
        help="fsync every commit (survives power loss, not only crashes)",
    )

    demo = commands.add_parser(
        "demo", help="an LLM agent learns something, restarts, and recalls it (no network)"
    )
    demo.add_argument(
        "--data-dir", type=Path, default=None, help="keep the demo's memories here (default: none)"
    )

    commands.add_parser("schema", help="print the JSON Schema of every request and reply")

    notes = commands.add_parser(
        "import-interactions", help="import a spade_llm {agent}_interactions.json file"
    )
    notes.add_argument("file", type=Path)
    notes.add_argument("--data-dir", type=Path, default=None)
    notes.add_argument("--owner", default=None, help="owner JID (default: the file's agent_id)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "demo":
        return _demo(args.data_dir)
    if args.command == "schema":
        print(json.dumps(protocol.json_schemas(), indent=2))
        return 0
    if args.command == "import-interactions":
        database = RunConfig(data_dir=args.data_dir or default_data_dir()).interaction_memory_db
        try:
            count = asyncio.run(_import_interactions(database, args.file, args.owner))
        except (OSError, ValidationError) as error:
            print(f"spade-memory: cannot import {args.file}: {error}", file=sys.stderr)
            return 1
        print(f"imported {count} notes into {database}")
        return 0
    config = RunConfig(
        data_dir=args.data_dir or default_data_dir(),
        domain=args.domain,
        port=args.port,
        s2s_port=args.s2s_port,
        embedded_server=not args.external_server,
        base_jid=args.base_jid,
        interaction_jid=args.interaction_jid,
        context_directory=args.context_dir,
        limits=Limits(
            max_content_chars=args.max_content_chars,
            max_results=args.max_results,
            max_batch_ops=args.max_batch_ops,
            max_in_flight=args.max_in_flight,
            max_body_bytes=args.max_body_bytes,
        ),
        synchronous="FULL" if args.durable else "NORMAL",
        connect_timeout=args.connect_timeout,
        beads_project=args.beads_project,
        beads_engine=args.beads_engine,
        beads_debounce=args.beads_debounce,
        beads_git_commit=args.beads_git_commit,
        session=args.session,
        dense_search=not args.no_dense_search,
        services=tuple(name.strip() for name in args.services.split(",") if name.strip()),
        mirror=args.mirror_jid,
    )
    logging.basicConfig(
        level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s %(message)s"
    )
    use_uvloop()
    try:
        console = Console()
        asyncio.run(serve(config, lambda ready: _print_banner(ready, console)))
        console.print("stopped.")
    except RuntimeError as error:
        print(f"spade-memory: {error}", file=sys.stderr)
        return 1
    return 0


def _demo(data_dir: Path | None) -> int:
    # spade_llm imports litellm, which otherwise fetches a price list from the network.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from .demo import run_demo

    logging.basicConfig(level=logging.ERROR)
    console = Console()
    with tempfile.TemporaryDirectory(prefix="spade-memory-demo-") as scratch:
        asyncio.run(run_demo(data_dir or Path(scratch), console))
    return 0


async def _import_interactions(database: Path, file: Path, owner: str | None) -> int:
    store = await InteractionStore.open(database)
    try:
        return await store.import_spade_llm(file, owner)
    finally:
        await store.close()


def _print_banner(config: RunConfig, console: Console) -> None:
    table = Table(show_header=False, box=None)
    server = "embedded (SPADE's pyjabber)" if config.embedded_server else "external"
    table.add_row("XMPP server", f"{server} at {config.domain}:{config.port}")
    table.add_row("base memory agent", config.base_memory_jid)
    table.add_row("interaction memory agent", config.interaction_memory_jid)
    table.add_row("beads sync agent", config.beads_sync_jid)
    table.add_row("ontology", protocol.ONTOLOGY)
    table.add_row("data directory", str(config.data_dir))
    table.add_row("long-term memories", str(config.base_memory_db))
    table.add_row("conversation notes", str(config.interaction_memory_db))
    table.add_row("context directory", str(config.context_dir))
    table.add_row("beads issues", str(config.beads_dir / ".beads" / "issues.jsonl"))
    console.print(table)
    if config.embedded_server:
        console.print(
            "[bold yellow]warning:[/] the embedded XMPP server does not authenticate senders:"
            " any client can send as any JID, so memories are not private from other local"
            " clients. Use Prosody or another production server (--external-server) when"
            " identity matters."
        )
    console.print(
        f"spade-memory is ready; send requests to {config.base_memory_jid},"
        f" {config.interaction_memory_jid} and {config.beads_sync_jid}. Stop with Ctrl-C."
    )


if __name__ == "__main__":
    sys.exit(main())
