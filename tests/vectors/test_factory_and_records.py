"""create_embedding_adapter, lazy drivers, the records and the filter rules."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from cogitator_memory.engines.sqlite.vectors import where_clause
from cogitator_memory.errors import InvalidArgumentError
from cogitator_memory.vectors import (
    EmbeddingAdapter,
    EmbeddingFilter,
    InMemoryEmbeddingAdapter,
    QdrantAdapter,
    SQLiteEmbeddingAdapter,
    create_embedding_adapter,
    filter_matches,
)
from cogitator_memory.vectors.matrix import unit_vector
from cogitator_memory.vectors.records import (
    QueryVector,
    check_deletion,
    check_filter,
    check_query_vector,
    check_vector,
    deletion_matches,
)


def test_factory_providers(tmp_path) -> None:
    assert isinstance(create_embedding_adapter({"provider": "memory"}), InMemoryEmbeddingAdapter)
    sqlite = create_embedding_adapter({"provider": "sqlite", "path": str(tmp_path / "x.db")}, dimensions=8)
    assert isinstance(sqlite, SQLiteEmbeddingAdapter) and sqlite.dimensions == 8
    qdrant = create_embedding_adapter(provider="qdrant", url=":memory:", collection="c")
    assert isinstance(qdrant, QdrantAdapter) and qdrant.local
    for store in (sqlite, qdrant):
        assert isinstance(store, EmbeddingAdapter)
    with pytest.raises(InvalidArgumentError, match="provider"):
        create_embedding_adapter({"provider": "pinecone"})
    with pytest.raises(InvalidArgumentError, match="config"):
        create_embedding_adapter({"provider": "memory", "colour": "red"})
    with pytest.raises(InvalidArgumentError, match="dimensions"):
        create_embedding_adapter({"provider": "memory", "dimensions": -3})


def test_capabilities_are_declared() -> None:
    store = InMemoryEmbeddingAdapter()
    assert store.supports("vectors") and store.supports("keyword-search") and not store.supports("branches")


@pytest.mark.parametrize(
    ("module", "cls", "extra", "driver", "kwargs"),
    [
        ("cogitator_memory.engines.qdrant.vectors", "QdrantAdapter", "qdrant", "qdrant_client", 'url=":memory:"'),
        ("cogitator_memory.engines.memory.vectors", "InMemoryEmbeddingAdapter", "vectors", "numpy", ""),
        ("cogitator_memory.engines.sqlite.vectors", "SQLiteEmbeddingAdapter", "vectors", "numpy", 'path=":memory:"'),
    ],
)
def test_missing_driver_names_the_pip_command(module: str, cls: str, extra: str, driver: str, kwargs: str) -> None:
    script = textwrap.dedent(
        f"""
        import asyncio, sys
        import cogitator_memory, cogitator_memory.vectors
        import {module} as store
        assert "{driver}" not in sys.modules, "importing the package must not import the driver"
        sys.modules["{driver}"] = None  # what Python does for a package that is not installed
        adapter = store.{cls}({kwargs})
        result = asyncio.run(adapter.connect())
        print(result.error)
        assert not adapter.connected
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert f'pip install "cogitator-memory[{extra}]"' in done.stdout


def test_scoping_rule() -> None:
    flt = EmbeddingFilter(agent_id="a", thread_id="t")
    assert filter_matches("doc", {}, flt)  # shared
    assert filter_matches("doc", {"agent_id": "a", "thread_id": "t"}, flt)
    assert filter_matches("doc", {"agent_id": None}, flt)  # null is shared too
    assert not filter_matches("doc", {"agent_id": "b"}, flt)
    assert not filter_matches("doc", {"thread_id": "u"}, flt)
    assert filter_matches("doc", {"user_id": "anyone"}, flt)  # no user_id in the filter: no user scoping


def test_metadata_values_compare_by_json_type() -> None:
    flt = check_filter({"metadata": {"n": 1, "flag": True}})
    assert filter_matches("x", {"n": 1, "flag": True}, flt)
    assert not filter_matches("x", {"n": True, "flag": True}, flt)
    assert not filter_matches("x", {"n": 1, "flag": 1}, flt)
    assert not filter_matches("x", {"n": "1", "flag": True}, flt)
    assert not filter_matches("x", {"flag": True}, flt)


def test_deletion_is_exact() -> None:
    flt = check_deletion(None, "a", None, None)
    assert deletion_matches("doc", {"agent_id": "a"}, flt)
    assert not deletion_matches("doc", {}, flt)  # a shared embedding is not the agent's
    with pytest.raises(InvalidArgumentError, match="condition"):
        check_deletion(None, None, None, {})


