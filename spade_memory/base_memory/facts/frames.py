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

_ATTRIBUTES: dict[str, tuple[str, ...]] = {
    # canonical attribute: the phrases stating it (longest first when they overlap)
    "lives in": (
        "lives in",
        "live in",
        "lives at",
        "is living in",
        "resides in",
        "is based in",
        "is based out of",
        "moved to",
        "has moved to",
        "relocated to",
        "has relocated to",
        "moved back to",
        "now lives in",
        "is moving to",
        "settled in",
    ),
    "works at": (
        "works at",
        "works for",
        "work at",
        "work for",
        "is working at",
        "is working for",
        "is employed by",
        "is employed at",
        "was hired by",
        "joined",
        "has joined",
        "started working at",
        "started working for",
        "started a job at",
        "took a job at",
        "got a job at",
        "now works at",
        "now works for",
        "is now at",
        "left for",
    ),
    "prefers": ("prefers", "prefer", "now prefers", "would rather use", "would rather have"),
    "is on": (
        "lives on",
        "runs on",
        "run on",
        "listens on",
        "is served on",
        "is served at",
        "are served on",
        "is hosted on",
        "is hosted at",
        "are hosted on",
        "are hosted at",
        "is reachable at",
        "is reachable on",
        "is available at",
        "is available on",
        "is exposed on",
        "is deployed on",
        "is deployed to",
        "are deployed on",
        "is on",
        "is at",
        "now runs on",
        "now lives on",
        "has moved to port",
    ),
    "is written in": (
        "is written in",
        "was rewritten in",
        "is implemented in",
        "is built with",
        "was rebuilt with",
    ),
    "uses": (
        "uses",
        "use",
        "is using",
        "switched to",
        "has switched to",
        "migrated to",
        "has migrated to",
        "now uses",
        "moved over to",
        "replaced it with",
    ),
    "is scheduled for": (
        "is scheduled for",
        "is planned for",
        "is due on",
        "is due",
        "was rescheduled to",
        "was rescheduled for",
        "was postponed to",
        "was pushed to",
        "is set for",
    ),
    "is named": ("is called", "is named", "goes by", "was renamed to", "is now called"),
    "is": ("is set to", "is"),
    "now": ("is now", "was changed to", "changed to", "has changed to", "was moved to"),
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
_NEGATIONS = ("no longer", "does not", "doesn't", "do not", "don't", "not", "never")
_FILLERS = frozenset("now currently still actually recently officially also just".split())
_CLAUSE_END = re.compile(
    r"\s*(?:[,;!?()]|[.:](?=\s|$)|\s(?:because|since|but|when|after|before|so|as of|which|where"
    r"|who|while|until|from|for now|last|this|next|anymore|again|yesterday|today|instead)\s)"
)
_CHANGE = re.compile(
    r"\b(?:now|moved|switched|migrated|relocated|changed|renamed|rescheduled|postponed|pushed"
    r"|joined|left|started|took|no longer|anymore|instead|back)\b"
)
_WORD = re.compile(r"[\w@./:+#-]+(?:'\w+)?")


def _phrases() -> list[tuple[str, str]]:
    pairs = [
        (phrase, attribute) for attribute, phrases in _ATTRIBUTES.items() for phrase in phrases
    ]
    return sorted(pairs, key=lambda pair: -len(pair[0]))


_RELATION = re.compile(
    r"\b(?P<neg>(?:"
    + "|".join(re.escape(n) for n in _NEGATIONS)
    + r")\s+)?(?P<rel>"
    + "|".join(re.escape(phrase) for phrase, _ in _phrases())
    + r")\b"
)
_ATTRIBUTE_OF = dict(_phrases())
# the verbs of the lexicon as a negation leaves them ("does not live in")
_BARE = {"lives": "live", "works": "work", "prefers": "prefer", "uses": "use", "runs": "run"}


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


def _normal(text: str) -> str:
    return " ".join(_WORD.findall(text.casefold().replace("\u2019", "'")))


def _unfilled(text: str) -> str:
    return " ".join(word for word in text.split() if word not in _FILLERS)


def _subject(text: str) -> str:
    words = text.split()
    while words and words[0] in ("the", "a", "an", "our", "my", "your"):
        words = words[1:]
    return " ".join(
        word.removesuffix("'s") if i == len(words) - 1 else word for i, word in enumerate(words)
    )


def _value(text: str) -> str:
    value = _CLAUSE_END.split(" " + text + " ", maxsplit=1)[0].strip()
    words = value.split()
    while words and words[0] in ("the", "a", "an", "to", "in", "at", "on", "over", "using"):
        words = words[1:]
    return " ".join(words).strip(".")


@lru_cache(maxsize=4096)
def frame_of(content: str) -> Frame | None:
    """What ``content`` states (its first sentence with a known relation), or None when
    it states nothing one value at a time can replace."""
    for sentence in re.split(r"(?<=[.!?;])\s+|\n", content):
        said = _normal(sentence)
        text = _unfilled(said)
        for bare, verb in _BARE.items():  # "does not live in" reads as "lives in"
            text = re.sub(rf"\b(does not|doesn't|no longer) {verb}\b", rf"\1 {bare}", text)
        found = _RELATION.search(text)
        if found is None:
            continue
        subject = _subject(text[: found.start()].strip())
        value = _value(text[found.end() :])
        if not subject or not value or len(subject.split()) > 6 or len(value.split()) > 8:
            continue
        attribute = _ATTRIBUTE_OF[found.group("rel")]
        if attribute == "works at" and value.split()[-1] in _GROUPS:
            continue  # "joined the chess club": one may join many
        if attribute == "now" and found.group("neg"):
            continue
        negated = found.group("neg") is not None
        changed = _CHANGE.search(said) is not None
        return Frame(subject, attribute, value, negated=negated, changed=changed)
    return None
