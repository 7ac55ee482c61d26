"""The same memory is found by a short hash of its folded text, confirmed on the text.

On both engines: keys written as the folded texts themselves (what stores before the
hash held) are hashed when the store opens, and a key two different texts share
never makes them one memory.
"""

from __future__ import annotations

from pathlib import Path

from spade_memory import StoreMemory
from spade_memory.base_memory.store.long_term import LongTermStore
from spade_memory.base_memory.store.tables import content_key, folded, hash_content_keys
from spade_memory.protocol.memories import Stored
from tests.support.stores import Location, query, set_back

ALICE = "alice@localhost"


async def _store(where: str | Path, content: str) -> Stored:
    store = await LongTermStore.open(where)
    try:
        stored = await store.apply(ALICE, StoreMemory(category="fact", content=content))
    finally:
        await store.close()
    assert isinstance(stored, Stored)
    return stored


async def _one_migration_back(where: str | Path) -> None:
    """The store as a version before the hashed keys left it."""
    await set_back(where, hash_content_keys)


async def _key_memory(where: str | Path, memory_id: str, key: str) -> None:
    """Write ``key`` as the memory's content key, beside the store."""
    await query(where, "UPDATE memories SET content_key = ? WHERE id = ?", key, memory_id)


def test_the_key_folds_case_and_spaces_and_is_short() -> None:
    assert content_key("The  Walrus\tsings") == content_key("the walrus SINGS")
    assert content_key("the walrus sings") != content_key("the walrus sang")
    assert len(content_key("a long text " * 1000)) == 16


async def test_folded_keys_of_an_older_store_are_hashed_at_open(location: Location) -> None:
    where = location("old.db")
    first = await _store(where, "The walrus sings at dawn")
    await _key_memory(where, first.id, folded("The walrus sings at dawn"))
    await _one_migration_back(where)

    again = await _store(where, "the  WALRUS sings at dawn")

    assert again.deduplicated and again.id == first.id
    assert await query(where, "SELECT content_key FROM memories") == [
        (content_key("The walrus sings at dawn"),)
    ]


async def test_texts_sharing_a_key_stay_two_memories(location: Location) -> None:
    where = location("shared.db")
    first = await _store(where, "the walrus sings")
    # what a hash collision would leave: another text's key on this memory
    await _key_memory(where, first.id, content_key("the seal sleeps"))

    other = await _store(where, "the seal sleeps")
    again = await _store(where, "the seal sleeps")

    assert not other.deduplicated and other.id != first.id
    assert again.deduplicated and again.id == other.id
    assert len(await query(where, "SELECT id FROM memories")) == 2
