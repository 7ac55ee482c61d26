"""Entities found in a memory's words by rules, without a model: cheap enough to run at
every store (25-60 µs for a chat turn on this project's machine), in any process.

Four kinds. A *name* is a run of capitalised words that is not merely the first word of
a sentence ("Melanie", "New York", "Charlotte's Web"), its possessive dropped; a *title*
is what stands in quotes; a *date* is a day named in full (``retrieval.dates``); a
*term* is any other word of four letters or more that is not a stop word, case-folded
and crudely stemmed ("camping" and "camped" → "camp"). Terms are what makes the graph
useful beyond names: the store keeps a memory's first ``MOST_TERMS``, and what recurs in
a space is what search follows (``expansion``). A name at the very start of the content,
or before a colon (a speaker), is the memory's *subject*. A comma, a bracket, a slash or a
dash between words ends a name ("Melanie, Caroline" are two).

Keys are folded as the word index folds words: by case and Latin accents ("İstanbul",
"Istanbul" and text in decomposed form file together), and a typographic apostrophe is
the plain one ("O\u2019Brien" is "O'Brien"). A memory links at most ``MOST_NAMES`` names,
titles and days and ``MOST_TERMS`` terms. ``FINDER`` numbers the rules: a store whose
links an older finder made is linked again when opened (``links``).
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import TYPE_CHECKING, Literal, NamedTuple

from spade_memory.base_memory.retrieval.dates import days_named
from spade_memory.storage.fts import STOP_WORDS

if TYPE_CHECKING:
    from spade_memory.protocol.memories import Memory

Kind = Literal["name", "title", "date", "term"]

FINDER = 3
"""The version of these rules (1: the first, which let a comma join two names and split
words at a combining accent; 2: terms lower-cased rather than case-folded, a typographic
apostrophe in a name kept, no bound on a memory's names); a store linked by another is
linked again at open."""
MOST_TERMS = 8
"""Terms kept per memory (the first ones)."""
MOST_NAMES = 32
"""Names, titles and days kept per memory (the first ones, its content's before its
context's): with ``MOST_TERMS``, what bounds the rows a long memory links (its links
are not counted in the owner's bytes)."""
LONGEST_KEY = 200
"""Characters of the longest key kept: a longer run of capitalised words (or a word of
hundreds of letters) names nothing, and PostgreSQL refuses a key of a few thousand bytes
in its index, failing the store with it."""

_MARKS = "\u0300-\u036f"
"""Combining accents (as in text written in decomposed form): part of the word they
follow."""
_ACCENTS = re.compile(f"[{_MARKS}]+")
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u02bc": "'"})
"""Typographic apostrophes, read as the plain one."""
_TOKEN = re.compile(rf"[^\W\d_][\w{_MARKS}'\u2019-]*|[.!?:;\n,()\[\]{{}}/|\u2013\u2014-]")
"""A word (its hyphens within it), or a mark that ends a sentence or a name."""
_QUOTED = re.compile(r"[\"\u201c]([^\"\u201c\u201d\n]{2,80})[\"\u201d]")
_POSSESSIVE = re.compile(r"['\u2019]s$|['\u2019]$", re.IGNORECASE)
_WORD = re.compile(rf"[\w{_MARKS}'\u2019-]+")
_PLAIN = re.compile(r"[\w\s-]*")
"""A name whose key is its words as they are (no apostrophe, no punctuation)."""
_POSSESSIVES = ("'s", "'S", "\u2019s", "\u2019S", "'", "\u2019")
"""The endings ``_POSSESSIVE`` drops, for a test without a regular expression."""
_SPEAKER = re.compile(r"^\s*([A-Z][\w'\u2019-]*(?:\s+[A-Z][\w'\u2019-]*){0,2})\s*:")
_ENDS_SENTENCE = {".", "!", "?", ":", ";", "\n"}
_MARKS_BETWEEN = _ENDS_SENTENCE | set(",()[]{}/|-\u2013\u2014")
"""What ends a name: a mark ending a sentence, or one that stands between words."""
_JOINERS = {"of", "de", "del", "la", "van", "von", "the"}
"""Lower-case words a name may hold between capitalised ones ("Bank of England")."""
_COMMON = frozenset(
    (
        "also been just like really very much more most some such only other over than well "
        "yeah yes hey thanks thank wow great good nice cool glad sure okay lots things thing "
        "something anything everything nothing someone everyone people time times today "
        "tomorrow yesterday year years week weeks month months going gonna want wanted "
        "know knew think thought feel felt make made take took come came gave give said "
        "tell told look looks looking sounds sound love loved amazing awesome super pretty "
        "totally always never even still back here there where when what which while "
        "about after again because before being could doing does each from have having "
        "into it's i'm that's you're that them then they this those through would your "
        "with will were what's don't can't didn't i've i'll we're let's went"
    ).split()
)
"""Words too common to be terms (beyond the search's stop words)."""


class Mention(NamedTuple):
    """One entity a text names: its ``key`` (how the graph files it: lower case, no
    possessive), ``name`` as first written, its ``kind``, and whether it is the memory's
    ``subject``. (A tuple: a memory names eight or nine, made at every store.)"""

    key: str
    name: str
    kind: Kind
    subject: bool = False


def mentions(content: str, context: str | None = None) -> list[Mention]:
    """The entities ``content`` names (with the subject flagged), then the names, titles
    and days of ``context``, each key once. Returns them in that order."""
    found = list(_of_content(content))
    if context:  # whose speaker is not the memory's subject
        keys = {mention.key for mention in found}
        found += [
            m._replace(subject=False) if m.subject else m
            for m in _of_content(context, terms=False)
            if m.key not in keys
        ]
        found = _unique(found)
    return _bounded(found)


@lru_cache(maxsize=4096)
def _of_content(text: str, terms: bool = True) -> tuple[Mention, ...]:
    """What ``text`` names (kept for the texts seen last: a tuple, which no caller can
    change under the next one asking)."""
    if not text.isascii() and not unicodedata.is_normalized("NFC", text):
        text = unicodedata.normalize("NFC", text)  # "Cafe\u0301" is written "Café"
    titles = _QUOTED.findall(text)
    unquoted = _QUOTED.sub(" ", text) if titles else text  # a title's words are its own
    subject = _subject(unquoted)  # '"Dune" is a great book': no one is its subject
    found: list[Mention] = []
    if subject is not None:
        found.append(Mention(key_of(subject), subject, "name", subject=True))
    for title in titles:
        if key := key_of(title):
            found.append(Mention(key, title.strip(), "title"))
    for day in days_named(text):
        found.append(Mention(day.isoformat(), day.isoformat(), "date"))
    names, words = _names_and_words(unquoted)
    found += [Mention(key, name, "name") for name in names if (key := key_of(name))]
    if terms:
        inside = {part for mention in found for part in mention.key.split()}
        kept = [w for w in dict.fromkeys(words) if w not in inside][:MOST_TERMS]
        found += [  # a word is lower case already: only another script's needs folding
            Mention(stem(word if word.isascii() else fold(word)), word, "term") for word in kept
        ]
    return tuple(m for m in _unique(found) if len(m.key) <= LONGEST_KEY)


def _bounded(found: list[Mention]) -> list[Mention]:
    """``found`` with no more than ``MOST_NAMES`` names, titles and days (the first):
    applied once, to a memory's content and context together (``mentions``)."""
    if len(found) <= MOST_NAMES:
        return found
    named = 0
    kept: list[Mention] = []
    for mention in found:
        if mention.kind != "term":
            named += 1
            if named > MOST_NAMES:
                continue
        kept.append(mention)
    return kept


def _subject(text: str) -> str | None:
    """A speaker ("Melanie: ...") or a name that starts the text ("Alice prefers tea")."""
    speaker = _SPEAKER.match(text)
    if speaker and speaker.group(1).split()[0].lower() not in _NOT_NAMES:
        return speaker.group(1)  # not "Tomorrow: call the plumber"
    tokens = _TOKEN.findall(text[:120])
    if not tokens or not tokens[0][:1].isupper() or tokens[0].lower() in _NOT_NAMES:
        return None
    name = [tokens[0]]
    for token in tokens[1:4]:
        if not token[:1].isupper() or token.lower() in _NOT_NAMES:
            break
        name.append(token)
    if len(name) == 1 and name[0].lower().endswith(_NOT_NAME_ENDINGS):
        return None  # "Researching adoption agencies": a verb, not a name
    return " ".join(name)


def _names_and_words(text: str) -> tuple[list[str], list[str]]:
    """Runs of capitalised words not opening a sentence, and the other content words."""
    names: list[str] = []
    words: list[str] = []
    run: list[str] = []
    opening = True
    for token in _TOKEN.findall(text):
        if token in _MARKS_BETWEEN:
            if run:
                _close(run, names)
            opening = opening or token in _ENDS_SENTENCE
            continue
        lower = token.lower()
        capitalised = token[0].isupper() and lower not in _NOT_NAMES
        if (capitalised and (not opening or token.endswith(_POSSESSIVES))) or (
            run and lower in _JOINERS
        ):  # a possessive ("Mel's") names even first
            run.append(token)
        else:
            if run:
                _close(run, names)
            if capitalised and opening:
                pass  # a sentence's first word, capitalised: neither a name nor a term
            elif len(lower) >= 4 and lower not in _NOT_TERMS and lower.isalpha():
                words.append(lower)
        opening = False
    _close(run, names)
    return names, words


def _close(run: list[str], names: list[str]) -> None:
    while run and run[-1].lower() in _JOINERS:
        run.pop()
    if run:
        names.append(" ".join(run))
    run.clear()


_CALENDAR = frozenset(
    "january february march april may june july august september october november december"
    " monday tuesday wednesday thursday friday saturday sunday".split()
)
_NOT_NAMES = STOP_WORDS | _COMMON | _CALENDAR | {"i", "i'd", "ok", "oh", "hi", "just", "went"}
_NOT_NAME_ENDINGS = ("ing", "ed", "ly")
_NOT_TERMS = STOP_WORDS | _COMMON


def key_of(name: str) -> str:
    """How the graph files a name: folded (``fold``), possessives and punctuation
    dropped, spaces collapsed ("Melanie's" → "melanie", "İstanbul" → "istanbul")."""
    folded = fold(name)
    if _PLAIN.fullmatch(folded):  # most names: nothing to drop
        return " ".join(folded.split())
    words = [_POSSESSIVE.sub("", word) for word in _WORD.findall(folded)]
    return " ".join(word for word in words if word)


def fold(text: str) -> str:
    """``text`` as keys hold it: case-folded ("Straße" → "strasse"), without Latin
    accents, its typographic apostrophes plain. Returns the folded text."""
    folded = text.casefold()
    if folded.isascii():
        return folded
    return _folded(folded.translate(_APOSTROPHES))


def _folded(text: str) -> str:
    """``text`` without its Latin accents (as the word index folds them: "café" and
    "cafe" are one word to it), composed again."""
    return unicodedata.normalize("NFC", _ACCENTS.sub("", unicodedata.normalize("NFD", text)))


@lru_cache(maxsize=16384)
def stem(word: str) -> str:
    """A term's key: a few English endings dropped, enough to file "camping", "camped"
    and "camps" together, "movie" and "movies" (not a real stemmer: the graph only needs
    them to meet)."""
    if word.endswith("ies") and len(word) >= 5:
        return word[:-3] + "y"  # "parties" → "party", "movies" → "movy"
    if word.endswith("ie") and len(word) >= 5:
        return word[:-2] + "y"  # "movie" → "movy", as its plural
    for ending in ("ings", "ing", "ed", "es", "s"):
        if word.endswith(ending) and len(word) - len(ending) >= 4 and not word.endswith(_KEPT):
            base = word[: -len(ending)]
            if ending in ("ing", "ed") and len(base) > 4 and base[-1] == base[-2]:
                return base[:-1]  # "swimming" → "swim"
            return base
    return word


_KEPT = ("ss", "us", "is")
"""Endings that are not plurals ("class", "bonus", "tennis")."""


def _unique(found: list[Mention]) -> list[Mention]:
    seen: dict[str, Mention] = {}
    for mention in found:
        if mention.key not in seen or (mention.subject and not seen[mention.key].subject):
            seen[mention.key] = mention
    return list(seen.values())


def names_in(memory: Memory | None) -> list[str]:
    """The names, titles and days a memory names, as written (what a change notice
    lists; none for a memory gone)."""
    if memory is None:
        return []
    return [m.name for m in mentions(memory.content, memory.context) if m.kind != "term"]
