"""Run every benchmark and print the figures: ``python -m benchmarks``."""

from __future__ import annotations

import argparse
import asyncio
import os

from rich.console import Console
from rich.table import Table

from spade_memory.server.runtime import use_uvloop

from .concurrent_writes import WRITERS, bench_concurrent_writes
from .notes_append import bench_append
from .store_search import bench_search
from .wire import bench_wire


async def main(args: argparse.Namespace) -> None:
    console = Console()
    if not args.skip_wire:
        console.print(f"[bold]XMPP round trips[/] ({args.round_trips} of each, two-process wire)")
        wire, rates = await bench_wire(args.round_trips, batches=args.batches)
        bare, control = wire[0], wire[-1]
        table = Table("request", "p50 ms", "p99 ms", "p50 vs bare", "p50 | p99 vs its control")
        for row in wire:
            # a store's reply is as small as the bare one; a search's, ten memories
            against = control if "search" in row.name else bare
            table.add_row(
                row.name, f"{row.p50:.2f}", f"{row.p99:.2f}", f"{row.p50 / bare.p50:.2f}x",
                f"{row.p50 / against.p50:.2f}x | {row.p99 / against.p99:.2f}x",
            )  # fmt: skip
        console.print(table)
        batched = Table(
            "sent four at a time", "per second", "messages per second",
            "CPU µs per item: agent | server | requester",
        )  # fmt: skip
        for rate in rates:
            cpu = " | ".join(
                f"{rate.cpu_us[part]:,.0f}" if part in rate.cpu_us else "-"
                for part in ("agent", "server", "requester")
            )
            batched.add_row(
                rate.name,
                f"{rate.per_second:,.0f}",
                f"{rate.messages_per_second:,.0f}" if rate.messages_per_second else "",
                cpu,
            )
        console.print(batched)
    table = Table(
        "memories", "query words", "spade_memory p50 ms", "p99 ms",
        "spade_llm p50 ms", "p99 ms", "speed-up (p50)", "hits/query ours | spade_llm",
        title="In-store search, same data, same queries",
    )  # fmt: skip
    for size in args.sizes:
        with console.status(f"loading {size:,} memories into both stores ..."):
            rows = await bench_search(size, args.queries)
        for r in rows:
            table.add_row(
                f"{r.size:,}", str(r.words), f"{r.ours_p50:.2f}", f"{r.ours_p99:.2f}",
                f"{r.theirs_p50:.2f}", f"{r.theirs_p99:.2f}", f"{r.speedup:.0f}x",
                f"{r.ours_hits:.1f} | {r.theirs_hits:.1f}",
            )  # fmt: skip
    console.print(table)
    notes = Table(
        "notes in the conversation", "spade_memory append p50 ms", "spade_llm append p50 ms",
        title="One conversation note (add_information), in-store",
    )  # fmt: skip
    for row in await bench_append(args.note_sizes):
        notes.add_row(f"{row.notes:,}", f"{row.ours_p50:.3f}", f"{row.theirs_p50:.3f}")
    console.print(notes)
    writes = Table(
        "writers at once", "stores per second", "vs one writer", "CPU per store µs",
        title="Single stores from many writers, in-store (group commit)",
    )  # fmt: skip
    alone, *together = await bench_concurrent_writes(args.writes)
    for result in (alone, *together):
        writes.add_row(
            str(result.writers), f"{result.per_second:,.0f}",
            f"{result.per_second / alone.per_second:.2f}x", f"{result.cpu_us:.0f}",
        )  # fmt: skip
    console.print(writes)


if __name__ == "__main__":
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--round-trips", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--batches", type=int, default=200, help="batches of 100 stores")
    parser.add_argument(
        "--sizes", type=lambda s: [int(x) for x in s.split(",")], default=[10_000, 100_000]
    )
    parser.add_argument("--skip-wire", action="store_true")
    parser.add_argument(
        "--writes", type=int, default=6000, help=f"single stores, alone and {WRITERS} at once"
    )
    parser.add_argument(
        "--note-sizes", type=lambda s: [int(x) for x in s.split(",")], default=[100, 10_000, 30_000]
    )
    use_uvloop()  # as `spade-memory run` does
    asyncio.run(main(parser.parse_args()))
