"""Cosine similarity of vectors (numpy when installed), shared by the context builder and recall."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity of two vectors of the same size (0 when either is all zeros)."""
    dot = 0.0
    na = 0.0
    nb = 0.0
    for x, y in zip(a, b, strict=True):
        dot += x * y
        na += x * x
        nb += y * y
    if na == 0.0 or nb == 0.0:
        return 0.0
    return dot / math.sqrt(na * nb)


def numpy_or_none() -> Any:
    """numpy, or ``None`` when it is not installed."""
    try:
        import numpy
    except ImportError:  # pragma: no cover - numpy is there in the test environment
        return None
    return numpy


def cosines(query: Sequence[float], vectors: Sequence[Sequence[float]], *, precise: bool = False) -> list[float]:
    """Cosine of ``query`` with each vector (numpy when installed, in float32; ``precise``: in
    float64, as :func:`cosine` computes one). Vectors of another size than the query raise
    ``ValueError``."""
    if not vectors:
        return []
    size = len(query)
    for v in vectors:
        if len(v) != size:
            raise ValueError(f"vector size mismatch: the input has {size} dimensions, an entry {len(v)}")
    np = numpy_or_none()
    if np is None:  # pragma: no cover
        return [cosine(query, v) for v in vectors]
    dtype = np.float64 if precise else np.float32
    q = np.asarray(query, dtype=dtype)
    m = np.asarray(vectors, dtype=dtype)
    qn = float(np.linalg.norm(q))
    if qn == 0.0:
        return [0.0] * len(vectors)
    norms = np.linalg.norm(m, axis=1)
    norms[norms == 0.0] = 1.0
    return [float(x) for x in (m @ q) / (norms * qn)]


__all__ = ["cosine", "cosines"]
