"""Maximal marginal relevance (MMR): pick results that are relevant and not alike.

Each step picks the candidate maximising ``lambda * sim(query, c) - (1 - lambda) * max sim(c, s)``
over the already selected ``s``, by cosine similarity. ``lambda_`` = 1 is plain relevance
order, 0 only diversity; 0.5 (the default) balances them (Carbonell and Goldstein, 1998).
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def _cos(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return 0.0 if na == 0 or nb == 0 else dot / (na * nb)


def maximal_marginal_relevance(
    query: Sequence[float],
    candidates: Sequence[Sequence[float]],
    *,
    limit: int,
    lambda_: float = 0.5,
    relevance: Sequence[float] | None = None,
) -> list[int]:
    """The indexes of up to ``limit`` candidates in MMR order.

    ``relevance`` replaces the cosine of each candidate to ``query`` when given (for example
    fused hybrid scores scaled to [0, 1]).
    """
    if not 0.0 <= lambda_ <= 1.0:
        raise ValueError(f"lambda_ must be in [0, 1], got {lambda_!r}")
    if limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    if relevance is not None and len(relevance) != len(candidates):
        raise ValueError(f"relevance has {len(relevance)} values for {len(candidates)} candidates")
    rel = list(relevance) if relevance is not None else [_cos(query, c) for c in candidates]
    chosen: list[int] = []
    max_sim = [-math.inf] * len(candidates)
    remaining = set(range(len(candidates)))
    while remaining and len(chosen) < limit:
        best = -1
        best_value = -math.inf
        for i in sorted(remaining):
            penalty = max_sim[i] if chosen else 0.0
            value = lambda_ * rel[i] - (1.0 - lambda_) * penalty
            if value > best_value:
                best, best_value = i, value
        chosen.append(best)
        remaining.discard(best)
        for i in remaining:
            max_sim[i] = max(max_sim[i], _cos(candidates[i], candidates[best]))
    return chosen


__all__ = ["maximal_marginal_relevance"]
