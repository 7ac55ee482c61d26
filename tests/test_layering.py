"""The layering holds: checked on the import graph of the package (grimp).

- no store imports the wire, XMPP (slixmpp, spade), an agent, the serving
  behaviour, the transport or the client;
- ops import no wire, no XMPP and no storage;
- the wire, and the rest of the kernel, import no service;
- no import loops.

Imports under ``if TYPE_CHECKING:`` are left out: they never run.
"""

from __future__ import annotations

from collections.abc import Iterator

import grimp
import pytest

PACKAGE = "spade_memory"
SERVICES = ("base_memory", "interaction", "beads_sync", "spaces")

STORES = (
    "base_memory.store", "base_memory.ranking", "base_memory.dense", "base_memory.access",
    "base_memory.schema", "base_memory.embeddings", "base_memory.journal", "base_memory.rows",
    "base_memory.backfill", "base_memory.ann", "base_memory.threads", "base_memory.model_file",
    "base_memory.words", "base_memory.meanwhile",
    "interaction.store", "interaction.working_store", "interaction.context_dir",
    "beads_sync.store", "beads_sync.access", "spaces.directory", "storage", "beads",
)  # fmt: skip
OPS = (
    "ops", "batch", "errors", "limits", "base_memory.ops", "interaction.ops",
    "interaction.notes", "interaction.working_ops", "interaction.context_ops",
    "interaction.working_memory", "beads_sync.ops", "spaces.ops", "spaces.names",
)  # fmt: skip
KERNEL = (
    "ops", "errors", "limits", "batch", "wire", "plugin", "serving", "transport", "reconnect",
    "lifecycle", "xml_escape", "discovery", "storage", "beads",
)  # fmt: skip

XMPP = ("slixmpp", "spade")
NOT_FOR_STORES = (
    *XMPP, "spade_memory.wire", "spade_memory.serving", "spade_memory.transport",
    "spade_memory.client", "spade_memory.mixin", "spade_memory.registry",
    *(f"spade_memory.{service}.{part}" for service in SERVICES for part in ("service", "calls")),
)  # fmt: skip
NOT_FOR_OPS = (*XMPP, "aiosqlite", "spade_memory.wire", "spade_memory.storage")
NOT_FOR_KERNEL = (
    "spade_memory.registry", "spade_memory.client",
    *(f"spade_memory.{service}" for service in SERVICES),
)  # fmt: skip


def build() -> grimp.ImportGraph:
    return grimp.build_graph(
        PACKAGE, include_external_packages=True, exclude_type_checking_imports=True
    )


def _modules(graph: grimp.ImportGraph, names: tuple[str, ...]) -> Iterator[str]:
    """The package's modules named (a module, or a folder and everything in it)."""
    for name in names:
        prefix = f"{PACKAGE}.{name}"
        yield from (m for m in graph.modules if m == prefix or m.startswith(prefix + "."))


def _reaches(graph: grimp.ImportGraph, module: str, forbidden: tuple[str, ...]) -> list[str]:
    upstream = graph.find_upstream_modules(module)
    return sorted(
        found
        for found in upstream
        if any(found == name or found.startswith(name + ".") for name in forbidden)
    )


def violations(graph: grimp.ImportGraph) -> list[str]:
    """Every broken rule, as "module -> what it must not reach (how)"."""
    found = []
    for group, forbidden in ((STORES, NOT_FOR_STORES), (OPS, NOT_FOR_OPS)):
        for module in _modules(graph, group):
            for bad in _reaches(graph, module, forbidden):
                chain = graph.find_shortest_chain(importer=module, imported=bad)
                found.append(f"{module} -> {bad} ({' > '.join(chain or ())})")
    for module in _modules(graph, KERNEL):
        for bad in _reaches(graph, module, NOT_FOR_KERNEL):
            found.append(f"kernel {module} -> service {bad}")
    for module in sorted(m for m in graph.modules if m.startswith(PACKAGE)):
        for imported in graph.find_modules_directly_imported_by(module):
            if imported.startswith(PACKAGE) and graph.chain_exists(
                importer=imported, imported=module
            ):
                found.append(f"loop: {module} <-> {imported}")
    return found


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return build()


def test_the_layering_holds(graph: grimp.ImportGraph) -> None:
    assert violations(graph) == []


def test_every_rule_names_real_modules(graph: grimp.ImportGraph) -> None:
    """A rule over a renamed or removed module would check nothing."""
    for group in (STORES, OPS, KERNEL):
        for name in group:
            assert next(_modules(graph, (name,)), None), name


@pytest.mark.parametrize(
    ("importer", "imported", "rule"),
    [
        ("spade_memory.base_memory.store", "spade_memory.wire", "base_memory.store -> "),
        ("spade_memory.storage.connection", "slixmpp", "storage.connection -> slixmpp"),
        ("spade_memory.interaction.store", "spade_memory.client", "interaction.store -> "),
        ("spade_memory.base_memory.ops", "spade_memory.storage.connection", "ops -> "),
        ("spade_memory.wire", "spade_memory.base_memory.ops", "kernel spade_memory.wire"),
        ("spade_memory.ops", "spade_memory.interaction.notes", "loop: "),
    ],
)
def test_a_forbidden_import_is_caught(importer: str, imported: str, rule: str) -> None:
    """The check fails when, for example, a store imports the wire."""
    graph = build()
    graph.add_import(importer=importer, imported=imported)
    assert any(rule in violation for violation in violations(graph)), violations(graph)
