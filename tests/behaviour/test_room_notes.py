"""A room's notes in the interaction store, on both engines (``location``): kept within
the space's budget, a replayed message kept once, found by the words of a question, and
gone with their space; the room bindings of the directory, gone with their space too."""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spade_memory.interaction import room_notes
from spade_memory.interaction.room_notes import rank, words
from spade_memory.interaction.store import InteractionStore
from spade_memory.protocol.errors import ResourceConstraint
from spade_memory.protocol.limits import Limits
from spade_memory.protocol.ops import Place
from spade_memory.protocol.rooms import RoomNote
from spade_memory.spaces.directory import SpaceDirectory
from tests.support.stores import Location

ROOM = "deploys@conference.localhost"
SPACE = Place("space-1", "team", "owner", max_bytes=2_000)


def said(nick: str, text: str, author: str = "", at: str = "2026-11-28T10:00:00+00:00") -> RoomNote:
    return RoomNote(said_at=at, author=author, nick=nick, text=text)


@pytest.fixture
async def store(location: Location) -> AsyncIterator[InteractionStore]:
    opened = await InteractionStore.open(location("notes.db"), purge_every=None, limits=Limits())
    yield opened
    await opened.close()


async def test_notes_are_kept_a_replay_once_and_a_question_finds_them(
    store: InteractionStore,
) -> None:
    kept = await store.record_room_notes(SPACE, ROOM, [
        (said("alice", "We deploy on Friday after the freeze", "alice@localhost"), False),
        (said("bob", "Lunch is at noon", "bob@localhost"), False),
        (said("alice", "We deploy on Friday after the freeze"), True),  # the room replays it
        (said("carol", "The freeze starts on Wednesday"), True),  # said while away
    ])  # fmt: skip
    assert kept == 3
    found = await store.search_room(SPACE.key, ROOM, "when do we deploy?", 5)
    assert [(n.author, n.text) for n in found] == [
        ("alice@localhost", "We deploy on Friday after the freeze")
    ]
    assert [n.nick for n in await store.search_room(SPACE.key, ROOM, "freeze", 5)] == [
        "carol", "alice",  # both name it once; the newer first
    ]  # fmt: skip
    assert await store.search_room(SPACE.key, ROOM, "nothing shared", 5) == []
    assert await store.search_room("other-space", ROOM, "deploy", 5) == []
    assert (await store.room_last_said(SPACE.key, ROOM)) is not None
    assert SPACE.key in await store.space_keys()
    assert await store.purge_space(SPACE.key)
    assert await store.search_room(SPACE.key, ROOM, "deploy", 5) == []


async def test_a_full_budget_refuses_the_notes_and_keeps_what_was_there(
    store: InteractionStore,
) -> None:
    await store.record_room_notes(SPACE, ROOM, [(said("alice", "a short note"), False)])
    with pytest.raises(ResourceConstraint):
        await store.record_room_notes(SPACE, ROOM, [
            (said("alice", "another short note"), False),
            (said("bob", "x" * 3_000), False),
        ])  # fmt: skip
    found = await store.search_room(SPACE.key, ROOM, "short note", 5)
    assert [n.text for n in found] == ["a short note"], "the transaction kept nothing"


def test_words_and_ranking() -> None:
    assert words("What did we decide about the Deploys?") == ["decide", "deploy"]
    documents = [words("lunch at noon"), words("deploy deploy friday"), words("deploy")]
    assert rank(documents, words("deploy friday")) == [1, 2]
    assert rank(documents, []) == []


