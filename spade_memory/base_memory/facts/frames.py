"""What a memory states, as a subject, an attribute and a value: its *frame*.

"The staging API lives on port 8443" states ``the staging api · is on`` = ``port 8443``;
"Alice joined Globex" states ``alice · works at`` = ``globex``. Two memories of one
space with the same subject and attribute and different values cannot both be current
when the attribute holds one value at a time (where someone lives or works, what they
prefer, which port a service is on), so the newer replaces the older.

The parse is a handful of rules over the words, no model: a sentence is split at the
first relation phrase it holds (a lexicon of phrases, each mapped to its canonical
attribute), the words before it are the subject, the words after it (to the end of the
clause) the value. Relations that hold many values at once ("likes", "visited", "has")
are not in the lexicon: a memory that only states those has no frame, and nothing
replaces it. The lexicon and the rules were chosen on one half of a labelled set of
pairs (``labelled_pairs.jsonl``) and measured on the other (``benchmarks/supersede.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from hashlib import blake2b

_ATTRIBUTES: dict[str, str] = {
    # canonical attribute: the phrases stating it, separated by "|" (without the words of
    # ``_FILLERS``, which the parse leaves out: "now prefers" reads as "prefers")
    "lives in": (
        "lives in|live in|lives at|is living in|resides in|is based in|is based out of|"
        "moved to|has moved to|relocated to|has relocated to|moved back to|"
        "is moving to|settled in"
    ),
    "works at": (
        "works at|works for|work at|work for|is working at|is working for|"
        "is employed by|is employed at|was hired by|joined|has joined|"
        "started working at|started working for|started a job at|took a job at|"
        "got a job at|left for"
    ),
    "prefers": "prefers|prefer|would rather use|would rather have",
    "is on": (
        "lives on|runs on|run on|listens on|is served on|is served at|are served on|"
        "is hosted on|is hosted at|are hosted on|are hosted at|is reachable at|"
        "is reachable on|is available at|is available on|is exposed on|is deployed on|"
        "is deployed to|are deployed on|is on|is at|"
        "has moved to port"
    ),
    "is written in": (
        "is written in|was rewritten in|is implemented in|is built with|was rebuilt with"
    ),
    "uses": (
        "uses|use|is using|switched to|has switched to|migrated to|has migrated to|"
        "moved over to|replaced it with"
    ),
    "is scheduled for": (
        "is scheduled for|is planned for|is due on|is due|was rescheduled to|"
        "was rescheduled for|was postponed to|was pushed to|is set for"
    ),
    "is named": "is called|is named|goes by|was renamed to",
    "is": "is set to|is",
    "now": "was changed to|changed to|has changed to|was moved to",
}
"""Every relation phrase the parse knows, by the attribute it states. ``now`` says a
value changed without naming the attribute ("the meeting was moved to Wednesday"): it
matches any attribute of the same subject (``conflicts``)."""

_ONE_VALUE_NOUNS = frozenset(
    "address age birthday budget capital ceo city country currency deadline default"
    " editor email host hostname language lead length level limit manager mode name number"
    " owner password phase phone plan port price quota rate region salary shell size stage"
    " status team tier timezone title url version".split()
)
"""Subjects whose copula (``is``) states one value at a time: "the deadline is Friday"
replaces "the deadline is Monday", where "the sky is blue" does not replace "the sky is
vast"."""

_GROUPS = frozenset(
    "band choir class club community course group gym league meetup society team".split()
)
"""What "joined" names when it is not an employer: one joins many of them."""
_PRONOUNS = frozenset("he she they it i we you this that there".split())
_NEGATIONS = (("no", "longer"), ("does", "not"), ("doesn't",), ("do", "not"), ("don't",),
              ("not",), ("never",))  # fmt: skip
_FILLERS = frozenset("now currently still actually recently officially also just".split())
_ENDS = frozenset(
    ", ; ! ? ( ) . : because since but when after before so which where who while until"
    " from last this next anymore again yesterday today instead".split()
)
"""Where a value ends: punctuation, or a word opening another clause or a time."""
_SENTENCE_ENDS = frozenset(". ! ? ;".split())
_CHANGE = frozenset(
    "now moved switched migrated relocated changed renamed rescheduled postponed pushed"
    " joined left started took longer anymore instead back".split()
)
"""Words saying something changed ("no longer" counts by its second word)."""
_TOKEN = re.compile(r"\w[\w@/:+#-]*(?:\.[\w@/:+#-]+)*(?:'\w+)?|[,;!?().:]")
_ARTICLES = ("the", "a", "an")
_OPENERS = ("the", "a", "an", "to", "in", "at", "on", "over", "using")