def test_vector_checks() -> None:
    assert check_vector("v", (1, 2.5), None) == [1.0, 2.5]
    with pytest.raises(InvalidArgumentError, match="3 dimensions, the store holds vectors of 2"):
        check_vector("v", [1, 2, 3], 2)
    with pytest.raises(InvalidArgumentError, match="item 1"):
        check_vector("v", [1.0, float("-inf")], None)
    import numpy as np

    assert check_vector("v", np.array([0.5, 0.25], dtype=np.float32), 2) == [0.5, 0.25]
    with pytest.raises(InvalidArgumentError, match="item 1 is nan"):
        check_vector("v", np.array([0.5, np.nan]), None)
    with pytest.raises(InvalidArgumentError, match="all zeros"):
        check_vector("v", np.zeros(4, dtype=np.float32), None)
    with pytest.raises(InvalidArgumentError, match="4 dimensions, the store holds vectors of 3"):
        check_vector("v", np.ones(4), 3)
    assert check_vector("v", np.array([1, 2]), None) == [1.0, 2.0]  # integer arrays take the slow path
    # A list of floats (numpy's path): a list of its own with the same values, checked alike.
    given = [0.5, -0.0, 1e-300, 3.0]
    checked = check_vector("v", given, 4)
    assert checked == given and checked is not given and type(checked) is list
    given[0] = 9.0
    assert checked[0] == 0.5
    assert check_vector("v", (0.5, 0.25), 2) == [0.5, 0.25]
    with pytest.raises(InvalidArgumentError, match="item 1 is inf"):
        check_vector("v", [1.0, float("inf"), 2.0], None)
    with pytest.raises(InvalidArgumentError, match="all zeros"):
        check_vector("v", [0.0, -0.0], None)
    with pytest.raises(InvalidArgumentError, match="3 dimensions, the store holds vectors of 2"):
        check_vector("v", [1.0, 2.0, 3.0], 2)
    # Anything but floats among them leaves that path: bools and text are refused by name.
    with pytest.raises(InvalidArgumentError, match="item 1 must be a number, got bool"):
        check_vector("v", [1.0, True], None)
    with pytest.raises(InvalidArgumentError, match="item 0 must be a number, got str"):
        check_vector("v", ["1.5", 2.0], None)
    assert check_vector("v", [np.float64(0.5), 1.0], None) == [0.5, 1.0]  # a float subclass: the slow path
    # numpy's scalars, as a list of an array's items holds them; numpy's bool is not a number.
    items = list(np.array([0.5, -1.25, 3.0], dtype=np.float32))
    assert check_vector("v", items, 3) == [0.5, -1.25, 3.0]
    assert all(type(x) is float for x in check_vector("v", items, 3))
    assert check_vector("v", list(np.array([1, 2], dtype=np.int16)), 2) == [1.0, 2.0]
    with pytest.raises(InvalidArgumentError, match="item 1 is nan"):
        check_vector("v", [np.float32(1.0), np.float32("nan")], None)
    with pytest.raises(InvalidArgumentError, match="item 0 must be a number, got bool"):
        check_vector("v", [np.bool_(True), 1.0], None)


_QUERIES = [
    [0.5, -0.0, 1e-300, 3.0],  # a list of floats: numpy's path
    (0.1, 0.2, 0.3, 0.4),
    [1, 2, 3, 4],  # integers: the slow path
    [1.0, 2, 3.5, 4],
]


@pytest.mark.parametrize("given", _QUERIES)
def test_a_query_vector_is_the_checked_vector_with_its_array(given: object) -> None:
    import numpy as np

    for value in (given, np.asarray(given, dtype=np.float32), np.asarray(given, dtype=np.float64)):
        checked = check_vector("v", value, 4)
        query = check_query_vector("v", value, 4)
        assert type(query) is QueryVector
        assert query == checked and list(query) == checked
        if query.array is not None:  # what numpy checked: the same values, in float64
            assert query.array.dtype == np.float64
            assert query.array.tolist() == checked
        # A search with the query scores as a search with the plain list does, bit for bit.
        assert unit_vector(query).tobytes() == unit_vector(checked).tobytes()
    assert check_query_vector("v", [1, 2, 3, 4], 4).array is None  # integers: no array made
    with pytest.raises(InvalidArgumentError, match="3 dimensions, the store holds vectors of 4"):
        check_query_vector("v", [1.0, 2.0, 3.0], 4)
    with pytest.raises(InvalidArgumentError, match="item 1 is nan"):
        check_query_vector("v", np.array([0.5, np.nan]), None)
    with pytest.raises(InvalidArgumentError, match="all zeros"):
        check_query_vector("v", [0.0, 0.0], None)


def test_sqlite_where_clause() -> None:
    sql, args = where_clause(source_type="fact", scope={"agent_id": "a"}, exact={"page": 3, "ok": True}, alias="e")
    assert sql.startswith("e.source_type = ? AND (e.agent_id IS NULL OR e.agent_id = ?)")
    assert args == ["fact", "a", "page", "integer", 3, "ok", "true", 1]
    assert where_clause(source_type=None, scope={}, exact={}) == ("1", [])


def test_embeddings_print_the_size_of_their_vector_not_its_values() -> None:
    from datetime import UTC, datetime

    from cogitator_memory.vectors import Embedding, ScoredEmbedding

    hit = ScoredEmbedding(
        id="emb_1",
        source_id="s",
        source_type="doc",
        content="hello",
        vector=[0.123456] * 384,
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
        score=0.5,
    )
    for text in (repr(hit), str(hit)):
        assert "vector=<384 floats>" in text and "0.123456" not in text
        assert "content='hello'" in text and "score=0.5" in text
    bare = hit.model_copy(update={"vector": []})
    assert "vector=<no vector>" in repr(bare)
    stored = Embedding.model_validate(hit.model_dump(exclude={"score"}))
    assert repr(stored).startswith("Embedding(id='emb_1'") and "<384 floats>" in repr(stored)
    assert hit.vector[0] == 0.123456  # only the printing changed
