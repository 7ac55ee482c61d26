"""What a memory's page draws: the values of its fact over time, and its neighbourhood."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from spade_memory.protocol.memories import Memory, MemoryHistory, MemoryList, MemoryVersion
from spade_memory.web.drawings import TIMELINE_MOST, chain, neighbourhood, timeline

START = datetime(2026, 1, 1, tzinfo=timezone.utc)


def history(memory_id: str, day: int, ended: int | None, **links: list[str]) -> MemoryHistory:
    version = MemoryVersion(version=1, category="fact", content=f"value {memory_id}",
                            confidence=1.0, changed_by="alice@localhost",
                            changed_at=START + timedelta(days=day))  # fmt: skip
    end = None if ended is None else START + timedelta(days=ended)
    return MemoryHistory(id=memory_id, versions=[version], valid_to=end, **links)


def test_a_long_chain_shows_the_values_nearest_the_page() -> None:
    older, newer = [f"o{n}" for n in range(20)], [f"n{n}" for n in range(20)]
    ids = chain(history("m", 0, None, supersedes=older, superseded_by=newer), "m")
    assert len(ids) == TIMELINE_MOST and "m" in ids
    assert ids[: ids.index("m")] == list(reversed(older))[-6:]  # the nearest, oldest first
    assert ids[ids.index("m") + 1 :] == newer[:5]
    assert chain(history("m", 0, None, supersedes=["a"]), "m") == ["a", "m"]


def test_the_spans_lie_in_time_and_one_value_draws_nothing() -> None:
    now = START + timedelta(days=10)
    spans = timeline([history("a", 0, 4), history("b", 4, None)], "b", now)
    assert [(s.id, s.left, s.width, s.shown, s.end is None) for s in spans] == [
        ("a", 0.0, 40.0, False, False), ("b", 40.0, 60.0, True, True)
    ]  # fmt: skip
    assert timeline([history("a", 0, None)], "a", now) == []


def test_a_neighbourhood_links_each_entity_to_the_memories_naming_it() -> None:
    def memory(memory_id: str, *shares: str) -> Memory:
        return Memory(id=memory_id, owner="a@localhost", category="fact", content=memory_id,
                      confidence=1.0, created_at=START, last_accessed=START, access_count=0,
                      shares=list(shares))  # fmt: skip

    related = MemoryList(memories=[memory("x", "Gina", "studio"), memory("y", "Gina")],
                         entities=["dance", "Gina", "studio"])  # fmt: skip
    drawn = neighbourhood(related)
    assert drawn is not None
    assert [node.full for node in drawn.entities] == ["Gina", "studio", "dance"]  # leading first
    assert [node.id for node in drawn.memories] == ["x", "y"] and len(drawn.edges) == 3
    assert neighbourhood(MemoryList()) is None
