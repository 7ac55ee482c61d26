"""Memories stored next to a strong match are lifted: what was said around it belongs to it.

An agent stores what a conversation brings in the order it comes, so the memories
stored just before and after one that matches a query often hold the rest of the
answer (the question about a trip matches the turn that names it; the turns around
it say when and with whom). A search therefore adds to each candidate's score
``WEIGHT`` times the sum of the ``BEST`` highest scores among the candidates stored
within ``WINDOW`` places of it in the store's order (its own included), so a run of
good matches rises together and a lone weak match next to them comes up with them.
Only the search's own candidates take part (its words' and its meaning's); nothing
is fetched. Measured on LoCoMo (see ``docs/performance.md``).
"""

from __future__ import annotations

from collections.abc import Mapping

WINDOW = 5
"""How far apart, in the store's order (``seq``), two memories may be to lift each other."""
BEST = 5
"""How many of the best scores within the window are added."""
WEIGHT = 0.3
"""What the sum of those scores weighs against the memory's own."""


def lifted(
    scores: Mapping[int, float],
    window: int = WINDOW,
    best: int = BEST,
    weight: float = WEIGHT,
) -> dict[int, float]:
    """Each candidate's score plus ``weight`` times the sum of the ``best`` highest scores of
    the candidates whose seq is within ``window`` of its own (its own among them).

    Returns a new dict with the same keys; scores are assumed non-negative (higher is
    better), and the result is scaled as they are, so any ranking's scores can be lifted.
    """
    if weight == 0:
        return dict(scores)
    result = {seq: score * (1 + weight) for seq, score in scores.items()}  # alone
    order = sorted(scores)
    values = [scores[seq] for seq in order]
    last = len(order) - 1
    low = high = 0  # the window of the candidate at ``at``: order[low:high]
    for at, seq in enumerate(order):
        if (at == 0 or seq - order[at - 1] > window) and (
            at == last or order[at + 1] - seq > window
        ):
            continue  # no other candidate near it (most, in a large store)
        while order[low] < seq - window:
            low += 1
        high = max(high, at + 1)
        while high <= last and order[high] <= seq + window:
            high += 1
        near = values[low:high]
        if len(near) > best:
            near = sorted(near, reverse=True)[:best]
        result[seq] = values[at] + weight * sum(near)
    return result
