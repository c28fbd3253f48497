"""A graph node's vector on PostgreSQL is kept packed (``graph_nodes.vector``), never in its JSON
body: nodes read back as written through every read, and the nodes written before (their vector
in the body, packed or not: before ``m014_graph_node_vectors``, and between it and
``m016_graph_node_bodies_without_vectors``) read back the same before and after ``m016``, which
packs what was not and takes the vectors out of the bodies."""

from __future__ import annotations

import json
import random
import struct
from collections.abc import AsyncIterator, Sequence
from typing import Any

import psycopg
import pytest

from cogitator_memory import PostgresAdapter, unwrap
from cogitator_memory.engines.postgres.schema import MIGRATIONS, MIGRATIONS_TABLE, SCHEMA_VERSION, migrate
from cogitator_memory.engines.postgres.sql import quote_ident
from cogitator_memory.graph.checks import check_node
from cogitator_memory.graph.nearest import pack_vector, vector_code
from cogitator_memory.graph.records import GraphNode

AGENT = "a"
QUOTE = [{"quote": "hi", "entry_id": "e1", "thread_id": "t"}]


def _f32(values: Sequence[float]) -> list[float]:
    """``values`` rounded to float32 (what embedding models give): packed 4 bytes a value."""
    return list(struct.unpack(f"<{len(values)}f", struct.pack(f"<{len(values)}f", *values)))


def _vectors(seed: int, size: int = 16) -> tuple[list[float], list[float]]:
    """A float32 vector and a float64 one (not float32 exactly: packed 8 bytes a value)."""
    rng = random.Random(seed)
    return _f32([rng.gauss(0, 1) for _ in range(size)]), [rng.gauss(0, 1) for _ in range(size)]


def _spec(node_id: str, embedding: list[float] | None = None, **extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"id": node_id, "name": f"Node {node_id}", "type": "concept", "agent_id": AGENT}
    spec.update(extra, evidence=QUOTE)
    if embedding is not None:
        spec["embedding"] = embedding
    return spec


async def _add_star(store: PostgresAdapter, specs: list[dict[str, Any]]) -> dict[str, GraphNode]:
    """The nodes of ``specs`` and a hub joined to each, as stored (by id)."""
    added = unwrap(await store.add_nodes([{"id": "hub", "name": "Hub", "type": "place", "agent_id": AGENT}, *specs]))
    edges = [
        {"id": f"k-{s['id']}", "source_id": "hub", "target_id": s["id"], "type": "knows", "agent_id": AGENT}
        for s in specs
    ]
    unwrap(await store.add_edges(edges))
    return {n.id: n for n in added}


async def _reads_back(store: PostgresAdapter, expected: dict[str, GraphNode]) -> None:
    """Every read of a node gives it as ``expected`` (the hub's and every other node of the agent)."""
    for node_id, node in expected.items():
        assert unwrap(await store.get_node(node_id)) == node, node_id
    assert {n.id: n for n in unwrap(await store.query_nodes({"agent_id": AGENT}))} == expected
    texted = {n.id: n for n in unwrap(await store.query_nodes({"agent_id": AGENT, "text": "node"}))}
    assert texted == {i: n for i, n in expected.items() if i != "hub"}
    walked = unwrap(await store.traverse("hub", max_depth=1))
    assert {n.id: n for n in walked.nodes} == expected
    neighbours = unwrap(await store.get_neighbors("hub"))
    assert {n.id: n for n in neighbours.nodes} == {i: n for i, n in expected.items() if i != "hub"}
    ends = sorted(i for i in expected if i != "hub")
    path = unwrap(await store.find_shortest_path(ends[0], ends[-1]))
    assert path is not None and path.nodes == [expected[ends[0]], expected["hub"], expected[ends[-1]]]
    quoted, _ = unwrap(await store.find_by_evidence(AGENT, ["e1"]))
    assert {n.id: n for n in quoted} == {i: n for i, n in expected.items() if i != "hub"}


async def _found_by_meaning(store: PostgresAdapter, expected: dict[str, GraphNode]) -> None:
    """Each node with a vector (of the usual size) is the nearest to its own vector, read back whole."""
    for node in expected.values():
        if node.embedding:
            found = unwrap(await store.search_nodes_semantic(AGENT, node.embedding, limit=1, threshold=0.5))
            assert [n for n, _ in found] == [node], node.id
            assert found[0][1] == pytest.approx(1.0)


