"""Nodes nearest a vector, scored from their packed vectors alone: written once for the engines
that keep a node's vector in a column of its own (SQLite, PostgreSQL).

A vector is packed by :func:`pack_vector`: one byte giving the size of a float (4 when every
value is a float32 exactly, else 8), then the values little-endian. :func:`nearest_packed`
ranks ``(id, packed vector)`` rows as :meth:`GraphStoreMixin._nearest_nodes
<cogitator_memory.graph.base.GraphStoreMixin._nearest_nodes>` ranks nodes (the cosine in float64,
best first, ties by id, at least the threshold, at most the limit), without reading the nodes:
float32 vectors are first ranked roughly in float32 (one matrix product), and only those the rough
score cannot rule out are scored exactly.

Over more than :data:`EXACT_UP_TO` nodes with vectors, the engines read each node's sign code (one
bit a dimension, :func:`vector_code`; 48 bytes at 384 dimensions) instead of its vector, and
:func:`code_shortlist` keeps the :func:`shortlist_size` nearest by Hamming distance, which alone
are scored exactly: the cost follows the codes, a thirty-second of the vectors, and a node whose
code ranks outside the shortlist is not found (measured in ``docs/graph.md``).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..vectors.similarity import numpy_or_none

if TYPE_CHECKING:
    from .records import GraphNode

#: A search by meaning over at most this many nodes with vectors scores every one exactly; over
#: more, it scores exactly only a shortlist of those whose sign codes are nearest the query's.
EXACT_UP_TO = 2000


def shortlist_size(limit: int) -> int:
    """How many nodes a search over more than :data:`EXACT_UP_TO` scores exactly for ``limit``."""
    return max(8 * limit, 500)


#: How far under a node's float32 cosine its exact (float64) one may be, far more than float32's
#: rounding on vectors of thousands of dimensions: a node the rough score puts further below the
#: threshold or the ``limit``-th best cannot be kept by the exact one.
ROUGH_MARGIN = 1e-3


def pack_vector(values: Sequence[float]) -> bytes:
    """``values`` packed little-endian after one byte giving the size of a float: 4 (float32)
    when every value is a float32 exactly, else 8 (float64), so the vector unpacks as it was."""
    count = len(values)
    single: bytes | None
    try:
        single = struct.pack(f"<{count}f", *values)
    except OverflowError:  # a value past float32's range: float64 holds it
        single = None
    if single is not None and struct.unpack(f"<{count}f", single) == tuple(values):
        return b"\x04" + single
    return b"\x08" + struct.pack(f"<{count}d", *values)


def node_body(node: GraphNode) -> str:
    """A node's JSON body as the SQL engines store it: every field but its vector, which they keep
    packed (:func:`pack_vector`) in a column of its own."""
    return node.model_dump_json(exclude_none=True, exclude={"embedding"})


def unpack_vector(blob: bytes) -> list[float]:
    """The floats :func:`pack_vector` packed."""
    size = blob[0]
    return list(struct.unpack(f"<{(len(blob) - 1) // size}{'f' if size == 4 else 'd'}", blob[1:]))


def vector_code(values: Sequence[float]) -> bytes:
    """The sign code of a vector: one bit a dimension (set when the value is above 0), packed
    first dimension in the highest bit; what a search of many nodes ranks first."""
    np = numpy_or_none()
    if np is not None:
        return bytes(np.packbits(np.asarray(values, dtype=np.float64) > 0))
    out = bytearray((len(values) + 7) // 8)  # pragma: no cover (numpy missing)
    for i, value in enumerate(values):  # pragma: no cover
        if value > 0:
            out[i >> 3] |= 0x80 >> (i & 7)
    return bytes(out)  # pragma: no cover


def code_shortlist(rows: Sequence[tuple[Any, bytes]], query: Sequence[float], count: int) -> list[Any]:
    """The keys of the ``count`` rows (``(key, sign code)``) whose codes are nearest the query's
    by Hamming distance (ties in the order given): the shortlist a search of many nodes scores
    exactly. Codes of another length than the query's are left out."""
    np = numpy_or_none()
    code = vector_code(query)
    if np is None:  # pragma: no cover
        return [key for key, _ in rows]
    same = [(key, c) for key, c in rows if len(c) == len(code)]
    if len(same) <= count:
        return [key for key, _ in same]
    codes = np.frombuffer(b"".join(c for _, c in same), dtype=np.uint8).reshape(len(same), len(code))
    distance = np.bitwise_count(codes ^ np.frombuffer(code, dtype=np.uint8)).sum(axis=1, dtype=np.int32)
    picked = np.argpartition(distance, count - 1)[:count]
    return [same[i][0] for i in np.sort(picked)]


