"""Brute-force cosine search with numpy: a matrix of unit vectors per scope, cached until a write.

numpy is imported lazily (the ``[vectors]`` extra); :func:`load_numpy` raises
:class:`~cogitator_memory.errors.MissingDriverError` with the pip command when it is missing.

How many BLAS threads a product runs with is chosen by :data:`BLAS_THREADS`. On an idle
machine BLAS's own threads make a large product about twice as fast as one thread (10,000 x
384 on two cores: about 0.2 against 0.4 ms). On a machine whose cores other work keeps busy
they make it many times slower (OpenBLAS's threads spin between products and wait for cores:
p50 about 7-12 ms against 1 ms, p95 20 ms against 2 ms). So by default (``"adaptive"``) a large
product runs the way whose recent products of about its size took less time per value, and now
and then (at most once a second, once in 50 products) the other way, to notice when the machine changes; small
products always run on one thread. The vectors are kept as the columns of the matrix (see
:class:`VectorMatrix`), which makes the one-thread product 2-3x faster.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections import OrderedDict, deque
from collections.abc import Hashable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Literal

from ..errors import MissingDriverError

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    Matrix = NDArray[np.float32]
else:
    Matrix = Any

_controller: Any = None
_controller_loaded = False


def load_numpy(store: str) -> Any:
    """The numpy module, or ``MissingDriverError`` naming ``pip install "cogitator-memory[vectors]"``."""
    try:
        import numpy
    except ImportError:
        raise MissingDriverError(store, "vectors", "numpy") from None
    return numpy


def _blas_controller() -> Any:
    global _controller, _controller_loaded
    if not _controller_loaded:
        _controller_loaded = True
        try:
            from threadpoolctl import ThreadpoolController  # type: ignore[import-untyped, unused-ignore]

            _controller = ThreadpoolController()
        except Exception:  # threadpoolctl missing or unable to inspect the process
            _controller = None
    return _controller


def _blas_libraries() -> list[Any]:
    """threadpoolctl's controllers of the BLAS libraries loaded in the process (none without it)."""
    global _blas_libs
    if _blas_libs is None:
        controller = _blas_controller()
        _blas_libs = [] if controller is None else [c for c in controller.lib_controllers if c.user_api == "blas"]
    return _blas_libs


_blas_libs: list[Any] | None = None


@contextlib.contextmanager
def single_blas_thread() -> Iterator[None]:
    """Limit BLAS to one thread inside the block (no-op without ``threadpoolctl``).

    The libraries' own setters are called directly (a C call each), not through
    ``ThreadpoolController.limit``, which looks the libraries up again each time and cost about
    as much as a tenth of a 10,000 x 384 product.
    """
    libraries = _blas_libraries()
    changed = []
    for library in libraries:
        before = library.get_num_threads()
        if before != 1:
            library.set_num_threads(1)
            changed.append((library, before))
    try:
        yield
    finally:
        for library, before in changed:
            library.set_num_threads(before)


def unit_vector(query: Sequence[float] | Matrix) -> Matrix:
    """``query`` (finite, not all zero: a checked vector) as a float32 vector of length 1."""
    np = load_numpy("vector search")
    # A checked query (a QueryVector) holds its values as a float64 array already.
    given = getattr(query, "array", None)
    # Made float32 first, as the stored rows are, so that a list and a float32 array of the same
    # values give the same scores; the length taken in float64, where no square underflows.
    q = np.asarray(query if given is None else given, dtype=np.float32).astype(np.float64)
    norm = math.sqrt(float(q @ q))
    out: Matrix = (q / norm).astype(np.float32)
    return out


def unit_rows(vectors: Sequence[Sequence[float]] | Sequence[float] | Matrix) -> Matrix:
    """``vectors`` as a float32 matrix whose rows have length 1."""
    np = load_numpy("vector search")
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim == 1:
        matrix = matrix.reshape(1, -1)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: Matrix = (matrix / norms).astype(np.float32, copy=False)
    return out


