"""What is said in a bound room, kept as notes of the conversation ``room:ROOM`` of its
space (the notes' owner is the space's key), and found again by a question.

A note is one message: who said it (the real bare JID the room showed, and the
nickname), when, and what, as a JSON object, so nothing a nickname contains can make
it read as someone else's words. A message the room replays when the agent joins again
(its history, which names its author by nickname only) is recorded only if none of the
room's newest notes has the same nickname and text.

Search ranks the room's newest ``SEARCHED`` notes by the words they share with the
question (BM25's weighting, in Python: a room's talk is short and a question reads one
room), the newer first among equals. The words of the notes last searched are kept in
memory by their stored text (``TOKENISED`` of them), so a question tokenises only what
was said since the last one; words depend on the text alone, so what is kept cannot go
stale.
"""

from __future__ import annotations

import asyncio
import math
import re
import sys
import time
from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timezone
from functools import lru_cache

from pydantic_core import from_json, to_json

from spade_memory.interaction import usage
from spade_memory.protocol.expiry import LIVE
from spade_memory.protocol.limits import Limits
from spade_memory.protocol.ops import Place
from spade_memory.protocol.rooms import ROOM_CONVERSATION, RoomNote
from spade_memory.storage.connection import Database, Transacting

REPLAY_WINDOW = 500
"""How many of a room's newest notes a replayed message is looked for among."""
SEARCHED = 5000
"""How many of a room's newest notes a question is answered from."""
TOKENISED = 4 * SEARCHED
"""How many notes' words are kept in memory (the newest of four busy rooms), by the text
stored."""
_WORD = re.compile(r"\w+")
_COMMON = frozenset(
    "a an and are as at be been but by can could did do does for from had has have how i"
    " in is it its me my of on or our so that the their them they this to us was we were"
    " what when where which who why will with would you your about did do".split()
)


def conversation_of(room: str) -> str:
    """The conversation id that keeps ``room``'s notes."""
    return ROOM_CONVERSATION + room


def said_at(moment: datetime | None = None) -> str:
    """``moment`` (default now) as a note's timestamp: ISO 8601 in UTC."""
    return (moment or datetime.now(timezone.utc)).astimezone(timezone.utc).isoformat()


async def record(
    db: Database, limits: Limits, place: Place, room: str, note: RoomNote, replayed: bool
) -> bool:
    """Keep ``note`` in ``place`` (the room's space), within its byte budget.

    Returns False for a replayed message already kept; raises ``ResourceConstraint``
    when the space's budget is full."""
    conversation = conversation_of(room)
    content = to_json(note.model_dump(exclude={"said_at"})).decode()
    if replayed:  # the room names its author by nickname only: compare what was said
        newest = await db.execute_fetchall(
            "SELECT content FROM notes WHERE owner = ? AND conversation_id = ?"
            " ORDER BY seq DESC LIMIT ?",
            (place.key, conversation, REPLAY_WINDOW),
        )
        said = (note.nick, note.text)
        if any(_said(str(row[0])) == said for row in newest):
            return False
    size = usage.size_of(content, conversation)
    await usage.check(db, limits, place, size)
    await db.execute(
        "INSERT INTO notes (owner, conversation_id, content, timestamp, expires_at)"
        " VALUES (?, ?, ?, ?, NULL)",
        (place.key, conversation, content, note.said_at),
    )
    await usage.add(db, {place.key: size})
    return True


async def last_said(tx: Transacting, space_key: str, room: str) -> datetime | None:
    """When the newest note of the room was said, if it has any."""
    rows = await tx.read(
        "SELECT timestamp FROM notes WHERE owner = ? AND conversation_id = ?"
        " ORDER BY seq DESC LIMIT 1",
        (space_key, conversation_of(room)),
    )
    for (stamp,) in rows:
        return datetime.fromisoformat(str(stamp))
    return None


async def search(
    tx: Transacting, space_key: str, room: str, query: str, limit: int
) -> list[RoomNote]:
    """The room's notes that share most words with ``query``, best first (none shares
    a word: nothing). They are ranked in a thread of their own: up to ``SEARCHED``
    notes take a good part of a second, which the event loop (every room's messages,
    and the agent's requests) does not wait for."""
    rows = await tx.read(
        f"SELECT content, timestamp FROM notes WHERE owner = ? AND conversation_id = ?"
        f" AND {LIVE} ORDER BY seq DESC LIMIT ?",
        (space_key, conversation_of(room), time.time(), SEARCHED),
    )
    best = await asyncio.to_thread(_best, [str(content) for content, _ in rows], query, limit)
    return [_note(str(rows[i][0]), str(rows[i][1])) for i in best]


def _best(contents: list[str], query: str, limit: int) -> list[int]:
    """The indexes of the ``limit`` notes among ``contents`` that best answer ``query``."""
    return rank([_words_of(content) for content in contents], words(query))[:limit]


def words(text: str) -> list[str]:
    """The words of ``text`` a question is matched on: lower case, without the most
    common ones, a final plural ``s`` dropped."""
    found = (w.lower() for w in _WORD.findall(text))
    return [w[:-1] if len(w) > 3 and w.endswith("s") else w for w in found if w not in _COMMON]


def rank(
    documents: Sequence[Sequence[str]], query: list[str], k1: float = 1.2, b: float = 0.75
) -> list[int]:
    """Indexes of ``documents`` sharing a word with ``query``, by BM25 score, the lower
    index (the newer note) first among equals."""
    terms = set(query)
    if not terms or not documents:
        return []
    matching: list[tuple[int, int, Counter[str]]] = []  # index, length, the terms it has
    frequency: Counter[str] = Counter()
    total = 0
    for index, doc in enumerate(documents):
        total += len(doc)
        if hits := [t for t in doc if t in terms]:
            counts = Counter(hits)
            frequency.update(counts.keys())
            matching.append((index, len(doc), counts))
    average = total / len(documents) or 1.0
    scores: list[tuple[float, int]] = []
    for index, length, counts in matching:
        norm = k1 * (1 - b + b * length / average)
        score = sum(
            math.log(1 + (len(documents) - frequency[t] + 0.5) / (frequency[t] + 0.5))
            * n * (k1 + 1) / (n + norm)
            for t, n in sorted(counts.items())  # one order: equal notes score the same
        )  # fmt: skip
        scores.append((-score, index))
    return [index for _, index in sorted(scores)]


@lru_cache(maxsize=TOKENISED)
def _words_of(content: str) -> tuple[str, ...]:
    """The words of a stored note's text (``content``: its JSON), each word one string
    however many notes say it (a room repeats its words: 12 MB kept for 20,000 notes of
    18 words, against 30 MB with a string per word said)."""
    return tuple(map(sys.intern, words(str(from_json(content).get("text", "")))))


def _said(content: str) -> tuple[str, str]:
    fields = from_json(content)
    return str(fields.get("nick", "")), str(fields.get("text", ""))


def _note(content: str, stamp: str) -> RoomNote:
    fields = from_json(content)
    return RoomNote(said_at=stamp, **fields)