def _matrix(np: Any, blobs: list[bytes], dtype: str, size: int) -> Any:
    """``blobs`` (packed vectors of ``size`` values of ``dtype``) as one matrix, a row each:
    joined once, their size bytes cut off in one copy."""
    if not blobs:
        return np.zeros((0, size), dtype=dtype)
    rows = np.frombuffer(b"".join(blobs), dtype=np.uint8).reshape(len(blobs), -1)[:, 1:]
    return np.ascontiguousarray(rows).view(dtype)


def _shortlist(np: Any, packed: Any, q: Any, limit: int, least: float) -> Any:
    """The rows of ``packed`` (float32 vectors) whose exact cosine with ``q`` may reach ``least``
    and the ``limit`` best: those whose float32 cosine is within :data:`ROUGH_MARGIN` of both,
    and any the float32 score could not rank (overflow)."""
    q32 = q.astype(np.float32)
    with np.errstate(all="ignore"):
        norms = np.sqrt(np.einsum("ij,ij->i", packed, packed)) * np.float32(np.linalg.norm(q32))
        rough = np.divide(packed @ q32, norms, out=np.zeros(len(packed), dtype=np.float32), where=norms > 0)
    floor = least - ROUGH_MARGIN
    if len(rough) > limit:
        kth = float(np.partition(rough, len(rough) - limit)[len(rough) - limit])
        if kth == kth:  # not NaN
            floor = max(floor, kth - ROUGH_MARGIN)
    return np.nonzero(~(rough < floor) | ~np.isfinite(norms))[0]


def nearest_packed(
    rows: Sequence[tuple[str, bytes]], vector: Sequence[float], limit: int, least: float
) -> list[tuple[str, float]] | None:
    """The ids of ``rows`` (``(id, packed vector)``) whose vector, of ``vector``'s size, has a
    cosine (float64) of at least ``least`` with it, best first (ties by id), at most ``limit``,
    with their cosines; ``None`` without numpy (the caller reads the nodes instead)."""
    np = numpy_or_none()
    if np is None:  # pragma: no cover
        return None
    size = len(vector)
    single, double = 1 + 4 * size, 1 + 8 * size
    q = np.asarray(vector, dtype=np.float64)
    singles = [(i, b) for i, b in rows if len(b) == single and b[0] == 4]
    doubles = [(i, b) for i, b in rows if len(b) == double and b[0] == 8]
    ids = [i for i, _ in doubles]
    matrix = _matrix(np, [b for _, b in doubles], "<f8", size)
    if singles:
        packed = _matrix(np, [b for _, b in singles], "<f4", size)
        kept = _shortlist(np, packed, q, limit, least)
        ids += [singles[i][0] for i in kept]
        matrix = np.vstack([matrix, packed[kept].astype(np.float64)])
    if not ids:
        return []
    norms = np.linalg.norm(matrix, axis=1) * float(np.linalg.norm(q))
    scores = np.divide(matrix @ q, norms, out=np.zeros(len(ids)), where=norms > 0)  # 0 for a zero vector
    passing = np.nonzero(scores >= least)[0]
    if len(passing) > limit:  # those tied with the limit-th best kept, ordered by id below
        kth = np.partition(scores[passing], len(passing) - limit)[len(passing) - limit]
        passing = passing[scores[passing] >= kth]
    chosen = sorted((-float(scores[i]), ids[i]) for i in passing)[:limit]
    return [(node_id, -score) for score, node_id in chosen]


__all__ = [
    "EXACT_UP_TO",
    "ROUGH_MARGIN",
    "code_shortlist",
    "nearest_packed",
    "node_body",
    "pack_vector",
    "shortlist_size",
    "unpack_vector",
    "vector_code",
]
