"""The layering holds: package rules checked on the import graph of the package (grimp).

- each package imports only the packages below it (``ALLOWED``): protocol <- xmpp <-
  client; protocol <- tools; client and tools <- llm and mcp_bridge; client and http <-
  web (http, the listening address, imports nothing of the project); protocol <- storage
  <- serving <- services; metrics (the exported figures, importing nothing of the
  project) <- serving, base_memory and web; the command line above all;
- ``protocol`` and ``tools`` import no third-party package but pydantic;
- no store imports XMPP (slixmpp, SPADE);
- no service imports another service's store;
- no import loops, between packages or between modules.

Imports under ``if TYPE_CHECKING:`` are left out: they never run. Each rule is shown
to bite by adding one forbidden import to the real graph.
"""

from __future__ import annotations

import sys

import grimp
import pytest

PACKAGE = "spade_memory"
SERVICES = ("base_memory", "interaction", "beads_sync")

ALLOWED: dict[str, frozenset[str]] = {
    "protocol": frozenset(),
    "xmpp": frozenset({"protocol"}),
    "client": frozenset({"protocol", "xmpp"}),
    "storage": frozenset({"protocol"}),
    "beads": frozenset({"protocol", "storage"}),
    "spaces": frozenset({"protocol", "storage"}),
    "serving": frozenset({"protocol", "xmpp", "storage", "metrics"}),
    "base_memory": frozenset({"protocol", "xmpp", "storage", "serving", "spaces", "metrics"}),
    "interaction": frozenset({"protocol", "xmpp", "storage", "serving", "spaces"}),
    "beads_sync": frozenset(
        {"protocol", "xmpp", "client", "storage", "serving", "spaces", "beads", "base_memory"}
    ),
    "tools": frozenset({"protocol"}),
    "llm": frozenset({"protocol", "xmpp", "client", "tools"}),
    "http": frozenset(),
    "metrics": frozenset(),
    "mcp_bridge": frozenset({"protocol", "xmpp", "client", "tools", "http"}),
    "web": frozenset({"protocol", "xmpp", "client", "http", "metrics"}),
    "testing": frozenset({"warm_start"}),
    "warm_start": frozenset(),
}
"""What each package may import of the others (the package itself always). ``server``
(the command line, the runtime, the embedded XMPP server) stands above all and may
import anything; the top-level ``__init__`` exports the client surface."""

PROTOCOL_MAY_USE = frozenset({"pydantic", "pydantic_core", "typing_extensions"})
PYDANTIC_ONLY = ("protocol", "tools")
"""Packages that import no third-party package but pydantic (the tools are read by
spade_llm's agents and the MCP server alike, and load neither)."""
STORES = {
    "base_memory": "base_memory.store",
    "interaction": "interaction.store",
    "beads_sync": "beads_sync.store",
}
"""Each service's store: no other service imports it."""
STORE_MODULES = (
    "base_memory.store", "base_memory.retrieval", "base_memory.classify",
    "interaction.store", "interaction.working_store", "interaction.usage",
    "interaction.context_dir", "interaction.context_index", "beads_sync.store",
    "spaces.directory", "storage", "beads",
)  # fmt: skip
XMPP = ("slixmpp", "spade")


def build() -> grimp.ImportGraph:
    return grimp.build_graph(  # no cache: a cached graph may still hold moved modules
        PACKAGE, include_external_packages=True, exclude_type_checking_imports=True,
        cache_dir=None,
    )  # fmt: skip


def package_of(module: str) -> str:
    """``spade_memory.base_memory.store.rows`` -> ``base_memory``; outside: the distribution."""
    parts = module.split(".")
    if parts[0] != PACKAGE:
        return parts[0]
    return parts[1] if len(parts) > 1 else ""


def _under(module: str, name: str) -> bool:
    full = f"{PACKAGE}.{name}"
    return module == full or module.startswith(full + ".")


def _edges(graph: grimp.ImportGraph) -> list[tuple[str, str]]:
    return sorted(
        (module, imported)
        for module in graph.modules
        if module.startswith(PACKAGE)
        for imported in graph.find_modules_directly_imported_by(module)
    )


