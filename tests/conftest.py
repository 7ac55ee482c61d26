"""Shared test setup."""

from __future__ import annotations

import os

# spade_llm imports litellm, which otherwise fetches a price list from the network.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