def _rows(pg_url: str, schema: str) -> dict[str, tuple[dict[str, Any], bytes | None, bytes | None, str]]:
    """Each node's row as stored: its body (parsed, and as text), packed vector and sign code."""
    with psycopg.connect(pg_url, autocommit=True) as conn:
        rows = conn.execute(f"SELECT id, body, vector, code FROM {quote_ident(schema)}.graph_nodes").fetchall()
    return {i: (json.loads(body), vector, code, body) for i, body, vector, code in rows}


def _packed_as_written(pg_url: str, schema: str, expected: dict[str, GraphNode], rows: Any = None) -> None:
    """The row of every node of ``expected`` holds its vector packed (empty for none), its sign
    code, and a body without the vector: the body a write of the node gives."""
    rows = _rows(pg_url, schema) if rows is None else rows
    assert set(expected) <= set(rows)
    for node_id, node in expected.items():
        body, vector, code, text = rows[node_id]
        assert "embedding" not in body, node_id
        assert text == node.model_dump_json(exclude_none=True, exclude={"embedding"}), node_id
        if node.embedding is None:
            assert (vector, code) == (b"", None), node_id
        else:
            assert (vector, code) == (pack_vector(node.embedding), vector_code(node.embedding)), node_id


@pytest.fixture
async def store(pg_url: str, schema: str) -> AsyncIterator[PostgresAdapter]:
    async with PostgresAdapter(connection_string=pg_url, schema=schema, pool_size=3) as memory:
        yield memory


async def test_a_node_with_a_vector_reads_back_as_written_and_its_body_holds_none(
    store: PostgresAdapter, pg_url: str, schema: str
) -> None:
    single, double = _vectors(1)
    rng = random.Random(2)
    wide = _f32([rng.uniform(-1, 1) for _ in range(384)])
    expected = await _add_star(store, [_spec("f32", single), _spec("f64", double), _spec("wide", wide)])
    assert expected["f32"].embedding == single and expected["f64"].embedding == double
    await _reads_back(store, expected)
    await _found_by_meaning(store, expected)
    _packed_as_written(pg_url, schema, expected)
    assert len(_rows(pg_url, schema)["wide"][1] or b"") == 1 + 4 * 384  # float32: 4 bytes a value
    assert len(_rows(pg_url, schema)["f64"][1] or b"") == 1 + 8 * 16

    # a new vector replaces the old one, in the column alone
    other = _vectors(3)[0]
    expected["f32"] = unwrap(await store.update_node("f32", {"embedding": other}))
    assert expected["f32"].embedding == other
    await _reads_back(store, expected)
    await _found_by_meaning(store, expected)
    _packed_as_written(pg_url, schema, expected)


async def test_a_node_without_a_vector_reads_back_without_one(store: PostgresAdapter, pg_url: str, schema: str) -> None:
    single, _ = _vectors(4)
    expected = await _add_star(store, [_spec("none"), _spec("empty", []), _spec("dropped", single)])
    # a vector taken away leaves none, in the column and in the body
    expected["dropped"] = unwrap(await store.update_node("dropped", {"embedding": None}))
    assert expected["none"].embedding is None and expected["dropped"].embedding is None
    assert expected["empty"].embedding == []
    await _reads_back(store, expected)
    _packed_as_written(pg_url, schema, expected)
    assert _rows(pg_url, schema)["empty"][1] == b"\x04"  # an empty vector, not none
    assert unwrap(await store.search_nodes_semantic(AGENT, single, limit=5, threshold=-1.0)) == []