class VectorMatrix:
    """The unit vectors of some embeddings, with their ids, searched by one vector-matrix product.

    The vectors are kept as the columns of a C-ordered float32 matrix (dimensions x count), so
    a search reads it front to back in one pass: OpenBLAS's product of a vector with such a
    matrix measured 2-3x faster than the product of the row-major matrix with the vector (one
    thread, 10,000 x 384: about 0.35 ms against 1 ms).
    """

    def __init__(self, ids: list[str], matrix: Matrix | None) -> None:
        self.ids = ids
        self.columns: Matrix | None = None
        if matrix is not None:
            np = load_numpy("vector search")
            self.columns = np.ascontiguousarray(matrix.T, dtype=np.float32)

    @property
    def matrix(self) -> Matrix | None:
        """The unit vectors as rows (a view of :attr:`columns`)."""
        return None if self.columns is None else self.columns.T

    def __len__(self) -> int:
        return len(self.ids)

    def scores(self, query: Sequence[float] | Matrix) -> Matrix:
        """The cosine of ``query`` with every vector, in the order of :attr:`ids`."""
        if self.columns is None:
            np = load_numpy("vector search")
            empty: Matrix = np.zeros(0, dtype=np.float32)
            return empty
        return product(unit_vector(query), self.columns)

    def top(self, query: Sequence[float] | Matrix, limit: int, threshold: float) -> list[tuple[str, float]]:
        """Up to ``limit`` (id, cosine) best first, cosine >= ``threshold``; equal scores in the
        order of the rows, and of vectors scoring alike at the cut, those of the first ids kept
        (as the stores order hits: best first, ties by id)."""
        if not self.ids or self.columns is None:
            return []
        scores = self.scores(query)
        ids = self.ids
        out: list[tuple[str, float]] = []
        for i, raw in top_rows(scores, limit, ids):
            score = min(1.0, max(-1.0, raw))
            if score < threshold:
                break
            out.append((ids[i], score))
        return out


#: Scores of at least this many rows are cut through a sample (see :func:`top_rows`).
SAMPLED_MIN_ROWS = 4096
#: One score in this many is sampled.
SAMPLE_STEP = 16


