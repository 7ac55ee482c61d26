"""Turn free user text into a safe FTS5 query.

Raw FTS5 syntax from users is a classic crash (an unbalanced quote, a bare
``AND``, a ``*``). User text therefore reaches FTS5 only as quoted terms: the
query is split into words, stop-words are dropped (unless nothing else is
left), and the words are joined with OR so that BM25 ranks memories by how
many of the words they share and how rare those words are.
"""

from __future__ import annotations

import re

MAX_TERMS = 64

_WORD = re.compile(r"\w+", re.UNICODE)

STOP_WORDS = frozenset(
    (
        "a about after all also am an and any are as at be been before being but by can "
        "could did do does doing for from had has have having he her hers him his how i "
        "if in into is it its me my no nor not of on or our ours she so than that the "
        "their them then there these they this those to too us was we were what when "
        "where which who whom why will with would you your yours "
    ).split()
)


def query_terms(text: str) -> list[str]:
    """The words of ``text`` a search looks for: lower-cased, stop-words dropped (unless
    nothing else is left), each once, at most ``MAX_TERMS``."""
    words = [w.lower() for w in _WORD.findall(text)]
    terms = [w for w in words if w not in STOP_WORDS] or words
    return list(dict.fromkeys(terms))[:MAX_TERMS]


def match_expression(text: str) -> str | None:
    """An FTS5 MATCH expression for ``text``, or None when it has no words."""
    return fts5_expression(query_terms(text))


def fts5_expression(terms: list[str]) -> str | None:
    """``terms`` as an FTS5 MATCH expression (quoted, joined with OR); None without any."""
    if not terms:
        return None
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)


def tsquery_text(terms: list[str]) -> str:
    """``terms`` as the text of PostgreSQL's ``to_tsquery``: each quoted as a literal
    lexeme (a ``\\w`` word holds no quote; one would be doubled), joined with ``|``."""
    return " | ".join("'" + term.replace("'", "''") + "'" for term in terms)