def _by_first_word() -> dict[str, list[tuple[tuple[str, ...], str]]]:
    """Each relation phrase as words, under its first word, longest first."""
    table: dict[str, list[tuple[tuple[str, ...], str]]] = {}
    for attribute, phrases in _ATTRIBUTES.items():
        for phrase in phrases.split("|"):
            words = tuple(phrase.split())
            table.setdefault(words[0], []).append((words, attribute))
    for entries in table.values():
        entries.sort(key=lambda entry: -len(" ".join(entry[0])))
    return table


_PHRASES = _by_first_word()
_FIRST_WORDS = frozenset(_PHRASES)
_LETTERS = re.compile(r"[a-z']+")
"""Whether a text holds a relation's first word at all (3 µs), before it is split into
words (15 µs): most memories that state no frame are told by this alone."""


@dataclass(frozen=True, slots=True)
class Frame:
    """What a sentence states: ``subject`` has ``value`` for ``attribute``."""

    subject: str
    attribute: str
    value: str
    negated: bool = False
    """"no longer lives in Paris": the value is what stopped being true."""
    changed: bool = False
    """Whether the sentence says something changed ("moved to", "now", "switched to")."""

    @property
    def key(self) -> str:
        """The key memories about the same subject share (16 hex digits): a store looks
        there for what it may replace (any attribute: "was moved to" names none)."""
        return blake2b(self.subject.encode(), digest_size=8).hexdigest()

    @property
    def vague(self) -> bool:
        """Whether the subject is a pronoun or the copula's subject names no attribute
        that holds one value: then two values may well both be true."""
        words = self.subject.split()
        if "of" in words[1:]:  # "the status of the migration": its head is "status"
            words = words[: words.index("of", 1)]
        head = words[-1] if words else ""
        return self.subject in _PRONOUNS or (
            self.attribute == "is" and head.removesuffix("'s") not in _ONE_VALUE_NOUNS
        )


def subject_key_of(content: str) -> str | None:
    """The ``Frame.key`` of what ``content`` states (None: it states no frame)."""
    frame = frame_of(content)
    return None if frame is None else frame.key


def _sentences(content: str) -> list[list[str]]:
    """The words of each sentence of ``content``, case folded, punctuation as words."""
    sentences: list[list[str]] = [[]]
    for token in _TOKEN.findall(content.casefold().replace("\u2019", "'")):
        sentences[-1].append(token)
        if token in _SENTENCE_ENDS:
            sentences.append([])
    return [sentence for sentence in sentences if sentence]


def _relation(words: list[str]) -> tuple[int, int, str, bool] | None:
    """The first relation phrase of ``words``: where it starts and ends, its attribute,
    and whether a negation comes right before it."""
    for at, word in enumerate(words):
        for phrase, attribute in _PHRASES.get(word, ()):
            if tuple(words[at : at + len(phrase)]) == phrase:
                before = len(next((n for n in _NEGATIONS if tuple(words[:at][-len(n) :]) == n), ()))
                return at - before, at + len(phrase), attribute, before > 0
    return None


def _subject(words: list[str]) -> str:
    after_punctuation = [i for i, word in enumerate(words) if not word[0].isalnum()]
    if after_punctuation:
        words = words[after_punctuation[-1] + 1 :]
    while words and words[0] in (*_ARTICLES, "our", "my", "your"):
        words = words[1:]
    if words:
        words = [*words[:-1], words[-1].removesuffix("'s")]
    return " ".join(words)


def _value(words: list[str]) -> str:
    end = next((i for i, word in enumerate(words) if word in _ENDS), len(words))
    value = words[:end]
    while value and value[0] in _OPENERS:
        value = value[1:]
    return " ".join(value)


@lru_cache(maxsize=4096)
def frame_of(content: str) -> Frame | None:
    """What ``content`` states (its first sentence with a known relation), or None when
    it states nothing one value at a time can replace."""
    if _FIRST_WORDS.isdisjoint(_LETTERS.findall(content.casefold())):
        return None
    for said in _sentences(content):
        words = [word for word in said if word not in _FILLERS]
        found = _relation(words)
        if found is None:
            continue
        start, end, attribute, negated = found
        subject, value = _subject(words[:start]), _value(words[end:])
        if not subject or not value or len(subject.split()) > 6 or len(value.split()) > 8:
            continue
        if attribute == "works at" and value.split()[-1] in _GROUPS:
            continue  # "joined the chess club": one may join many
        if attribute == "now" and negated:
            continue
        changed = bool(_CHANGE.intersection(said))
        return Frame(subject, attribute, value, negated=negated, changed=changed)
    return None
