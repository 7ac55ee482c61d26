"""``spade-memory run``: the memory agents, and the embedded XMPP server unless told of
another; ready in one banner, stopped by Ctrl-C, every failure one line."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import threading
import traceback
from dataclasses import replace
from pathlib import Path

from rich.console import Console
from rich.table import Table

from spade_memory.protocol.limits import Limits
from spade_memory.server import progress, web_command
from spade_memory.server.data_dir import DATA_ENV, default_data_dir, env_path
from spade_memory.server.embedded import OfflineLimits
from spade_memory.server.registry import NAMES, SERVICES
from spade_memory.server.runtime import (
    EXIT_AT_ONCE,
    INTERRUPTED_START,
    PASSWORD_ENV,
    STEP_SECONDS,
    RunConfig,
    StartInterrupted,
    run_service,
    use_uvloop,
)
from spade_memory.server.secrets_given import Refused
from spade_memory.storage.faults import StoreFault, free_bytes
from spade_memory.storage.postgres import is_url, shown
from spade_memory.xmpp import wire


def add_arguments(run: argparse.ArgumentParser, name: str = "run") -> None:
    """Add ``run``'s flags: the server, limits and quotas, stores, and each service's own."""
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
    run.add_argument(
        "--port", type=int, default=5222,
        help="XMPP client port: the embedded server listens there, the agents connect there"
        " (default: %(default)s; a second service on one machine needs another)",
    )  # fmt: skip
    run.add_argument(
        "--s2s-port", type=int, default=None, metavar="PORT",
        help="let other XMPP servers connect to the embedded one on this port (the standard"
        " is 5269; default: no server-to-server connections)",
    )  # fmt: skip
    run.add_argument(
        "--external-server",
        action="store_true",
        help=f"connect to an XMPP server already running at DOMAIN:PORT instead of"
        f" starting the embedded one (password from ${PASSWORD_ENV})",
    )
    embedded = run.add_argument_group("the embedded XMPP server")
    embedded.add_argument(
        "--registrations-per-minute", type=int, default=60, metavar="N",
        help="new accounts one source address may make in a minute; 0: no limit"
        " (default: %(default)s)",
    )  # fmt: skip
    for flag, default, what in (
        ("--offline-messages", OfflineLimits.messages_per_account,
         "messages kept for one account with no available session"),
        ("--offline-bytes", OfflineLimits.bytes_per_account,
         "bytes of messages kept for one such account"),
        ("--offline-bytes-in-all", OfflineLimits.bytes_in_all,
         "bytes of messages kept for all such accounts together"),
    ):  # fmt: skip
        embedded.add_argument(flag, type=int, default=default, help=f"most {what} (%(default)s)")
    limits = run.add_argument_group("limits (exceeding one is answered resource-constraint)")
    for flag, default, what in (
        ("--max-content-chars", Limits.max_content_chars, "longest content, context or query"),
        ("--max-results", Limits.max_results, "largest limit a query may ask for"),
        ("--max-offset", Limits.max_offset, "largest offset a list may skip to"),
        ("--max-batch-ops", Limits.max_batch_ops, "most ops in one batch request"),
        ("--max-in-flight", Limits.max_in_flight,
         "most requests of one sender waiting or served"),
        ("--max-in-progress", Limits.max_in_progress,
         "most requests served at once, all senders together; more wait, senders in turn"),
        ("--max-sender-ops", Limits.max_sender_ops,
         "most ops of one sender served at once, a batch counting its ops; more wait"),
        ("--sender-answer-rate", Limits.sender_answer_rate,
         "bytes a second of answers one sender is served, on average; past it, it waits"
         " while others are served (0: no limit)"),
        ("--max-waiting", Limits.max_waiting,
         "most requests waiting their turn, all senders together"),
    ):  # fmt: skip
        limits.add_argument(flag, type=int, default=default, help=f"{what} (default: %(default)s)")
    quotas = run.add_argument_group("quotas (a store over one is answered resource-constraint)")
    for flag, default, what in (
        ("--max-memories-per-owner", Limits.max_memories_per_owner, "memories one JID stores"),
        ("--max-bytes-per-owner", Limits.max_bytes_per_owner, "bytes one JID stores"),
        ("--max-memories-per-space", Limits.max_memories_per_space, "memories a space holds"),
        ("--max-bytes-per-space", Limits.max_bytes_per_space, "bytes a space holds"),
    ):
        quotas.add_argument(flag, type=int, default=default, help=f"most {what} (%(default)s)")
    for flag, default, what in (
        ("--max-body-bytes", Limits.max_body_bytes, "largest request body in bytes"),
        ("--retry-answers-bytes", Limits.retry_answers_bytes,
         "bytes of answers to recent writes kept so a retry is not applied twice"),
        ("--max-answer-bytes", Limits.max_answer_bytes,
         "bytes of memories, notes or conversations one answer carries, a batch's answers"
         " together; a page past it ends early with its next offset"),
        ("--max-reply-bytes", Limits.max_reply_bytes,
         "bytes one reply's body may take in its stanza, escaped (keep it under the XMPP"
         " server's stanza limit: Prosody's is 256 KiB); a longer answer is refused"),
        ("--max-pending-proposals", Limits.max_pending_proposals,
         "proposals one writer may have waiting in a governed space"),
        ("--max-space-proposals", Limits.max_space_proposals,
         "proposals waiting in one governed space, all writers"),
        ("--max-versions", Limits.max_versions,
         "versions of a long-term memory kept for memory_history, the current one counted"),
    ):  # fmt: skip
        limits.add_argument(flag, type=int, default=default, help=f"{what} (default: %(default)s)")
    run.add_argument(
        "--connect-timeout",
        type=float,
        default=15.0,
        help="seconds to wait for the XMPP server before giving up",
    )
    run.add_argument(
        "--services",
        default=",".join(NAMES),
        help=f"which memory agents to run, comma-separated (default: {','.join(NAMES)})",
    )
    run.add_argument(
        "--durable",
        action="store_true",
        help="fsync every commit (survives power loss, not only crashes)",
    )
    run.add_argument(
        "--spaces", type=Path, metavar="FILE", default=env_path("SPADE_MEMORY_SPACES"),
        help="TOML or YAML file of spaces, members and quotas to create at start"
        " (default: $SPADE_MEMORY_SPACES)",
    )  # fmt: skip
    run.add_argument(
        "--spaces-db", type=Path, metavar="FILE", default=env_path("SPADE_MEMORY_SPACES_DB"),
        help="the directory of spaces, shared by memory agents that run apart"
        " (default: $SPADE_MEMORY_SPACES_DB, else the --database, else DATA_DIR/spaces.db)",
    )  # fmt: skip
    run.add_argument(
        "--database", metavar="URL", default=os.environ.get("SPADE_MEMORY_DATABASE"),
        help="keep long-term memories, conversation notes, working memories and the"
        " directory of spaces in this PostgreSQL"
        " database (postgresql://USER@HOST/DB;"
        " default: $SPADE_MEMORY_DATABASE, else a SQLite file in the data directory)",
    )  # fmt: skip
    run.add_argument(
        "--allow-damaged",
        action="store_true",
        help="start the other services when a store is damaged (its agent answers"
        " service-unavailable) instead of refusing to start",
    )
    run.add_argument(
        "--web", type=web_command.web_address, metavar="[HOST:]PORT", default=None,
        help="serve the web view there too (a bare port is on 127.0.0.1; see `spade-memory"
        " web`)",
    )  # fmt: skip
    web_command.add_allowed_host_option(run, "--web-allowed-host")
    web_command.add_metrics_option(run)
    run.add_argument(
        "--debug", action="store_true", help="show the traceback of a failure to start or stop"
    )
    for service in SERVICES:
        service.add_arguments(run.add_argument_group(service.title))


def run(args: argparse.Namespace) -> int:
    """Serve until stopped; returns 0, 2 for flags that cannot work together, or 1 with
    one line saying what failed (and how to mend it)."""
    config = RunConfig(
        data_dir=args.data_dir or default_data_dir(),
        domain=args.domain,
        port=args.port,
        s2s_port=args.s2s_port,
        embedded_server=not args.external_server,
        registrations_per_minute=args.registrations_per_minute,
        offline=OfflineLimits(args.offline_messages, args.offline_bytes, args.offline_bytes_in_all),
        limits=Limits(
            max_content_chars=args.max_content_chars,
            max_results=args.max_results,
            max_offset=args.max_offset,
            max_batch_ops=args.max_batch_ops,
            max_in_flight=args.max_in_flight,
            max_in_progress=args.max_in_progress,
            max_waiting=args.max_waiting,
            max_sender_ops=args.max_sender_ops,
            sender_answer_rate=args.sender_answer_rate,
            max_memories_per_owner=args.max_memories_per_owner,
            max_bytes_per_owner=args.max_bytes_per_owner,
            max_memories_per_space=args.max_memories_per_space,
            max_bytes_per_space=args.max_bytes_per_space,
            max_body_bytes=args.max_body_bytes,
            max_versions=max(1, args.max_versions),
            max_answer_bytes=args.max_answer_bytes,
            max_reply_bytes=args.max_reply_bytes,
            max_pending_proposals=args.max_pending_proposals,
            max_space_proposals=args.max_space_proposals,
            retry_answers_bytes=args.retry_answers_bytes,
        ),
        synchronous="FULL" if args.durable else "NORMAL",
        connect_timeout=args.connect_timeout,
        services=tuple(name.strip() for name in args.services.split(",") if name.strip()),
        settings={service.name: service.configure(args) for service in SERVICES},
        allow_damaged=args.allow_damaged,
        spaces_file=args.spaces,
        spaces_db=args.spaces_db,
        database=args.database or None,
        web=args.web,
        web_hosts=tuple(args.allowed_host),
    )
    if args.web is not None:
        problem = web_command.unnamed(args.web, config.web_hosts, "--web-allowed-host")
        if problem is not None:
            print(f"spade-memory: {problem}", file=sys.stderr)
            return 2
    try:
        config.metrics_token = web_command.metrics_token(args.metrics_token_file)
    except Refused as problem:
        print(f"spade-memory: {problem}", file=sys.stderr)
        return 2
    if config.database is not None and not is_url(config.database):
        print(
            f"--database takes a postgresql:// URL, not {config.database!r}"
            " (without it, memories are kept in SQLite files in the data directory)",
            file=sys.stderr,
        )
        return 2
    logging.basicConfig(
        level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s %(message)s"
    )
    # "No appropriate login method." on a refused password: the sentence printed says more
    logging.getLogger("slixmpp.features.feature_mechanisms.mechanisms").setLevel(logging.CRITICAL)
    use_uvloop()
    status = _run(config, debug=args.debug)
    return _exit_cleanly(status)


def _run(config: RunConfig, *, debug: bool) -> int:
    """Serve until stopped; 0, or 1 with one line saying what failed (and how to mend it)."""
    console = Console()
    try:
        with progress.shown_on(console):  # the model's preparation, at the first start
            run_service(replace(config, debug=debug), lambda ready: _print_banner(ready, console))
    except (KeyboardInterrupt, StartInterrupted):  # before the signal handlers, or while starting
        print(f"spade-memory: {INTERRUPTED_START}", file=sys.stderr)
        return EXIT_AT_ONCE
    except Exception as error:
        if debug:
            traceback.print_exc()
        print(f"spade-memory: {_one_line(error, config)}", file=sys.stderr)
        return 1
    console.print("stopped.")
    return 0


def _one_line(error: Exception, config: RunConfig) -> str:
    if isinstance(error, asyncio.TimeoutError):  # first: it is an OSError since Python 3.11
        return f"a step of the stop took over {STEP_SECONDS:.0f}s and was abandoned"
    if isinstance(error, OSError) and not isinstance(error, StoreFault):
        where = error.filename or config.data_dir
        return (
            f"cannot use the data directory: {error.strerror or error} ({where});"
            " give the service a writable --data-dir"
        )
    text = " ".join(str(error).split()) or type(error).__name__
    return (
        text if isinstance(error, RuntimeError | StoreFault) else f"{type(error).__name__}: {text}"
    )


def _exit_cleanly(status: int) -> int:
    """Nothing the service started may keep the process alive: a thread still running
    after the stop (a library's, a leaked connection's) is named, and the process ends;
    after an interrupted start none is waited for (the model's preparation may run on)."""
    if status == EXIT_AT_ONCE:
        sys.stderr.flush()
        sys.stdout.flush()
        os._exit(status)
    stuck = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon]
    for thread in stuck:
        thread.join(timeout=2.0)
    stuck = [t for t in stuck if t.is_alive()]
    if stuck:
        names = ", ".join(thread.name for thread in stuck)
        print(f"spade-memory: still running after the stop: {names}; exiting", file=sys.stderr)
        sys.stderr.flush()
        sys.stdout.flush()
        os._exit(status or 1)
    return status


