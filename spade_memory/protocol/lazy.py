"""Protocol modules loaded at their first use, for the client's calls.

Defining a pydantic model costs about a millisecond, and the protocol has two hundred:
a client that imported every service's ops before its first request would spend most
of a shell verb's start on models the verb never sends. The client's call modules bind
the protocol modules they use through ``lazy`` (typed as the modules themselves, for
mypy), so each module's models are built when a call first needs one.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def lazy(name: str) -> ModuleType:
    """The module ``name`` (``spade_memory.protocol.notes``), run at its first attribute
    look-up (the standard library's ``LazyLoader``); an already imported one as it is.

    Raises ``ModuleNotFoundError`` at once for a module that does not exist."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"no module named {name!r}", name=name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module
