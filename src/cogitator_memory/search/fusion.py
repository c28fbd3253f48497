"""Reciprocal rank fusion (RRF): merge ranked lists by rank, not by score.

An item at (1-based) rank ``r`` of list ``i`` earns ``weight_i / (k + r)``; its fused score is
the sum over the lists it appears in. Scores of different scales (a cosine, a BM25 score) never
have to be compared, which is why hybrid search uses it. ``k`` (default 60, as in Cormack et
al. 2009) damps the lead of the very first ranks.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import TypeVar

K = TypeVar("K", bound=Hashable)

#: The ``k`` of RRF unless told otherwise.
DEFAULT_RRF_K = 60.0


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[K]],
    *,
    k: float = DEFAULT_RRF_K,
    weights: Sequence[float] | None = None,
    limit: int | None = None,
) -> list[tuple[K, float]]:
    """Fuse ``rankings`` (each best first, repeats after the first ignored) into one list of
    ``(item, score)``, best first; ties keep the order in which items were first seen."""
    if not (isinstance(k, int | float) and math.isfinite(k) and k >= 0):
        raise ValueError(f"k must be a finite number >= 0, got {k!r}")
    if weights is None:
        weights = [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ValueError(f"weights has {len(weights)} values for {len(rankings)} rankings")
    for w in weights:
        if not (isinstance(w, int | float) and math.isfinite(w) and w >= 0):
            raise ValueError(f"weights must be finite numbers >= 0, got {w!r}")
    scores: dict[K, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        seen: set[K] = set()
        rank = 0
        for item in ranking:
            if item in seen:
                continue
            seen.add(item)
            rank += 1
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    order = {item: i for i, item in enumerate(scores)}
    fused = sorted(scores.items(), key=lambda pair: (-pair[1], order[pair[0]]))
    return fused if limit is None else fused[:limit]


__all__ = ["DEFAULT_RRF_K", "reciprocal_rank_fusion"]