def bm25_plainly(documents: list[list[str]], query: list[str]) -> list[int]:
    """BM25 as its formula reads (k1 1.2, b 0.75), every document scored in turn."""
    terms = set(query)
    if not terms or not documents:
        return []
    frequency = Counter(t for doc in documents for t in set(doc) if t in terms)
    average = sum(len(doc) for doc in documents) / len(documents) or 1.0
    scores = []
    for index, doc in enumerate(documents):
        counts = Counter(t for t in doc if t in terms)
        if counts:
            norm = 1.2 * (1 - 0.75 + 0.75 * len(doc) / average)
            score = sum(
                math.log(1 + (len(documents) - frequency[t] + 0.5) / (frequency[t] + 0.5))
                * n * 2.2 / (n + norm)
                for t, n in sorted(counts.items())
            )  # fmt: skip
            scores.append((-score, index))
    return [index for _, index in sorted(scores)]


VOCABULARY = st.sampled_from("deploy friday lunch noon freeze tests ship".split())


@settings(deadline=None)  # a busy machine must not fail it
@given(
    st.lists(st.lists(VOCABULARY, max_size=8), max_size=30),
    st.lists(VOCABULARY, max_size=4),
)
def test_the_ranking_is_bm25_as_written(documents: list[list[str]], query: list[str]) -> None:
    assert rank(documents, query) == bm25_plainly(documents, query)


def test_notes_of_the_same_words_in_another_order_rank_newest_first() -> None:
    # summed in each note's own word order, the older scored a last bit higher
    documents = [
        ["merge", "ship", "deploy"],  # the newer
        ["ship", "deploy", "merge"],
        ["friday", "test", "deploy"],
        ["deploy"],
        ["build", "deploy", "ship"],
    ]
    assert rank(documents, ["deploy", "merge", "ship"])[:2] == [0, 1]


async def test_a_question_is_ranked_off_the_event_loop(
    store: InteractionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ranking thousands of notes takes a good part of a second: not the loop's."""
    await store.record_room_notes(SPACE, ROOM, [(said("alice", "We deploy on Friday"), False)])
    ranked_in: list[threading.Thread] = []
    ranking = room_notes.rank

    def recorded(*args: Any) -> list[int]:
        ranked_in.append(threading.current_thread())
        return ranking(*args)

    monkeypatch.setattr(room_notes, "rank", recorded)
    (found,) = await store.search_room(SPACE.key, ROOM, "deploy", 5)
    assert found.text == "We deploy on Friday"
    assert ranked_in and threading.current_thread() not in ranked_in


async def test_a_search_answers_the_same_with_the_words_kept_and_without(
    store: InteractionStore,
) -> None:
    await store.record_room_notes(SPACE, ROOM, [
        (said("alice", "We deploy on Friday after the freeze"), False),
        (said("bob", "Friday lunch: noodles"), False),
        (said("carol", "deploys wait for the tests"), False),
    ])  # fmt: skip
    room_notes._words_of.cache_clear()
    fresh = await store.search_room(SPACE.key, ROOM, "deploy on friday", 5)
    assert room_notes._words_of.cache_info().currsize == 3
    assert await store.search_room(SPACE.key, ROOM, "deploy on friday", 5) == fresh
    assert room_notes._words_of.cache_info().hits >= 3
    assert [n.nick for n in fresh] == ["alice", "carol", "bob"]


async def test_a_binding_goes_with_its_space(location: Location) -> None:
    directory = await SpaceDirectory.open(location("spaces.db"))
    try:
        space = await directory.create("team", "owner@localhost", None)
        await directory.rooms.bind(
            ROOM, space.id, "interaction-memory@localhost", "memory", "owner@localhost"
        )
        (binding,) = await directory.rooms.of_agent("interaction-memory@localhost")
        assert (binding.room, binding.space_id, binding.nick) == (ROOM, space.id, "memory")
        assert await directory.rooms.of_spaces([space.id]) == [binding]
        await directory.grant(space, "alice@localhost", "reader", binding.grantor)
        await directory.grant(space, "bob@localhost", "reader", "owner@localhost")
        assert await directory.revoke_granted_by(space, "alice@localhost", binding.grantor)
        assert not await directory.revoke_granted_by(space, "bob@localhost", binding.grantor)
        await directory.delete(space.id)
        assert await directory.rooms.get(ROOM) is None
    finally:
        await directory.close()
