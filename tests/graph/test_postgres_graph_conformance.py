"""The graph conformance suite on PostgresAdapter (a fresh schema per test), and the plan of a walk."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime

import pytest

from cogitator_memory.engines.postgres.adapter import PostgresAdapter
from cogitator_memory.testing import postgres_database
from cogitator_memory.testing.graph import GraphConformanceCase, graph_adapter_conformance_cases

T0 = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    """A database of the module's own on the test server (``COGMEM_TEST_POSTGRES_URL``), dropped at the end."""
    with postgres_database("cogmem_graph") as url:
        yield url


@pytest.fixture
def schema(pg_url: str) -> Iterator[str]:
    """A schema name no other test uses, dropped with everything in it after the test."""
    import psycopg

    name = f"cogmem_g_{secrets.token_hex(6)}"
    yield name
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


@pytest.fixture
async def store(pg_url: str, schema: str) -> AsyncIterator[PostgresAdapter]:
    async with PostgresAdapter(connection_string=pg_url, schema=schema, pool_size=5, dimensions=8) as memory:
        yield memory


@pytest.mark.parametrize("case", graph_adapter_conformance_cases(), ids=str)
async def test_graph_conformance(case: GraphConformanceCase, store: PostgresAdapter) -> None:
    await case.run(store)


def test_the_postgres_store_keeps_a_graph() -> None:
    assert PostgresAdapter(url="postgresql://x/y").supports("graph")


async def test_the_text_filter_reads_the_trigram_index(store: PostgresAdapter, pg_url: str, schema: str) -> None:
    import psycopg

    from cogitator_memory import unwrap
    from cogitator_memory.engines.postgres.graph import text_pattern

    nodes = [{"id": f"n{i}", "name": f"Node {i}", "type": "concept", "agent_id": "a"} for i in range(3)]
    unwrap(await store.add_nodes([*nodes, {"id": "l", "name": "Straße", "type": "location", "agent_id": "a"}]))
    t = f'"{schema}"'
    with psycopg.connect(pg_url, autocommit=True) as conn:
        keys = dict(conn.execute(f"SELECT id, text_key FROM {t}.graph_nodes").fetchall())
        assert keys["l"] == "strasse " and keys["n1"] == "node 1 "
        # a node written before the migration has no key: it is read by every text filter
        conn.execute(f"UPDATE {t}.graph_nodes SET text_key = NULL WHERE id = 'n2'")
        with conn.transaction():
            conn.execute("SET LOCAL enable_seqscan = off")
            plan = "\n".join(
                r[0]
                for r in conn.execute(
                    f"EXPLAIN SELECT body FROM {t}.graph_nodes WHERE text_key LIKE %s",
                    (text_pattern("STRASSE"),),
                )
            )
    assert "graph_nodes_by_text" in plan, plan
    assert text_pattern("ab") is None and text_pattern("a_%\\") == "%a\\_\\%\\\\%"

    async def ids(text: str) -> list[str]:
        return sorted(n.id for n in unwrap(await store.query_nodes({"agent_id": "a", "text": text})))

    assert await ids("STRASSE") == ["l"]
    assert await ids("node 2") == ["n2"]
    assert await ids("node") == ["n0", "n1", "n2"]


async def test_the_evidence_index_is_filled_from_the_records_written_before_it(
    store: PostgresAdapter, pg_url: str, schema: str
) -> None:
    import psycopg

    from cogitator_memory import unwrap
    from cogitator_memory.engines.postgres.schema import MIGRATIONS_TABLE

    quote = [{"quote": "hi", "entry_id": "e1", "thread_id": "t"}]
    unwrap(
        await store.add_nodes(
            [
                {"id": "n0", "name": "A", "type": "person", "agent_id": "a", "evidence": quote},
                {"id": "n1", "name": "B", "type": "person", "agent_id": "a"},
            ]
        )
    )
    edge = {"id": "k", "source_id": "n0", "target_id": "n1", "type": "knows", "agent_id": "a", "evidence": quote}
    unwrap(await store.add_edge(edge))
    await store.disconnect()
    t = f'"{schema}"'
    with psycopg.connect(pg_url, autocommit=True) as conn:  # back to the schema before the index
        conn.execute(f"DROP TABLE {t}.graph_evidence")
        conn.execute(f"DELETE FROM {t}.{MIGRATIONS_TABLE} WHERE version >= 8")
    async with PostgresAdapter(connection_string=pg_url, schema=schema, pool_size=2, dimensions=8) as again:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            rows = sorted(conn.execute(f"SELECT * FROM {t}.graph_evidence").fetchall())
        assert rows == [("a", "e1", False, "n0"), ("a", "e1", True, "k")]
        nodes, edges = unwrap(await again.find_by_evidence("a", ["e1"]))
        assert [n.id for n in nodes] == ["n0"] and [e.id for e in edges] == ["k"]