def violations(graph: grimp.ImportGraph) -> list[str]:
    """Every broken rule, as "rule: importer -> imported"."""
    found = []
    for module, imported in _edges(graph):
        here, there = package_of(module), package_of(imported)
        inside = imported.startswith(PACKAGE)
        if inside and here != there and here in ALLOWED and there not in ALLOWED[here]:
            found.append(f"layers: {module} -> {imported}")
        outside = there not in sys.stdlib_module_names and there not in PROTOCOL_MAY_USE
        if here in PYDANTIC_ONLY and not inside and outside:
            found.append(f"{here} imports only pydantic: {module} -> {imported}")
        if any(_under(module, store) for store in STORE_MODULES) and there in XMPP:
            found.append(f"a store speaks no XMPP: {module} -> {imported}")
        for service, store in STORES.items():
            if here in SERVICES and here != service and _under(imported, store):
                found.append(f"another service's store: {module} -> {imported}")
    found.extend(_package_loops(graph))
    for module in sorted(m for m in graph.modules if m.startswith(PACKAGE)):
        for imported in graph.find_modules_directly_imported_by(module):
            if imported.startswith(PACKAGE) and graph.chain_exists(
                importer=imported, imported=module
            ):
                found.append(f"loop: {module} <-> {imported}")
    return found


def _package_loops(graph: grimp.ImportGraph) -> list[str]:
    """Packages that import each other, directly or through others."""
    reaches: dict[str, set[str]] = {}
    for module, imported in _edges(graph):
        here, there = package_of(module), package_of(imported)
        if imported.startswith(PACKAGE) and here and there and here != there:
            reaches.setdefault(here, set()).add(there)
    loops = []
    for start in sorted(reaches):
        seen, todo = set(), list(reaches[start])
        while todo:
            package = todo.pop()
            if package == start:
                loops.append(f"package loop: {start}")
                break
            if package not in seen:
                seen.add(package)
                todo.extend(reaches.get(package, ()))
    return loops


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return build()


def test_the_layering_holds(graph: grimp.ImportGraph) -> None:
    assert violations(graph) == []


def test_every_rule_names_real_packages(graph: grimp.ImportGraph) -> None:
    """A rule over a renamed or removed package would check nothing."""
    packages = {package_of(m) for m in graph.modules if m.startswith(PACKAGE)}
    assert set(ALLOWED) <= packages
    for allowed in ALLOWED.values():
        assert allowed <= packages
    for name in (*STORE_MODULES, *STORES.values()):
        assert any(_under(m, name) for m in graph.modules), name


@pytest.mark.parametrize(
    ("importer", "imported", "rule"),
    [
        ("spade_memory.protocol.ops", "spade_memory.xmpp.wire", "layers: "),
        ("spade_memory.xmpp.wire", "spade_memory.client.xmpp_transport", "layers: "),
        ("spade_memory.client.xmpp_transport", "spade_memory.storage.connection", "layers: "),
        ("spade_memory.client.memories", "spade_memory.base_memory.service", "layers: "),
        ("spade_memory.serving.agent", "spade_memory.base_memory.service", "layers: "),
        ("spade_memory.storage.connection", "spade_memory.serving.agent", "layers: "),
        ("spade_memory.protocol.memories", "aiosqlite", "protocol imports only pydantic"),
        ("spade_memory.tools.catalog", "spade_llm", "tools imports only pydantic"),
        ("spade_memory.tools.spec", "spade_memory.client.calls", "layers: "),
        ("spade_memory.mcp_bridge.tools", "spade_memory.base_memory.service", "layers: "),
        ("spade_memory.base_memory.store.rows", "slixmpp", "a store speaks no XMPP"),
        ("spade_memory.storage.connection", "spade", "a store speaks no XMPP"),
        (
            "spade_memory.beads_sync.mirror",
            "spade_memory.base_memory.store.long_term",
            "another service's store",
        ),
        (
            "spade_memory.interaction.service",
            "spade_memory.base_memory.store.rows",
            "another service's store",
        ),
        ("spade_memory.protocol.ops", "spade_memory.protocol.notes", "loop: "),
        ("spade_memory.llm.tools", "spade_memory.server.cli", "package loop: "),
    ],
)
def test_a_forbidden_import_is_caught(importer: str, imported: str, rule: str) -> None:
    """The check fails when, for example, the client imports a service or a store XMPP."""
    graph = build()
    graph.add_import(importer=importer, imported=imported)
    assert any(rule in violation for violation in violations(graph)), violations(graph)
