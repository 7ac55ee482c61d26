"""Small helpers for latency figures."""

from __future__ import annotations

import statistics


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def summary_ms(samples: list[float]) -> tuple[float, float]:
    """p50 and p99 in milliseconds of samples in seconds."""
    return percentile(samples, 0.50) * 1000, percentile(samples, 0.99) * 1000


def median(samples: list[float]) -> float:
    return statistics.median(samples)