async def test_a_search_by_meaning_reads_the_packed_vectors_and_ranks_as_every_node_read(
    store: PostgresAdapter, pg_url: str, schema: str
) -> None:
    # PostgreSQL reads each node's packed vector (its own column) and reads whole only the nodes
    # kept: the same nodes, order and cosines as reading every node and scoring each (the base
    # rule), for float32 and float64 vectors, a zero vector, another size, types and scopes (nodes
    # written before the column: tests/stores/test_postgres_node_vectors.py)
    import random

    import psycopg

    from cogitator_memory import unwrap
    from cogitator_memory.graph.base import GraphStoreMixin
    from cogitator_memory.graph.checks import check_node_filter
    from cogitator_memory.graph.nearest import pack_vector, vector_code

    rng = random.Random(5)
    nodes = []
    for i in range(300):
        vector = [rng.uniform(-1, 1) for _ in range(8)]
        if i % 7 == 0:
            vector = [float(f"{v:.3f}") for v in vector]  # not float32 exactly: packed as float64
        nodes.append({"id": f"n{i:03d}", "name": f"N{i}", "type": "fact" if i % 3 else "place", "embedding": vector})
    nodes[5]["embedding"] = list(nodes[4]["embedding"])  # a tie
    nodes[6]["embedding"] = [0.0] * 8
    nodes[9]["embedding"] = [1.0, 0.5]  # another size: never scored
    nodes[10].pop("embedding")  # none
    scoped = [{**n, "scope": {"agent_id": "a", "user_id": "ana"}} for n in nodes]
    scoped.append(
        {
            "id": "z",
            "name": "Z",
            "type": "fact",
            "embedding": nodes[4]["embedding"],
            "scope": {"agent_id": "a", "user_id": "bo"},
        }
    )
    unwrap(await store.add_nodes(scoped))
    t = f'"{schema}"'
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert conn.execute(f"SELECT vector FROM {t}.graph_nodes WHERE id = 'n004'").fetchone()[0] == pack_vector(
            nodes[4]["embedding"]
        )
    query = list(nodes[4]["embedding"])
    ana = {"agent_id": "a", "user_id": "ana"}
    for limit, threshold, types in ((5, -1.0, None), (40, 0.1, None), (3, -1.0, ["fact"]), (2, 0.0, None)):
        found = unwrap(
            await store.search_nodes_semantic("a", query, limit=limit, threshold=threshold, types=types, visible_to=ana)
        )
        flt = check_node_filter({"agent_id": "a", "types": types, "visible_to": ana})
        every = await GraphStoreMixin._nearest_nodes(store, flt, query, limit, threshold)
        assert [n.id for n, _ in found] == [n.id for n, _ in every], (limit, threshold, types)
        assert all(abs(a - b) < 1e-12 for (_, a), (_, b) in zip(found, every, strict=True))
        assert "z" not in {n.id for n, _ in found}
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert conn.execute(f"SELECT count(*) FROM {t}.graph_nodes WHERE vector IS NULL").fetchone()[0] == 0
        assert conn.execute(f"SELECT code FROM {t}.graph_nodes WHERE id = 'n007'").fetchone()[0] == vector_code(
            nodes[7]["embedding"]
        )
        assert conn.execute(f"SELECT vector FROM {t}.graph_nodes WHERE id = 'n010'").fetchone()[0] == b""
        assert conn.execute(f"SELECT vector FROM {t}.graph_nodes WHERE id = 'n007'").fetchone()[0] == pack_vector(
            nodes[7]["embedding"]
        )
    top = unwrap(await store.search_nodes_semantic("a", query, limit=2, visible_to=ana))
    assert [n.id for n, _ in top] == ["n004", "n005"] and top[0][0].embedding == nodes[4]["embedding"]


async def test_a_search_by_meaning_over_many_nodes_scores_the_codes_shortlist(store: PostgresAdapter) -> None:
    # Past EXACT_UP_TO nodes with vectors, the codes are read and only the shortlist nearest by
    # sign code is scored exactly: a node's own vector finds it first, and the best ten are
    # those of every node read
    import random

    from many_vectors import add_clustered_nodes, check_the_best_ten

    rng = random.Random(3)
    vectors = await add_clustered_nodes(store, rng)
    await check_the_best_ten(store, vectors, rng)