async def test_nodes_written_before_m016_read_back_the_same_before_and_after_it(
    store: PostgresAdapter, pg_url: str, schema: str
) -> None:
    # Rows as the engine wrote them before m016 (the vector in the body, the whole node as JSON):
    # before m014 the columns were NULL; from m014 the vector was also packed in them
    single, double = _vectors(5)
    late_single, late_double = _vectors(6)
    expected = await _add_star(
        store,
        [
            _spec("old-f32", single),
            _spec("old-f64", double),
            _spec("old-none"),
            _spec("old-empty", []),
            _spec("late-f32", late_single),
            _spec("late-f64", late_double),
            _spec("late-none"),
        ],
    )
    t = quote_ident(schema)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        for node_id, node in expected.items():
            if node_id.startswith("old-"):
                conn.execute(
                    f"UPDATE {t}.graph_nodes SET body = %s, vector = NULL, code = NULL WHERE id = %s",
                    (node.dump_json(), node_id),
                )
            elif node_id.startswith("late-"):
                conn.execute(f"UPDATE {t}.graph_nodes SET body = %s WHERE id = %s", (node.dump_json(), node_id))
        # the schema as m015 left it
        conn.execute(f"CREATE INDEX graph_nodes_unpacked ON {t}.graph_nodes (agent_id) WHERE vector IS NULL")
        conn.execute(f"DELETE FROM {t}.{MIGRATIONS_TABLE} WHERE version = 16")
    rows = _rows(pg_url, schema)
    assert rows["old-f64"][0]["embedding"] == double and rows["old-f64"][1] is None
    assert rows["late-f64"][0]["embedding"] == late_double and rows["late-f64"][1] == pack_vector(late_double)
    await _reads_back(store, expected)  # the vectors from the bodies, or from the columns

    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        assert await migrate(conn, schema) == (15, SCHEMA_VERSION)
    _packed_as_written(pg_url, schema, expected)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert conn.execute("SELECT to_regclass(%s)", (f"{t}.graph_nodes_unpacked",)).fetchone() == (None,)
    await _reads_back(store, expected)
    await _found_by_meaning(store, expected)


async def test_a_schema_upgraded_from_before_m014_packs_its_nodes_exactly(pg_url: str, schema: str) -> None:
    # Nodes written into the schema of m013 (no vector columns: each node's body and text key
    # alone), and one after m014 (also packed): connecting upgrades the schema to the newest,
    # and every vector is packed as a write packs it, whatever its values
    flt_max = struct.unpack("<f", b"\xff\xff\x7f\x7f")[0]
    tiny = 2.0**-140  # a float32 subnormal
    single, double = _vectors(7, size=384)
    nodes = {
        "old-f32": check_node("n", _spec("old-f32", single)),
        "old-f64": check_node("n", _spec("old-f64", double)),
        "old-edges32": check_node("n", _spec("old-edges32", [-0.0, 0.0, tiny, -tiny, flt_max, 0.5, 1.0, -2.0])),
        "old-edges64": check_node("n", _spec("old-edges64", [-0.0, 1e-300, 1e38, tiny / 3, 0.1, 1.0])),
        # past float32's range: packed as float64
        "old-huge": check_node("n", _spec("old-huge", [1e300, 1.0])),
        "old-none": check_node("n", _spec("old-none")),
        "old-empty": check_node("n", _spec("old-empty", [])),
        "late": check_node("n", _spec("late", _vectors(8, size=384)[1])),
    }
    t = quote_ident(schema)
    insert = (
        f"INSERT INTO {t}.graph_nodes (id, agent_id, scope_key, type, confidence, origin, body, text_key)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
    )

    def row(node: GraphNode) -> tuple[Any, ...]:
        return (node.id, node.agent_id, node.scope_key, node.type, node.confidence, node.origin, node.dump_json())

    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        await migrate(conn, schema, MIGRATIONS[:13])
        for node in nodes.values():
            if node.id.startswith("old-"):
                await conn.execute(insert, (*row(node), None))
        await migrate(conn, schema, MIGRATIONS[:15])
        late = nodes["late"]
        assert late.embedding is not None
        await conn.execute(
            insert.replace(", text_key)", ", text_key, vector, code)").replace("%s)", "%s, %s, %s)"),
            (*row(late), None, pack_vector(late.embedding), vector_code(late.embedding)),
        )
    async with PostgresAdapter(url=pg_url, schema=schema, pool_size=2) as store:
        for node_id, node in nodes.items():
            assert unwrap(await store.get_node(node_id)) == node, node_id
        assert {n.id: n for n in unwrap(await store.query_nodes({"agent_id": AGENT}))} == nodes
        await _found_by_meaning(store, {i: nodes[i] for i in ("old-f32", "old-f64", "late")})
    rows = _rows(pg_url, schema)
    _packed_as_written(pg_url, schema, nodes, rows)
    assert (rows["old-edges32"][1] or b"")[:1] == b"\x04" and (rows["old-edges64"][1] or b"")[:1] == b"\x08"
    assert (rows["old-huge"][1] or b"")[:1] == b"\x08"
