"""graph.nearest, the scoring SQLite and PostgreSQL share: sign codes (the same with numpy and
without), packed vectors that unpack as written, the exact ranking of packed rows, and the
codes' shortlist."""

from __future__ import annotations

import random

import pytest

from cogitator_memory.graph import nearest
from cogitator_memory.vectors.similarity import cosine


def test_a_sign_code_is_the_same_with_numpy_and_without(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(1)
    vectors = [[rng.uniform(-1, 1) for _ in range(size)] for size in (1, 7, 8, 9, 384, 389)]
    vectors.append([0.0, -0.0, 1e-300, -1e-300, 2.0])
    with_numpy = [nearest.vector_code(v) for v in vectors]
    monkeypatch.setattr(nearest, "numpy_or_none", lambda: None)
    assert [nearest.vector_code(v) for v in vectors] == with_numpy
    assert nearest.vector_code([1.0, -1.0, 0.0, 3.0, 0.0, 0.0, 0.0, 0.0, 5.0]) == bytes([0b10010000, 0b10000000])


def test_packed_vectors_unpack_as_written() -> None:
    single = [0.5, -2.0, 0.25]  # float32 exactly
    double = [0.1, 0.2]
    assert nearest.pack_vector(single)[0] == 4 and nearest.unpack_vector(nearest.pack_vector(single)) == single
    assert nearest.pack_vector(double)[0] == 8 and nearest.unpack_vector(nearest.pack_vector(double)) == double


def test_packed_rows_rank_as_cosines_of_each() -> None:
    rng = random.Random(2)
    vectors = {f"v{i:03d}": [float(rng.randint(-3, 3)) for _ in range(6)] for i in range(200)}
    vectors["w"] = [0.1] * 6  # float64
    vectors["zero"] = [0.0] * 6
    rows = [(key, nearest.pack_vector(v)) for key, v in vectors.items()]
    rows.append(("short", nearest.pack_vector([1.0, 1.0])))  # another size: never ranked
    query = [1.0, 0.5, -1.0, 2.0, 0.0, 1.0]
    for limit, least in ((1, -1.0), (10, 0.0), (50, 0.3), (500, -1.0)):
        expected = sorted(
            ((key, cosine(query, v)) for key, v in vectors.items() if cosine(query, v) >= least),
            key=lambda pair: (-pair[1], pair[0]),
        )[:limit]
        got = nearest.nearest_packed(rows, query, limit, least)
        assert got is not None
        assert [k for k, _ in got] == [k for k, _ in expected]  # ties (integer vectors repeat) by id
        assert all(abs(a - b) < 1e-12 for (_, a), (_, b) in zip(got, expected, strict=True))


def test_the_shortlist_keeps_the_nearest_codes_of_the_query_size() -> None:
    query = [1.0] * 16
    rows = [(n, nearest.vector_code([1.0 if i < 16 - n else -1.0 for i in range(16)])) for n in range(17)]
    rows.append((99, nearest.vector_code([1.0] * 8)))  # another length
    assert sorted(nearest.code_shortlist(rows, query, 3)) == [0, 1, 2]
    assert 99 not in nearest.code_shortlist(rows, query, 100)
    assert nearest.shortlist_size(10) == 500 and nearest.shortlist_size(100) == 800
