"""Two writers on one SQLite file (two connections, as two processes have): an edge one adds to a
node the other is deleting leaves no record in the recall index, whichever order their steps
take. The deleting writer's graph write is run step by step (``_commit_graph``'s read of the
edges it deletes, the engine's write, then the index) so the other writer's whole call falls
between them; the conformance suite checks the same on one store of every engine."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from cogitator_memory import SQLiteAdapter, unwrap
from cogitator_memory.graph.base import GraphChanges
from cogitator_memory.graph.checks import check_edge

SCOPE = {"agent_id": "agent", "user_id": "ana"}


@pytest.fixture
async def writers(tmp_path: Path) -> AsyncIterator[tuple[SQLiteAdapter, SQLiteAdapter]]:
    path = str(tmp_path / "graph.db")
    async with SQLiteAdapter(path=path) as first, SQLiteAdapter(path=path) as second:
        yield first, second


def _node(name: str) -> dict[str, Any]:
    return {"type": "person", "name": name, "scope": SCOPE}


async def _records(store: SQLiteAdapter, *ids: str) -> list[str]:
    return [r.id for r in unwrap(await store.get_recall_records([f"graph_fact:{i}" for i in ids]))]


async def test_an_edge_added_between_the_read_and_the_delete(writers: tuple[SQLiteAdapter, SQLiteAdapter]) -> None:
    deleter, adder = writers
    ana, porto = unwrap(await deleter.add_nodes([_node("Ana"), _node("Porto")]))
    [old] = unwrap(
        await deleter.add_edges([{"source_id": ana.id, "target_id": porto.id, "type": "knows", "scope": SCOPE}])
    )
    changes = GraphChanges(delete_nodes=[porto.id])
    plan = await deleter._recall_graph_plan(changes)
    [late] = unwrap(
        await adder.add_edges([{"source_id": ana.id, "target_id": porto.id, "type": "visited", "scope": SCOPE}])
    )
    assert await _records(deleter, late.id) == [f"graph_fact:{late.id}"], "the other writer indexed its edge"
    await deleter._write_graph(changes)
    await deleter._recall_graph(changes, plan)
    assert unwrap(await adder.get_edge(late.id)) is None, "the edge went with its node"
    assert await _records(adder, late.id, old.id, porto.id) == [], "and every record of the node's edges"
    assert await _records(adder, ana.id) == [f"graph_fact:{ana.id}"]
    hits = unwrap(await adder.recall_keyword("visited knows Porto", filter={"kinds": ["graph_fact"]}))
    assert hits == []


async def test_an_edge_written_before_the_delete_and_indexed_after_it(
    writers: tuple[SQLiteAdapter, SQLiteAdapter],
) -> None:
    deleter, adder = writers
    ana, lisbon = unwrap(await adder.add_nodes([_node("Ana"), _node("Lisbon")]))
    edge = check_edge("edge", {"source_id": ana.id, "target_id": lisbon.id, "type": "moved_to", "scope": SCOPE})
    changes = GraphChanges(add_edges=[edge])
    plan = await adder._recall_graph_plan(changes)
    await adder._write_graph(changes)
    assert unwrap(await deleter.delete_nodes([lisbon.id])) == [lisbon.id]
    await adder._recall_graph(changes, plan)
    assert await _records(deleter, edge.id, lisbon.id) == [], "the late record was taken out by its writer"


async def test_a_node_delete_costs_one_search_of_the_index(
    writers: tuple[SQLiteAdapter, SQLiteAdapter], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Deleting a node with many edges: the search for its edges' records finds none left by then
    # (the graph's own edges were read before the write), so it runs once.
    store, _ = writers
    hub, *spokes = unwrap(await store.add_nodes([_node("Hub"), *(_node(f"n{i}") for i in range(30))]))
    unwrap(
        await store.add_edges(
            [{"source_id": hub.id, "target_id": s.id, "type": "links", "scope": SCOPE} for s in spokes]
        )
    )
    searches: list[int] = []
    real = SQLiteAdapter._recall_keyword

    async def counted(self: SQLiteAdapter, *args: Any) -> Any:
        found = await real(self, *args)
        searches.append(len(found))
        return found

    monkeypatch.setattr(SQLiteAdapter, "_recall_keyword", counted)
    unwrap(await store.delete_nodes([hub.id]))
    assert searches == [0]
    assert unwrap(await store.count_recall_records(filter={"kinds": ["graph_fact"]})) == 30, "the spokes' nodes"
