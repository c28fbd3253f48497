"""A search by meaning over more nodes than are scored exactly, written once for the engines that
rank sign codes first (SQLite, PostgreSQL): clustered vectors, as topics make, and the check that
a node's own vector finds it first and the best ten are those of every node read."""

from __future__ import annotations

import random
from typing import Any

from cogitator_memory import unwrap
from cogitator_memory.graph.base import GraphStoreMixin
from cogitator_memory.graph.checks import check_node_filter
from cogitator_memory.graph.nearest import EXACT_UP_TO

VISIBLE = {"agent_id": "a", "user_id": "u"}


async def add_clustered_nodes(store: Any, rng: random.Random) -> list[list[float]]:
    """Add ``EXACT_UP_TO + 700`` nodes (ids ``c00000``...) of clustered vectors; their vectors."""
    centres = [[rng.gauss(0, 1) for _ in range(48)] for _ in range(40)]
    vectors = [[c + rng.gauss(0, 0.6) for c in centres[i % 40]] for i in range(EXACT_UP_TO + 700)]
    nodes = [
        {"id": f"c{i:05d}", "name": f"C{i}", "type": "fact", "embedding": v, "scope": VISIBLE}
        for i, v in enumerate(vectors)
    ]
    for start in range(0, len(nodes), 1000):
        unwrap(await store.add_nodes(nodes[start : start + 1000]))
    return vectors


async def check_the_best_ten(store: Any, vectors: list[list[float]], rng: random.Random) -> None:
    """Ten queries near a node each: that node first, cosines as the base rule's, and at least
    95 of the 100 best the base rule's (reading and scoring every node)."""
    flt = check_node_filter({"agent_id": "a", "visible_to": VISIBLE})
    same = 0
    for i in range(0, 2_700, 270):
        query = [x + rng.gauss(0, 0.05) for x in vectors[i]]
        found = unwrap(await store.search_nodes_semantic("a", query, limit=10, threshold=-1.0, visible_to=VISIBLE))
        every = await GraphStoreMixin._nearest_nodes(store, flt, query, 10, -1.0)
        assert found[0][0].id == f"c{i:05d}"
        same += len({n.id for n, _ in found} & {n.id for n, _ in every})
        scores = {n.id: s for n, s in every}
        assert all(abs(scores[n.id] - s) < 1e-12 for n, s in found if n.id in scores)
    assert same >= 0.95 * 100, same
