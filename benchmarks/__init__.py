"""Benchmarks for spade_memory; run them all with ``python -m benchmarks``."""
