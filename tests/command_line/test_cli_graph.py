"""The entity graph from the shell, run as a user would against `spade-memory run`: the
entities an agent's memories name, the memories about one, and those related to one."""

from __future__ import annotations

from spade_memory.testing import MemoryServiceProcess
from tests.support.command_line import answer, ok, shell


def test_entities_about_and_related_from_the_shell(
    memory_service: MemoryServiceProcess, me: str
) -> None:
    ids = [
        answer(memory_service.port, me, "memories", "add", text, "--category", "fact")["id"]
        for text in (
            "Ada reviewed the deploy guide with Grace.",
            "Grace rewrote the deploy guide on Friday.",
            "The canteen serves soup.",
        )
    ]
    listed = answer(memory_service.port, me, "memories", "entities")["entities"]
    assert {(e["key"], e["memories"]) for e in listed} >= {("grace", 2), ("deploy", 2)}
    table = ok(shell(memory_service.port, me, "memories", "entities", "gr", "--kind", "name"))
    assert "Grace" in table and "Ada" not in table
    about = answer(memory_service.port, me, "memories", "about", "grace's")["memories"]
    assert {m["id"] for m in about} == set(ids[:2])
    related = answer(memory_service.port, me, "memories", "related", ids[0][-12:])["memories"]
    assert [m["id"] for m in related] == [ids[1]] and related[0]["score"] > 0
    nothing = ok(shell(memory_service.port, me, "memories", "about", "nobody"))
    assert "no memories" in nothing