def _print_banner(config: RunConfig, console: Console) -> None:
    table = Table(show_header=False, box=None)
    server = "embedded (SPADE's pyjabber)" if config.embedded_server else "external"
    table.add_row("XMPP server", f"{server} at {config.domain}:{config.port}")
    running = [service for service in SERVICES if service.name in config.services]
    for service in running:
        table.add_row(service.title, config.jid_of(service.name))
    table.add_row("ontology", wire.ONTOLOGY)
    table.add_row("data directory", str(config.data_dir))
    if config.web is not None:
        table.add_row("web view", config.web.url())
    free = free_bytes(config.data_dir)
    if free is not None:
        table.add_row("free disk space", f"{free / 2**30:.1f} GiB")
    database = None if config.database is None else shown(config.database)
    for service in running:
        for label, place in service.places(
            config.config_of(service.name), config.data_dir, database
        ):
            table.add_row(label, place)
    console.print(table)
    jids = [config.jid_of(service.name) for service in running]
    listed = ", ".join(jids[:-1]) + (" and " if len(jids) > 1 else "") + jids[-1]
    console.print(f"spade-memory is ready; send requests to {listed}. Stop with Ctrl-C.")
    console.print(
        f"Next, from another shell: SPADE_MEMORY_AGENT_PASSWORD=secret spade-memory memories"
        f" stats --jid you@{config.domain} --port {config.port}"
    )