def top_rows(scores: Matrix, limit: int, ids: Sequence[str] | None = None) -> list[tuple[int, float]]:
    """The ``limit`` best (row, score) of ``scores``, best first, equal scores in row order.
    Of the rows that score what the ``limit``-th best scores, the first rows are kept, or with
    ``ids`` (one per row) those of the first ids.

    Exact. For many rows the scores are first cut at a bound read from a sample of them (every
    :data:`SAMPLE_STEP`-th), one at or under the ``limit``-th best in all but rare cases: the
    rows at or over it (a few dozen) are all that is sorted. When fewer than ``limit`` pass the
    bound, every row is a candidate. The candidates are sorted (a few dozen), and their first
    ``limit`` are the answer unless rows of equal score straddle the cut and ``ids`` choose
    among them; then (and without a sample) the ``limit``-th best score is found among the
    candidates: the rows over it all stay, and of those equal to it as many as are left.
    """
    np = load_numpy("vector search")
    n = int(scores.shape[0])
    if limit >= n:
        rows = np.arange(n)
    else:
        rows = None
        if n >= SAMPLED_MIN_ROWS:
            sample = scores[::SAMPLE_STEP]
            # The sample's r-th best: about r * SAMPLE_STEP rows score at least as well.
            r = min(len(sample), limit // SAMPLE_STEP + 4)
            bound = np.partition(sample, len(sample) - r)[len(sample) - r]
            found = np.flatnonzero(scores >= bound)
            if len(found) >= limit:
                # The candidates best first, equal scores in row order: their first ``limit``
                # are the answer, unless equal scores at the cut must be chosen by id.
                chosen = scores[found]
                order = np.argsort(-chosen, kind="stable")
                if ids is None or len(order) == limit or chosen[order[limit - 1]] != chosen[order[limit]]:
                    best = order[:limit]
                    return list(zip(found[best].tolist(), chosen[best].tolist(), strict=True))
                rows = found
        if rows is None:
            rows = np.arange(n)
        chosen = scores[rows]
        cut = np.partition(chosen, len(chosen) - limit)[len(chosen) - limit]
        over = rows[chosen > cut]
        at = rows[chosen == cut]
        left = limit - len(over)
        if ids is not None and len(at) > left:
            at = np.array(sorted(at.tolist(), key=ids.__getitem__)[:left], dtype=at.dtype)
        at = at[:left]
        rows = np.concatenate((over, at)) if len(at) else over
        rows.sort()
    order = np.argsort(-scores[rows], kind="stable")  # equal scores keep the order of the rows
    picked = rows[order]
    return list(zip(picked.tolist(), scores[picked].tolist(), strict=True))


#: The BLAS threads of a product (see the module docstring): ``"adaptive"`` (the default),
#: ``"one"`` (BLAS limited to one thread, as on a machine always busy), or ``"default"``
#: (numpy's own setting).
BLAS_THREADS: Literal["adaptive", "one", "default"] = "adaptive"
#: The fewest values (dimensions x vectors) of a matrix whose product may run on BLAS's threads;
#: smaller products run on one thread.
ADAPTIVE_MIN_VALUES = 1_000_000


def product(q: Matrix, columns: Matrix) -> Matrix:
    """``q @ columns`` (a float32 vector times a float32 matrix) on the BLAS threads that
    :data:`BLAS_THREADS` chooses. The two ways may give scores that differ in the last bits
    (BLAS's threads cut the columns into parts, and a part's first columns are summed in
    another order)."""
    if BLAS_THREADS == "default":
        out: Matrix = q @ columns
        return out
    choice = None
    one = True
    if BLAS_THREADS == "adaptive" and columns.size >= ADAPTIVE_MIN_VALUES and _blas_libraries():
        # Products of about the same size (a power of two apart at most) choose together: how
        # much the threads bring depends on whether the matrix fits the processor's caches.
        size = columns.size.bit_length()
        choice = _choices.get(size)
        if choice is None:
            choice = _choices.setdefault(size, _ThreadChoice())
        one = choice.pick()
    started = time.perf_counter()
    if one:
        with single_blas_thread():
            out = q @ columns
    else:
        out = q @ columns
    if choice is not None:
        choice.record(one, (time.perf_counter() - started) / columns.size)
    return out


class _ThreadChoice:
    """Whether large products run on one BLAS thread: the way whose last few products took
    less time per value; the other way now and then, so that a change of load is noticed."""

    KEPT = 5
    EXPLORE_CALLS = 50
    EXPLORE_SECONDS = 1.0

    def __init__(self) -> None:
        self.times: dict[bool, deque[float]] = {True: deque(maxlen=self.KEPT), False: deque(maxlen=self.KEPT)}
        self.calls = 0
        self.explored = 0.0

    def pick(self) -> bool:
        """``True`` for one thread."""
        one, many = self.times[True], self.times[False]
        if len(one) < 3 or len(many) < 3:
            return len(one) <= len(many)
        best = sorted(one)[len(one) // 2] <= sorted(many)[len(many) // 2]
        self.calls += 1
        if self.calls >= self.EXPLORE_CALLS:
            now = time.monotonic()
            if now - self.explored >= self.EXPLORE_SECONDS:
                self.calls = 0
                self.explored = now
                return not best
        return best

    def record(self, one: bool, seconds_per_value: float) -> None:
        """Keep the time a product took per value of its matrix."""
        self.times[one].append(seconds_per_value)


_choices: dict[int, _ThreadChoice] = {}


class ScopeCache:
    """The matrices of recently searched scopes (least recently used dropped first), cleared on write."""

    def __init__(self, capacity: int = 32) -> None:
        self.capacity = capacity
        self._items: OrderedDict[Hashable, VectorMatrix] = OrderedDict()

    def get(self, key: Hashable) -> VectorMatrix | None:
        """The cached matrix of ``key``, or ``None``."""
        found = self._items.get(key)
        if found is not None:
            self._items.move_to_end(key)
        return found

    def put(self, key: Hashable, value: VectorMatrix) -> None:
        """Cache ``value`` under ``key``."""
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.capacity:
            self._items.popitem(last=False)

    def clear(self) -> None:
        """Forget every matrix (after a write)."""
        self._items.clear()


__all__ = ["ScopeCache", "VectorMatrix", "load_numpy", "single_blas_thread", "top_rows", "unit_rows"]
