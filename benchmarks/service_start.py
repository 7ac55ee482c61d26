"""A service start as the test suite makes it, against one from scratch.

``python -m benchmarks.service_start`` starts ``spade-memory run`` on a new data
directory ``--starts`` times each way, alternating: from scratch (a new interpreter,
``python -m spade_memory run``: the baseline) and forked from a process with ``run``'s
modules loaded (``spade_memory.warm_start``, the suite's way), and times each until its
ready line and until it has stopped after a Ctrl-C. The forkserver's own start (one
import of the modules, once per test worker) is made before the first timed start and
printed apart.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from spade_memory.testing import MemoryServiceProcess


def timed_start(data_dir: Path, warm: bool) -> tuple[float, float]:
    """Start and stop one service; returns the seconds to its ready line and to its end."""
    service = MemoryServiceProcess(data_dir)
    service.warm = warm
    began = time.perf_counter()
    service.start(timeout=120)
    ready = time.perf_counter() - began
    service.stop()
    return ready, time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.service_start", description=__doc__)
    parser.add_argument("--starts", type=int, default=6, help="timed starts of each kind")
    args = parser.parse_args()
    times: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
    with tempfile.TemporaryDirectory() as tmp:
        first = timed_start(Path(tmp) / "first", warm=True)  # the forkserver starts here
        for start in range(args.starts):
            for warm in (False, True):
                times[warm].append(timed_start(Path(tmp) / f"{start}-{warm}", warm))
    medians = {
        warm: [statistics.median(column) for column in zip(*runs, strict=True)]
        for warm, runs in times.items()
    }
    cold_ready, cold_end = medians[False]
    table = Table("start of spade-memory run", "to ready, s (median)", "to stopped, s", "ratio")
    for warm, name in ((False, "from scratch (baseline)"), (True, "forked, modules loaded")):
        ready, end = medians[warm]
        table.add_row(name, f"{ready:.2f}", f"{end:.2f}", f"{end / cold_end:.2f}x")
    Console().print(table)
    Console().print(
        f"the forkserver's own start and the first forked service: {first[1]:.2f} s"
        f" ({args.starts} starts of each kind; baseline to ready {cold_ready:.2f} s)"
    )


if __name__ == "__main__":  # a forked child imports this module again: nothing runs then
    main()
