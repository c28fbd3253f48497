"""Brute-force cosine search with numpy: a matrix of unit rows per scope, cached until a write.

numpy is imported lazily (the ``[vectors]`` extra); :func:`load_numpy` raises
:class:`~cogitator_memory.errors.MissingDriverError` with the pip command when it is missing.
Products run with BLAS limited to one thread when ``threadpoolctl`` is installed: for one
query, waking a second OpenBLAS thread costs more than it brings (measured here: 10,000 x 384
took 9.5 ms with two threads, 0.19 ms with one; see ``docs/vectors.md``).
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import Hashable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

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


@contextlib.contextmanager
def single_blas_thread() -> Iterator[None]:
    """Limit BLAS to one thread inside the block (no-op without ``threadpoolctl``)."""
    controller = _blas_controller()
    if controller is None:
        yield
        return
    with controller.limit(limits=1, user_api="blas"):
        yield


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
    """The unit vectors of some embeddings, with their ids, searched by one mat-vec product."""

    def __init__(self, ids: list[str], matrix: Matrix | None) -> None:
        self.ids = ids
        self.matrix = matrix

    def __len__(self) -> int:
        return len(self.ids)

    def top(self, query: Sequence[float], limit: int, threshold: float) -> list[tuple[str, float]]:
        """Up to ``limit`` (id, cosine) best first, cosine >= ``threshold``."""
        if not self.ids or self.matrix is None:
            return []
        np = load_numpy("vector search")
        q = unit_rows(query)[0]
        with single_blas_thread():
            scores = self.matrix @ q
        n = scores.shape[0]
        idx = np.argpartition(-scores, limit - 1)[:limit] if limit < n else np.arange(n)
        idx = idx[np.argsort(-scores[idx], kind="stable")]
        out: list[tuple[str, float]] = []
        for i in idx.tolist():
            score = min(1.0, max(-1.0, float(scores[i])))
            if score < threshold:
                break
            out.append((self.ids[i], score))
        return out


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


__all__ = ["ScopeCache", "VectorMatrix", "load_numpy", "single_blas_thread", "unit_rows"]
