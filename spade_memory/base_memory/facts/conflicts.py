"""Which stored memory a new one replaces: two frames of the same subject and attribute
that state different values (``frames``).

A replacement is *confident* (the store supersedes on its own) when both frames name a
real subject (no pronoun) and the attribute holds one value at a time; where an attribute
may hold several ("uses": a team uses Jira and Slack), the new sentence must also say
that something changed ("switched to", "now"). Anything else that differs is reported,
for the caller to decide. The thresholds were chosen on the ``choose`` half of
``labelled_pairs.jsonl``; ``benchmarks/supersede.py`` reports the ``held_out`` half.
"""

from __future__ import annotations

from dataclasses import dataclass

from spade_memory.base_memory.facts.frames import Frame

_MANY_VALUED = frozenset({"uses", "is on", "prefers"})
"""Attributes that may hold several values at once: a change is confident only when the
new sentence says something changed. A preference is one of them: "prefers short
answers" says nothing against "prefers answers in Spanish", and a supersede there hid
what an agent stored; "now prefers", "prefers … instead" say one replaced the other."""


@dataclass(frozen=True, slots=True)
class Replacement:
    """``new`` states another value than ``old`` for the same thing."""

    old: Frame
    new: Frame
    confident: bool


def _contains(longer: str, shorter: str) -> bool:
    """Whether ``shorter``'s words open ``longer`` ("paris" in "paris france", "university"
    in "university's library"): the newer says more of the same, it does not contradict."""
    a = [word.removesuffix("'s") for word in longer.split()]
    b = [word.removesuffix("'s") for word in shorter.split()]
    return len(b) <= len(a) and a[: len(b)] == b


def _same_kind(a: str, b: str) -> bool:
    """Whether two values differ only in a number or an address ("port 25" / "port 587",
    "db1.internal" / "db2.internal"): one thing holds one of those at a time."""
    x, y = a.split(), b.split()
    if len(x) != len(y) or x[:-1] != y[:-1]:
        return False
    return all(any(c.isdigit() or c in ".:/@" for c in word) for word in (x[-1], y[-1]))


def replacement(new: Frame, old: Frame) -> Replacement | None:
    """Whether ``new`` replaces ``old`` (None: it does not, or they are not comparable)."""
    if new.subject != old.subject:
        return None
    if new.attribute != old.attribute and "now" not in (new.attribute, old.attribute):
        return None
    if new.negated != old.negated:
        # "no longer lives in Paris" after "lives in Paris" (or back again)
        if new.value == old.value or _contains(new.value, old.value):
            return Replacement(old, new, confident=not (new.vague or old.vague))
        return None
    if new.value == old.value or _contains(new.value, old.value) or _contains(old.value, new.value):
        return None
    confident = not (new.vague or old.vague) and (
        new.attribute not in _MANY_VALUED or new.changed or _same_kind(old.value, new.value)
    )
    return Replacement(old, new, confident)
