"""The knowledge graph in process memory: the primitives of :class:`~cogitator_memory.graph.base.GraphStoreMixin`,
mixed into :class:`~cogitator_memory.engines.memory.threads.InMemoryAdapter`.

Records are kept as JSON (every read parses a fresh copy), edges indexed by the nodes they touch.
Each primitive runs without awaiting, so each is atomic.
"""

from __future__ import annotations

from collections import Counter

from ...errors import ConflictError, NotFoundError
from ...graph.base import GraphChanges, GraphStoreMixin, check_next_version
from ...graph.records import TRUSTED, EdgeQuery, GraphEdge, GraphNode, NodeQuery, Walk


class InMemoryGraph(GraphStoreMixin):
    """The graph half of :class:`~cogitator_memory.engines.memory.threads.InMemoryAdapter`."""

    def __init__(self) -> None:
        super().__init__()
        self._nodes: dict[str, str] = {}
        self._edges: dict[str, str] = {}
        self._edge_ends: dict[str, tuple[str, str]] = {}
        self._touching: dict[str, set[str]] = {}

    def _node_of(self, node_id: str) -> GraphNode:
        return GraphNode.model_validate_json(self._nodes[node_id], context=TRUSTED)

    def _edge_of(self, edge_id: str) -> GraphEdge:
        return GraphEdge.model_validate_json(self._edges[edge_id], context=TRUSTED)

    def _drop_edge(self, edge_id: str) -> None:
        for end in self._edge_ends.pop(edge_id):
            self._touching.get(end, set()).discard(edge_id)
        del self._edges[edge_id]

    async def _write_graph(self, changes: GraphChanges) -> None:
        for node in changes.add_nodes:
            if node.id in self._nodes:
                raise ConflictError(f"graph node id is taken: {node.id}")
        for edge in changes.add_edges:
            if edge.id in self._edges:
                raise ConflictError(f"graph edge id is taken: {edge.id}")
        for what, records, stored, read in (
            ("node", changes.put_nodes, self._nodes, self._node_of),
            ("edge", changes.put_edges, self._edges, self._edge_of),
        ):
            for record in records:
                if record.id not in stored:
                    raise NotFoundError(f"graph {what} not found: {record.id}")
                check_next_version(what, record.id, read(record.id).version, record.version)
        for node in [*changes.add_nodes, *changes.put_nodes]:
            self._nodes[node.id] = node.model_dump_json(exclude_none=True)
            self._touching.setdefault(node.id, set())
        for edge in [*changes.add_edges, *changes.put_edges]:
            if edge.id in self._edges:
                self._drop_edge(edge.id)
            self._edges[edge.id] = edge.model_dump_json(exclude_none=True)
            self._edge_ends[edge.id] = (edge.source_id, edge.target_id)
            for end in (edge.source_id, edge.target_id):
                self._touching.setdefault(end, set()).add(edge.id)
        for edge_id in changes.delete_edges:
            if edge_id in self._edges:
                self._drop_edge(edge_id)
        for node_id in changes.delete_nodes:
            for edge_id in list(self._touching.pop(node_id, ())):
                if edge_id in self._edges:
                    self._drop_edge(edge_id)
            self._nodes.pop(node_id, None)

    async def _get_nodes(self, ids: list[str]) -> list[GraphNode]:
        return [self._node_of(i) for i in ids if i in self._nodes]

    async def _get_edges(self, ids: list[str]) -> list[GraphEdge]:
        return [self._edge_of(i) for i in ids if i in self._edges]

    async def _query_nodes(self, query: NodeQuery) -> list[GraphNode]:
        return [n for n in map(self._node_of, self._nodes) if query.matches(n)]

    async def _query_edges(self, query: EdgeQuery) -> list[GraphEdge]:
        if query.node_ids is not None:
            ids: set[str] | dict[str, str] = {e for n in query.node_ids for e in self._touching.get(n, ())}
        else:
            ids = self._edges
        return [e for e in map(self._edge_of, ids) if query.matches(e)]

    async def _walk_steps(self, walk: Walk) -> list[tuple[str, int, str | None, str | None]]:
        steps: dict[tuple[str, int, str | None, str | None], None] = {(s, 0, None, None): None for s in walk.start_ids}
        frontier = set(walk.start_ids)
        for hops in range(1, walk.max_depth + 1):
            reached: set[str] = set()
            for node in sorted(frontier):
                edges = [e for e in map(self._edge_of, self._touching.get(node, ())) if walk.follows(e)]
                edges = [e for e in edges if walk.steps(e, node) is not None]
                edges.sort(key=lambda e: (-e.confidence, e.id))
                if walk.scope_keys is not None:
                    edges = [e for e in edges if walk.sees(self._node_of(walk.steps(e, node) or ""))]
                for edge in edges[: walk.fan_out]:
                    other = walk.steps(edge, node)
                    assert other is not None
                    steps[(other, hops, node, edge.id)] = None
                    reached.add(other)
            frontier = reached
        return list(steps)

    async def _clear_graph(self, agent_id: str) -> tuple[int, int]:
        nodes = [i for i in self._nodes if self._node_of(i).agent_id == agent_id]
        edges = [i for i in self._edges if self._edge_of(i).agent_id == agent_id]
        await self._write_graph(GraphChanges(delete_edges=edges, delete_nodes=nodes))
        return len(nodes), len(edges)

    async def _graph_counts(self, agent_id: str) -> tuple[dict[str, int], dict[str, int]]:
        nodes = Counter(n.type for n in map(self._node_of, self._nodes) if n.agent_id == agent_id)
        edges = Counter(e.type for e in map(self._edge_of, self._edges) if e.agent_id == agent_id)
        return dict(nodes), dict(edges)


__all__ = ["InMemoryGraph"]
