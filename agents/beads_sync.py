"""Deployment: the beads sync agent as its own process (one container).

Wiring only; configured from the environment (see agents/environment.py).
"""

from __future__ import annotations

from environment import run_service

from spade_memory.beads_sync import NAME

if __name__ == "__main__":
    run_service(NAME)
