"""The graph conformance suite on SQLiteAdapter (a file and ':memory:'), and what only SQLite shows:
a walk is one recursive query over the adjacency index, a traversal that and one read of the bodies."""

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from cogitator_memory import SQLiteAdapter, unwrap
from cogitator_memory.engines.sqlite.graph import BY_EVIDENCE_SQL, NEIGHBOURHOOD_SQL, WALK_SQL, text_match, walk_filter
from cogitator_memory.engines.sqlite.schema import migrate
from cogitator_memory.graph.records import Walk
from cogitator_memory.graph.rules import node_haystack
from cogitator_memory.testing.graph import GraphConformanceCase, graph_adapter_conformance_cases


@pytest.fixture(params=["file", "memory"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SQLiteAdapter]:
    path = str(tmp_path / "memory.db") if request.param == "file" else ":memory:"
    async with SQLiteAdapter(path=path) as memory:
        yield memory


@pytest.mark.parametrize("case", graph_adapter_conformance_cases(), ids=str)
async def test_graph_conformance(case: GraphConformanceCase, store: SQLiteAdapter) -> None:
    await case.run(store)


async def test_a_walk_reads_the_adjacency_index(store: SQLiteAdapter) -> None:
    unwrap(
        await store.add_nodes([{"id": f"n{i}", "name": f"N{i}", "type": "concept", "agent_id": "a"} for i in range(3)])
    )
    unwrap(await store.add_edge({"id": "e", "source_id": "n0", "target_id": "n1", "type": "knows", "agent_id": "a"}))
    follow, params = walk_filter(Walk(start_ids=("n0",), direction="outgoing"))
    plan = store.connection.execute(
        f"EXPLAIN QUERY PLAN {WALK_SQL.format(start='', follow=follow)}", ['["n0"]', 2, *params, 50]
    )
    text = "\n".join(str(row[-1]) for row in plan)
    assert "SCAN a" not in text and "SCAN b" not in text, text
    assert "SEARCH a USING PRIMARY KEY" in text and "SEARCH b USING PRIMARY KEY (node_id=?)" in text, text


async def test_a_traversal_is_two_queries_over_the_indexes(store: SQLiteAdapter) -> None:
    unwrap(
        await store.add_nodes([{"id": f"n{i}", "name": f"N{i}", "type": "concept", "agent_id": "a"} for i in range(4)])
    )
    edges = [("e1", "n0", "n1"), ("e2", "n1", "n2"), ("e3", "n2", "n3")]
    unwrap(
        await store.add_edges(
            [{"id": e, "source_id": s, "target_id": t, "type": "knows", "agent_id": "a"} for e, s, t in edges]
        )
    )
    statements: list[str] = []
    store.connection.set_trace_callback(statements.append)
    try:
        found = unwrap(await store.traverse("n1", max_depth=1))
    finally:
        store.connection.set_trace_callback(None)
    assert [n.id for n in found.nodes] == ["n1", "n0", "n2"] and [e.id for e in found.edges] == ["e1", "e2"]
    assert len(statements) == 2 and statements[1].startswith(NEIGHBOURHOOD_SQL[:30]), statements
    follow, params = walk_filter(Walk(start_ids=("n0",)))
    walk = WALK_SQL.format(start=" WHERE EXISTS (SELECT 1 FROM graph_nodes AS n WHERE n.id = value)", follow=follow)
    bodies = [str(row[-1]) for row in store.connection.execute(f"EXPLAIN QUERY PLAN {NEIGHBOURHOOD_SQL}", ["[]", "[]"])]
    plan = [str(row[-1]) for row in store.connection.execute(f"EXPLAIN QUERY PLAN {walk}", ['["n0"]', 2, *params, 50])]
    scans = [step for step in plan + bodies if step.startswith("SCAN ") and "json_each" not in step]
    assert sorted(scans) == ["SCAN CONSTANT ROW", "SCAN w", "SCAN w"], plan + bodies
    assert "SEARCH b USING PRIMARY KEY (node_id=?)" in plan, plan
    assert "SEARCH n USING INDEX sqlite_autoindex_graph_nodes_1 (id=?)" in bodies, bodies
    assert "SEARCH g USING INDEX sqlite_autoindex_graph_edges_1 (id=?)" in bodies, bodies


async def test_a_traversal_reads_many_bodies_in_chunks(store: SQLiteAdapter) -> None:
    leaves = [f"n{i:04d}" for i in range(1, 1201)]
    unwrap(await store.add_nodes([{"id": n, "name": n, "type": "concept", "agent_id": "a"} for n in ["hub", *leaves]]))
    unwrap(
        await store.add_edges(
            [{"id": f"e{n}", "source_id": "hub", "target_id": n, "type": "knows", "agent_id": "a"} for n in leaves]
        )
    )
    statements: list[str] = []
    store.connection.set_trace_callback(statements.append)
    try:
        found = unwrap(await store.traverse("hub", max_depth=1, fan_out=1000, max_nodes=1100))
    finally:
        store.connection.set_trace_callback(None)
    assert len(statements) == 4, statements  # the walk, then 1,001 nodes and 1,000 edges, 500 at a time
    # the hub's first 1,000 edges (all as confident: by id) and the leaves they reach
    assert [n.id for n in found.nodes] == ["hub", *leaves[:1000]]
    assert [e.id for e in found.edges] == [f"e{n}" for n in leaves[:1000]]
    assert found.depths == {"hub": 0, **dict.fromkeys(leaves[:1000], 1)}


async def test_the_text_filter_reads_the_trigram_index(store: SQLiteAdapter) -> None:
    unwrap(await store.add_nodes([{"id": "n0", "name": "Lisbon", "type": "location", "agent_id": "a"}]))
    sql = (
        "SELECT i.node_id FROM graph_node_text AS f JOIN graph_node_text_ids AS i"
        " ON i.text_rowid = f.rowid WHERE f.hay MATCH ?"
    )
    assert [r[0] for r in store.connection.execute(sql, [text_match("ISB") or ""])] == ["n0"]
    assert text_match("is") is None  # under three characters: every node of the scope is read
    found = unwrap(await store.query_nodes({"agent_id": "a", "text": "isbo"}))
    assert [n.id for n in found] == ["n0"]


async def test_the_text_index_is_filled_from_the_nodes_written_before_it(tmp_path: Path) -> None:
    path = str(tmp_path / "old.db")
    async with SQLiteAdapter(path=path) as memory:
        node = unwrap(
            await memory.add_node(
                {"id": "n0", "name": "Lisbon", "aliases": ["Lisboa"], "type": "location", "agent_id": "a"}
            )
        )
    db = sqlite3.connect(path, isolation_level=None)  # back to the schema before the index
    for statement in (
        "DROP TRIGGER graph_node_text_gone",
        "DROP TABLE graph_node_text",
        "DROP TABLE graph_node_text_ids",
    ):
        db.execute(statement)
    db.execute("DELETE FROM cogitator_migrations WHERE version >= 9")
    db.execute("PRAGMA user_version = 8")
    assert migrate(db) == 8
    rows = db.execute(
        "SELECT i.node_id, f.hay FROM graph_node_text AS f JOIN graph_node_text_ids AS i ON i.text_rowid = f.rowid"
    )
    assert list(rows) == [("n0", node_haystack(node))]
    db.execute("DELETE FROM graph_nodes WHERE id = 'n0'")
    assert db.execute("SELECT count(*) FROM graph_node_text").fetchone()[0] == 0
    assert db.execute("SELECT count(*) FROM graph_node_text_ids").fetchone()[0] == 0
    db.close()


async def test_the_evidence_index_is_filled_from_the_records_written_before_it(tmp_path: Path) -> None:
    path = str(tmp_path / "old.db")
    quote = [{"quote": "hi", "entry_id": "e1", "thread_id": "t"}]
    async with SQLiteAdapter(path=path) as memory:
        unwrap(
            await memory.add_nodes(
                [
                    {"id": "n0", "name": "A", "type": "person", "agent_id": "a", "evidence": quote},
                    {"id": "n1", "name": "B", "type": "person", "agent_id": "a"},
                ]
            )
        )
        unwrap(
            await memory.add_edge(
                {"id": "k", "source_id": "n0", "target_id": "n1", "type": "knows", "agent_id": "a", "evidence": quote}
            )
        )
    db = sqlite3.connect(path, isolation_level=None)  # back to the schema before the index
    db.execute("DROP TABLE graph_evidence")
    db.execute("DELETE FROM cogitator_migrations WHERE version >= 10")
    db.execute("PRAGMA user_version = 9")
    assert migrate(db) == 9
    assert sorted(db.execute("SELECT * FROM graph_evidence")) == [("e1", 0, "n0"), ("e1", 1, "k")]
    db.close()
    async with SQLiteAdapter(path=path) as memory:
        nodes, edges = unwrap(await memory.find_by_evidence("a", ["e1"]))
        assert [n.id for n in nodes] == ["n0"] and [e.id for e in edges] == ["k"]
        for table in ("graph_nodes", "graph_edges"):
            plan = memory.connection.execute(
                f"EXPLAIN QUERY PLAN {BY_EVIDENCE_SQL.format(table=table)}", ["a", 0, '["e1"]']
            )
            text = "\n".join(str(r[-1]) for r in plan)
            assert "SCAN" not in text.replace("SCAN json_each", "") and "by_agent" not in text, text
        unwrap(await memory.delete_nodes(["n0"]))
        assert memory.connection.execute("SELECT count(*) FROM graph_evidence").fetchone()[0] == 0


async def test_a_search_by_meaning_reads_the_vectors_alone_and_ranks_as_every_node_read(store: SQLiteAdapter) -> None:
    # SQLite scores the packed vectors in one matrix product and reads only the nodes kept: the
    # same nodes, order (ties by id) and cosines as reading every node of the query and scoring
    # each (the base rule), for float32 and float64 vectors, a zero vector, vectors of another
    # size, ties at the limit, a threshold, types and another user's nodes
    import random

    from cogitator_memory.graph.base import GraphStoreMixin
    from cogitator_memory.graph.checks import check_node_filter

    rng = random.Random(7)
    nodes = []
    for i in range(60):
        vector = [rng.uniform(-1, 1) for _ in range(8)]
        if i % 7 == 0:
            vector = [float(f"{v:.3f}") for v in vector]  # not float32 exactly: kept as float64
        nodes.append({"id": f"n{i:02d}", "name": f"N{i}", "type": "fact" if i % 3 else "place", "embedding": vector})
    nodes[5]["embedding"] = list(nodes[4]["embedding"])  # a tie
    nodes[6]["embedding"] = [0.0] * 8
    nodes[9]["embedding"] = [1.0, 0.5]  # another size: never scored
    nodes.append(
        {"id": "z", "name": "Z", "type": "fact", "embedding": nodes[4]["embedding"], "scope": {"user_id": "bo"}}
    )
    unwrap(
        await store.add_nodes(
            [
                {
                    **{k: v for k, v in n.items() if k != "scope"},
                    "scope": {"agent_id": "a", **n.get("scope", {"user_id": "ana"})},
                }
                for n in nodes
            ]
        )
    )
    query = list(nodes[4]["embedding"])
    for limit, threshold, types in (
        (5, -1.0, None),
        (40, 0.1, None),
        (3, -1.0, ["fact"]),
        (2, 0.0, None),
        (100, -1.0, None),
    ):
        found = unwrap(
            await store.search_nodes_semantic(
                "a",
                query,
                limit=limit,
                threshold=threshold,
                types=types,
                visible_to={"agent_id": "a", "user_id": "ana"},
            )
        )
        flt = check_node_filter({"agent_id": "a", "types": types, "visible_to": {"agent_id": "a", "user_id": "ana"}})
        every = await GraphStoreMixin._nearest_nodes(store, flt, query, limit, threshold)
        assert [n.id for n, _ in found] == [n.id for n, _ in every], (limit, threshold, types)
        assert all(abs(a - b) < 1e-12 for (_, a), (_, b) in zip(found, every, strict=True))
        ids = [n.id for n, _ in found]
        assert "z" not in ids and "n09" not in ids
    top = unwrap(await store.search_nodes_semantic("a", query, limit=2, visible_to={"agent_id": "a", "user_id": "ana"}))
    assert [n.id for n, _ in top] == ["n04", "n05"] and top[0][0].embedding == nodes[4]["embedding"]


async def test_a_search_by_meaning_over_many_float32_vectors_ranks_as_every_node_read(store: SQLiteAdapter) -> None:
    # Over many float32 vectors SQLite ranks them roughly in float32 and scores exactly (float64)
    # only those the rough score cannot rule out: still the nodes, order and cosines of the base
    # rule, with near ties far under float32's precision (vectors that differ by 1e-6)
    import random
    import struct

    from cogitator_memory.graph.base import GraphStoreMixin
    from cogitator_memory.graph.checks import check_node_filter

    def f32(values: list[float]) -> list[float]:
        return list(struct.unpack(f"<{len(values)}f", struct.pack(f"<{len(values)}f", *values)))

    rng = random.Random(11)
    base = [rng.gauss(0, 1) for _ in range(64)]
    vectors = [f32([rng.gauss(0, 1) for _ in range(64)]) for _ in range(1_500)]
    vectors += [f32([x + rng.gauss(0, 1e-6) for x in base]) for _ in range(300)]  # near ties
    unwrap(
        await store.add_nodes(
            [
                {"id": f"m{i:04d}", "name": f"M{i}", "type": "fact", "embedding": v, "scope": {"agent_id": "a"}}
                for i, v in enumerate(vectors)
            ]
        )
    )
    flt = check_node_filter({"agent_id": "a", "visible_to": {"agent_id": "a"}})
    for query in (base, vectors[3], f32([-x for x in base])):
        for limit, threshold in ((1, -1.0), (10, -1.0), (50, 0.2), (400, -1.0), (10, 0.999999)):
            found = unwrap(
                await store.search_nodes_semantic(
                    "a", query, limit=limit, threshold=threshold, visible_to={"agent_id": "a"}
                )
            )
            every = await GraphStoreMixin._nearest_nodes(store, flt, query, limit, threshold)
            assert [n.id for n, _ in found] == [n.id for n, _ in every], (limit, threshold)
            assert all(abs(a - b) < 1e-12 for (_, a), (_, b) in zip(found, every, strict=True))


async def test_a_search_by_meaning_over_many_nodes_scores_the_codes_shortlist(store: SQLiteAdapter) -> None:
    # Past EXACT_UP_TO nodes with vectors, the codes are read from their index and only the
    # shortlist nearest by sign code is scored exactly: a node's own vector finds it first, and
    # the best ten are those of every node read (real-like vectors: clusters, as topics make)
    import random

    from many_vectors import add_clustered_nodes, check_the_best_ten

    rng = random.Random(3)
    vectors = await add_clustered_nodes(store, rng)
    plan = " ".join(
        str(row[3])
        for row in store.connection.execute(
            "EXPLAIN QUERY PLAN SELECT rowid, code FROM graph_nodes INDEXED BY graph_nodes_codes"
            " WHERE agent_id = ? AND confidence >= ? AND scope_key IN (?, ?) AND code IS NOT NULL",
            ("a", 0.0, "x", "y"),
        )
    )
    assert "COVERING INDEX graph_nodes_codes" in plan, plan
    await check_the_best_ten(store, vectors, rng)
