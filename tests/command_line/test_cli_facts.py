"""Facts that change from the shell, run as a user would against `spade-memory run`: a
store that replaces another, reads as of an earlier time, a supersede, a history with its
chain, a supersede undone, and consolidation with and without ``--dry-run``."""

from __future__ import annotations

from datetime import datetime, timezone

from spade_memory.testing import MemoryServiceProcess
from tests.support.command_line import answer, ok, shell


def test_supersede_as_of_history_and_consolidate_from_the_shell(
    memory_service: MemoryServiceProcess, me: str
) -> None:
    paris = answer(memory_service.port, me, "memories", "add", "Zoe lives in Paris.", "--category",
                   "fact")  # fmt: skip
    before = datetime.now(timezone.utc).isoformat()
    said = ok(shell(memory_service.port, me, "memories", "add", "Zoe moved to Lyon.", "--category",
                    "fact"))  # fmt: skip
    assert f"supersedes: {paris['id']}" in said
    lyon = answer(memory_service.port, me, "memories", "search", "Zoe")["memories"]
    assert [m["content"] for m in lyon] == ["Zoe moved to Lyon."]
    then = answer(memory_service.port, me, "memories", "search", "Zoe", "--as-of", before)
    assert [m["id"] for m in then["memories"]] == [paris["id"]]

    reported = ok(shell(memory_service.port, me, "memories", "add", "Zoe moved to Nice.",
                        "--category", "fact", "--conflicts", "report"))  # fmt: skip
    assert f"possible conflict: {lyon[0]['id']} (zoe · lives in: 'lyon' → 'nice')" in reported
    nice = reported.split()[1]
    replaced = answer(memory_service.port, me, "memories", "supersede", lyon[0]["id"], "--by", nice)
    assert (replaced["id"], replaced["supersedes"]) == (nice, lyon[0]["id"])
    chain = ok(shell(memory_service.port, me, "memories", "history", paris["id"]))
    assert f"replaced by: {lyon[0]['id']} → {nice}" in chain
    # Lyon was not wrong after all: undone, it is current again beside Nice
    back = answer(memory_service.port, me, "memories", "restore", lyon[0]["id"])
    assert back["id"] == lyon[0]["id"] and back.get("superseded_by") is None
    both = answer(memory_service.port, me, "memories", "search", "Zoe")["memories"]
    assert {m["id"] for m in both} == {lyon[0]["id"], nice}
    again = shell(memory_service.port, me, "memories", "restore", lyon[0]["id"])
    assert again.returncode == 1 and "not superseded" in again.stderr

    for content in ("The coffee machine is on floor 2", "the coffee machine is on floor 2!"):
        answer(memory_service.port, me, "memories", "add", content, "--category", "pattern",
               "--conflicts", "off")  # fmt: skip
    planned = ok(shell(memory_service.port, me, "memories", "consolidate", "--dry-run"))
    assert "would merge 1 of" in planned
    done = answer(memory_service.port, me, "memories", "consolidate")
    assert (done["dry_run"], done["merged"]) == (False, 1)
    assert answer(memory_service.port, me, "memories", "stats")["merged_memories"] == 1
    missing = shell(memory_service.port, me, "memories", "supersede", nice)
    assert missing.returncode == 1 and "the new content, or --by" in missing.stderr
