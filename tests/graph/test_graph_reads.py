"""What engines build traversals from: stored bodies read as one JSON array, and a walk's steps cut to what it keeps."""

from cogitator_memory.graph.records import TRUSTED, GraphEdge, GraphNode, stored_edges, stored_nodes
from cogitator_memory.graph.rules import neighbourhood_from_steps

NOW = "2026-01-01T00:00:00Z"


def _node(i: int, **extra: object) -> GraphNode:
    return GraphNode.model_validate(
        {
            "id": f"n{i}",
            "scope": {"agent_id": "a", **({"user_id": "ana"} if i % 2 else {})},
            "type": "person",
            "name": f"N{i}",
            "created_at": NOW,
            "updated_at": NOW,
            **extra,
        }
    )


def test_an_array_of_bodies_gives_the_records_one_body_at_a_time_gives() -> None:
    nodes = [
        _node(0),
        _node(1, aliases=["One"], description="d", properties={"k": [1, {"x": None}]}, version=3),
        _node(2, evidence=[{"quote": "hi", "entry_id": "e1", "thread_id": "t", "file_range": {"path": "a.md"}}]),
    ]
    bodies = [n.dump_json() for n in nodes]
    one_by_one = [GraphNode.model_validate_json(b, context=TRUSTED) for b in bodies]
    together = stored_nodes("[" + ",".join(bodies) + "]")
    assert together == one_by_one == nodes
    assert [n.model_fields_set for n in together] == [n.model_fields_set for n in one_by_one]
    assert [n.scope.model_fields_set for n in together] == [n.scope.model_fields_set for n in one_by_one]
    assert all(type(n) is GraphNode for n in together)
    edge = GraphEdge.model_validate(
        {
            "id": "e",
            "scope": {"agent_id": "a"},
            "source_id": "n0",
            "target_id": "n1",
            "type": "knows",
            "label": "knows",
            "created_at": NOW,
            "updated_at": NOW,
        }
    )
    assert stored_edges(f"[{edge.dump_json()}]") == [edge]
    assert stored_nodes(None) == [] and stored_edges(None) == [] and stored_nodes("[]") == []


def test_a_walk_keeps_the_nearest_nodes_and_the_edges_between_them() -> None:
    steps = [
        ("s", 0, None, None),
        ("b", 1, "s", "e2"),
        ("a", 1, "s", "e1"),
        ("s", 2, "a", "e1"),  # back to the start: hops 0 stays its least
        ("c", 2, "a", "e3"),
        ("d", 2, "b", "e4"),
        ("c", 2, "b", "e5"),
    ]
    kept, depths, edges = neighbourhood_from_steps(steps, 10)
    assert kept == ["s", "a", "b", "c", "d"]
    assert depths == {"s": 0, "a": 1, "b": 1, "c": 2, "d": 2}
    assert edges == ["e1", "e2", "e3", "e4", "e5"]
    kept, depths, edges = neighbourhood_from_steps(steps, 4)  # d is cut, and its edge with it
    assert kept == ["s", "a", "b", "c"] and depths == {"s": 0, "a": 1, "b": 1, "c": 2}
    assert edges == ["e1", "e2", "e3", "e5"]
    assert neighbourhood_from_steps([], 5) == ([], {}, [])
