"""The graph conformance suite on SQLiteAdapter (a file and ':memory:'), and what only SQLite shows:
a walk is one recursive query over the adjacency index."""

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from cogitator_memory import SQLiteAdapter, unwrap
from cogitator_memory.engines.sqlite.graph import WALK_SQL, walk_filter
from cogitator_memory.graph.records import Walk
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
