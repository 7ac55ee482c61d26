"""Small helpers for latency and CPU figures."""

from __future__ import annotations

import os
import statistics
from pathlib import Path


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def summary_ms(samples: list[float]) -> tuple[float, float]:
    """p50 and p99 in milliseconds of samples in seconds."""
    return percentile(samples, 0.50) * 1000, percentile(samples, 0.99) * 1000


def median(samples: list[float]) -> float:
    return statistics.median(samples)


def cpu_seconds(pid: int) -> float | None:
    """User and system CPU time of process ``pid`` so far (None without Linux's ``/proc``)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int) -> float | None:
    """Resident memory of process ``pid`` now, in MiB (None without Linux's ``/proc``)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return None


class CpuMeter:
    """CPU time per request of each process of a run, phase by phase."""

    def __init__(self, pids: dict[str, int]) -> None:
        self.pids = pids
        self._start: dict[str, float | None] = {}

    def start(self) -> None:
        self._start = {name: cpu_seconds(pid) for name, pid in self.pids.items()}

    def busy(self, seconds: float) -> dict[str, float]:
        """The share of one core each process used since ``start``, over ``seconds``."""
        return {name: us / 1e6 / seconds for name, us in self.per_request_us(1).items()}

    def per_request_us(self, requests: int) -> dict[str, float]:
        """µs of CPU per request of each process since ``start``."""
        spent = {}
        for name, pid in self.pids.items():
            before, now = self._start.get(name), cpu_seconds(pid)
            if before is not None and now is not None:
                spent[name] = (now - before) / requests * 1e6
        return spent
