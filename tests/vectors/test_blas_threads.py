"""The BLAS threads of a brute-force product: chosen by the recent times of each way, the other
way tried now and then, small products on one thread; every way gives the same scores up to
the last bits."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from cogitator_memory.vectors import matrix
from cogitator_memory.vectors.matrix import VectorMatrix, product, single_blas_thread, unit_rows


@pytest.fixture
def choices() -> Iterator[dict[int, matrix._ThreadChoice]]:
    """New choices (by size) for the test, the module's own put back after it."""
    saved = matrix._choices
    matrix._choices = {}
    try:
        yield matrix._choices
    finally:
        matrix._choices = saved


def _choice_of(choices: dict[int, matrix._ThreadChoice], columns: np.ndarray) -> matrix._ThreadChoice:
    return choices.setdefault(columns.size.bit_length(), matrix._ThreadChoice())


def _columns(count: int, dims: int = 384) -> np.ndarray:
    rng = np.random.default_rng(count)
    return np.ascontiguousarray(unit_rows(rng.standard_normal((count, dims)).astype(np.float32)).T)


def test_each_way_is_tried_until_both_have_times_then_the_faster_is_taken() -> None:
    choice = matrix._ThreadChoice()
    ways = []
    for _ in range(6):
        one = choice.pick()
        ways.append(one)
        choice.record(one, 1e-9 if one else 5e-9)  # one thread five times faster
    assert sorted(ways) == [False] * 3 + [True] * 3
    assert all(choice.pick() for _ in range(20))
    for _ in range(5):
        choice.record(False, 1e-10)  # now BLAS's threads are faster
    assert not choice.pick()


def test_the_other_way_is_tried_after_enough_calls_and_time() -> None:
    choice = matrix._ThreadChoice()
    for _ in range(3):
        choice.record(True, 1e-9)
        choice.record(False, 5e-9)
    choice.explored = float("inf")  # tried just now, as far as the clock goes: never again
    assert all(choice.pick() for _ in range(200))
    choice.explored = 0.0  # long ago
    picks = [choice.pick() for _ in range(choice.EXPLORE_CALLS * 3)]
    # Once in EXPLORE_CALLS, and then not again within EXPLORE_SECONDS.
    assert picks.count(False) == 1
    assert picks.index(False) < choice.EXPLORE_CALLS


def test_large_products_are_timed_by_size_small_ones_run_on_one_thread(
    choices: dict[int, matrix._ThreadChoice],
) -> None:
    small = _columns(100)
    assert small.size < matrix.ADAPTIVE_MIN_VALUES
    q = unit_rows(np.ones((1, 384), dtype=np.float32))[0]
    product(q, small)
    assert choices == {}
    large, larger = _columns(3000), _columns(12000)
    assert large.size >= matrix.ADAPTIVE_MIN_VALUES and large.size.bit_length() < larger.size.bit_length()
    for _ in range(6):
        product(q, large)
    product(q, larger)
    first, second = _choice_of(choices, large), _choice_of(choices, larger)
    assert len(first.times[True]) == 3 and len(first.times[False]) == 3
    assert len(second.times[True]) + len(second.times[False]) == 1


def test_one_thread_is_in_force_when_chosen(choices: dict[int, matrix._ThreadChoice]) -> None:
    """What BLAS's thread count is while the product runs, seen through a matrix whose ``@``
    reads it (the thread count is the library's, not numpy's)."""
    seen: list[int] = []

    class Spy(np.ndarray):  # type: ignore[type-arg]
        def __rmatmul__(self, other: object) -> object:
            seen.append(min(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"))
            return np.asarray(other) @ np.asarray(self)

    columns = _columns(3000).view(Spy)
    choice = _choice_of(choices, columns)
    q = unit_rows(np.ones((1, 384), dtype=np.float32))[0]
    for _ in range(3):
        choice.record(True, 1e-9)
        choice.record(False, 5e-9)
    choice.explored = float("inf")
    product(q, columns)
    assert seen == [1]
    for _ in range(5):
        choice.record(False, 1e-10)
    product(q, columns)
    default = min(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")
    assert seen == [1, default]


@pytest.mark.parametrize("way", ["adaptive", "one", "default"])
def test_every_way_finds_the_same_top(way: str, monkeypatch: pytest.MonkeyPatch) -> None:
    count = 4000
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((count, 384)).astype(np.float32)
    ids = [f"e{i}" for i in range(count)]
    found = VectorMatrix(ids, unit_rows(vectors))
    queries = rng.standard_normal((8, 384)).astype(np.float32)
    with single_blas_thread():
        expected = [found.top(q, 10, -1.0) for q in queries]
    monkeypatch.setattr(matrix, "BLAS_THREADS", way)
    for q, want in zip(queries, expected, strict=True):
        for _ in range(3):
            got = found.top(q, 10, -1.0)
            assert [i for i, _ in got] == [i for i, _ in want]
            assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-6)
