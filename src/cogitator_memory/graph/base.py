"""The graph-store contract: :class:`GraphAdapter` for users, :class:`GraphStoreMixin` for engines.

Every public call is written once in :class:`GraphStoreMixin` (argument checks, ids and times,
merging, result wrapping) over eight primitives an engine implements:

- ``_write_graph(changes)``: apply a :class:`GraphChanges` as one atomic step: add nodes and
  edges (``ConflictError`` naming a taken id), replace stored ones whole (``NotFoundError``
  naming a missing one; ``ConflictError`` when the stored record's ``version`` is not the new
  one's less 1: another change came first), delete edges, delete nodes with every edge touching
  them.
- ``_get_nodes(ids)`` / ``_get_edges(ids)``: the stored records with those ids, any order.
- ``_query_nodes(query)`` / ``_query_edges(query)``: what :class:`NodeQuery.matches
  <cogitator_memory.graph.records.NodeQuery.matches>` (:class:`EdgeQuery`) accepts, any order,
  filtered in the store; with ``query.limit`` > 0 the first by ``(name key, id)`` (by ``id``).
- ``_walk_steps(walk)``: the steps of a bounded walk (:class:`~cogitator_memory.graph.records.Walk`)
  as ``(node, hops, previous node, edge)`` rows, the start nodes as ``(id, 0, None, None)``: from
  every node reached in fewer than ``max_depth`` hops, along at most ``walk.fan_out`` of the edges
  ``walk.follows`` (most confident first, then by edge id), the way ``walk.steps`` says, into
  nodes ``walk.sees`` (any node when ``walk.scope_keys`` is None); each distinct row once. Done in the engine (SQL engines: one recursive query), never by loading the
  graph.
- ``_clear_graph(agent_id)``: delete an agent's nodes and edges; how many of each.
- ``_graph_counts(agent_id)``: an agent's nodes and edges counted by type.

Semantic search compares the query's vector with the ``embedding`` each node carries (set when it
was written, or by :meth:`GraphStoreMixin.embed_nodes`), through the
:class:`~cogitator_memory.embeddings.base.EmbeddingService` passed to the call.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from .. import clock
from ..errors import ConflictError, InvalidArgumentError, NotFoundError
from ..items.records import MemoryScope
from ..result import MemoryResult, ok
from ..threads import tree
from ..vectors.similarity import cosines
from . import rules
from .checks import (
    MAX_BATCH,
    EdgeInput,
    NodeInput,
    _changed,
    _count,
    _direction,
    _list,
    _number,
    _scope_keys,
    _words,
    check_edge,
    check_edge_filter,
    check_node,
    check_node_filter,
    cosine,
    node_text,
)
from .records import (
    MAX_DEPTH,
    MAX_FAN_OUT,
    Direction,
    EdgeQuery,
    GraphEdge,
    GraphNeighbors,
    GraphNode,
    GraphPath,
    GraphStats,
    NodeQuery,
    TraversalResult,
    Walk,
    name_key,
)

if TYPE_CHECKING:
    from ..embeddings.base import EmbeddingService


@dataclass
class GraphChanges:
    """One atomic write of a graph store (see the module docstring)."""

    add_nodes: list[GraphNode] = field(default_factory=list)
    put_nodes: list[GraphNode] = field(default_factory=list)
    delete_nodes: list[str] = field(default_factory=list)
    add_edges: list[GraphEdge] = field(default_factory=list)
    put_edges: list[GraphEdge] = field(default_factory=list)
    delete_edges: list[str] = field(default_factory=list)


@runtime_checkable
class GraphAdapter(Protocol):
    """What every knowledge-graph store offers; every call returns a :class:`~cogitator_memory.MemoryResult`.
    :mod:`cogitator_memory.testing.graph` checks the contract."""

    async def add_node(self, node: NodeInput) -> MemoryResult[GraphNode]:
        """Store a node."""
        ...

    async def get_node(self, node_id: str) -> MemoryResult[GraphNode | None]:
        """The node, or None."""
        ...

    async def query_nodes(self, filter: Mapping[str, Any]) -> MemoryResult[list[GraphNode]]:
        """Nodes passing a filter."""
        ...

    async def update_node(
        self, node_id: str, changes: Mapping[str, Any], *, expected_version: int | None = None
    ) -> MemoryResult[GraphNode]:
        """Change a node's fields."""
        ...

    async def delete_nodes(self, node_ids: Sequence[str]) -> MemoryResult[list[str]]:
        """Delete nodes and their edges, all in one step."""
        ...

    async def search_nodes_semantic(
        self, agent_id: str, query: str | Sequence[float], **options: Any
    ) -> MemoryResult[list[tuple[GraphNode, float]]]:
        """Nodes nearest a text or a vector."""
        ...

    async def add_edge(self, edge: EdgeInput) -> MemoryResult[GraphEdge]:
        """Store an edge between two stored nodes."""
        ...

    async def traverse(self, start_node_id: str | Sequence[str], **options: Any) -> MemoryResult[TraversalResult]:
        """The bounded neighbourhood of nodes."""
        ...

    async def find_shortest_path(
        self, start_node_id: str, end_node_id: str, **options: Any
    ) -> MemoryResult[GraphPath | None]:
        """A shortest path, or None."""
        ...


def check_next_version(what: str, record_id: str, stored: int, written: int) -> None:
    """What an engine's ``_write_graph`` checks of each replaced record (in the write's step):
    the stored ``version`` is the written one's less 1, ``ConflictError`` otherwise."""
    if stored != written - 1:
        raise ConflictError(
            f"graph {what} {record_id} is at version {stored}, not {written - 1}: it changed since it was read"
        )


def _at_version(record: Any, expected_version: int | None) -> Any:
    """``record`` when it is at ``expected_version`` (or none is given); ``ConflictError`` otherwise."""
    if expected_version is not None:
        _count("expected_version", expected_version, 1, 2**63 - 1)
        if record.version != expected_version:
            what = "node" if isinstance(record, GraphNode) else "edge"
            raise ConflictError(
                f"graph {what} {record.id} is at version {record.version}, not {expected_version}: "
                "it changed since it was read"
            )
    return record


def is_graph_adapter(value: object) -> bool:
    """Whether ``value`` keeps a knowledge graph (has the calls of :class:`GraphAdapter`)."""
    return isinstance(value, GraphAdapter)


class GraphStoreMixin(ABC):
    """The public graph calls, written once over the engine's primitives (see the module docstring).

    Mixed into a store class before its base (``class SQLiteAdapter(SQLiteGraph, ...,
    BaseMemoryAdapter)``), it needs ``_require_connected()`` and ``_fail(operation, exc)`` from
    that base, and adds ``"graph"`` to the class's ``capabilities``.
    """

    capabilities: ClassVar[frozenset[Any]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        existing = getattr(cls, "capabilities", None)
        if isinstance(existing, frozenset) and "graph" not in existing:
            cls.capabilities = existing | {"graph"}

    if TYPE_CHECKING:

        def _require_connected(self) -> None: ...
        def _fail(self, operation: str, exc: Exception) -> MemoryResult[Any]: ...

    # ----- engine primitives -------------------------------------------------------------------

    @abstractmethod
    async def _write_graph(self, changes: GraphChanges) -> None:
        """Apply every change or none."""

    async def _commit_graph(self, changes: GraphChanges) -> None:
        """Apply ``changes`` (:meth:`_write_graph`), then tell the store's recall index (what it
        needs from the graph as it was, read before the write)."""
        plan = await self._recall_graph_plan(changes)
        await self._write_graph(changes)
        await self._recall_graph(changes, plan)

    async def _recall_graph_plan(self, changes: GraphChanges) -> Any:
        """What a store keeping a recall index reads before a graph write (the edges deleted
        with their nodes, the nodes renamed): nothing here (see
        :class:`~cogitator_memory.index.RecallIndexMixin`)."""
        return None

    async def _recall_graph(self, changes: GraphChanges, plan: Any = None) -> None:
        """What a store keeping a recall index does after a graph write: nothing here (see
        :class:`~cogitator_memory.index.RecallIndexMixin`)."""
        return None

    async def _recall_clear_graph(self, agent_id: str) -> None:
        """What a store keeping a recall index does once an agent's graph is cleared: nothing here."""
        return None

    @abstractmethod
    async def _get_nodes(self, ids: list[str]) -> list[GraphNode]:
        """The stored nodes with these ids, any order."""

    @abstractmethod
    async def _get_edges(self, ids: list[str]) -> list[GraphEdge]:
        """The stored edges with these ids, any order."""

    @abstractmethod
    async def _query_nodes(self, query: NodeQuery) -> list[GraphNode]:
        """The nodes ``query.matches``."""

    async def _count_nodes(self, query: NodeQuery) -> int:
        """How many nodes ``query.matches``: here they are read; an engine that can count
        overrides it."""
        return len(await self._query_nodes(query))

    @abstractmethod
    async def _query_edges(self, query: EdgeQuery) -> list[GraphEdge]:
        """The edges ``query.matches``."""

    async def _nearest_nodes(
        self, query: NodeQuery, vector: list[float], limit: int, least: float
    ) -> list[tuple[GraphNode, float]]:
        """The nodes ``query.matches`` whose embedding (of ``vector``'s size) has a cosine of at
        least ``least`` with ``vector``, best first (ties by id), at most ``limit``. Here every
        node of the query is read and the cosines taken in one matrix product; an engine that
        can read the vectors alone overrides it."""
        nodes = [
            n for n in await self._query_nodes(query) if n.embedding is not None and len(n.embedding) == len(vector)
        ]
        scores = cosines(vector, [n.embedding for n in nodes if n.embedding is not None], precise=True)
        scored = [(n, score) for n, score in zip(nodes, scores, strict=True) if score >= least]
        scored.sort(key=lambda pair: (-pair[1], pair[0].id))
        return scored[:limit]

    @abstractmethod
    async def _walk_steps(self, walk: Walk) -> list[tuple[str, int, str | None, str | None]]:
        """The distinct ``(node, hops, previous node, edge)`` steps of a bounded walk."""

    @abstractmethod
    async def _clear_graph(self, agent_id: str) -> tuple[int, int]:
        """Delete an agent's graph; (nodes, edges) deleted."""

    @abstractmethod
    async def _graph_counts(self, agent_id: str) -> tuple[dict[str, int], dict[str, int]]:
        """An agent's nodes and edges counted by type."""

    async def _by_evidence(self, agent_id: str, entry_ids: frozenset[str]) -> tuple[list[GraphNode], list[GraphEdge]]:
        """The agent's nodes and edges with a quote of an entry of ``entry_ids``: this default reads
        the whole graph of the agent; an engine that indexes the quotes overrides it."""
        nodes = await self._query_nodes(NodeQuery(agent_id=agent_id))
        edges = await self._query_edges(EdgeQuery(agent_id=agent_id))
        return (
            [n for n in nodes if any(e.entry_id in entry_ids for e in n.evidence)],
            [e for e in edges if any(q.entry_id in entry_ids for q in e.evidence)],
        )

    # ----- helpers ---------------------------------------------------------------------------

    async def _node(self, name: str, node_id: object) -> GraphNode:
        checked = tree.check_id(name, node_id)
        found = await self._get_nodes([checked])
        if not found:
            raise NotFoundError(f"graph node not found: {checked}")
        return found[0]

    async def _check_endpoints(self, edges: list[GraphEdge], name: str) -> None:
        wanted = {i for e in edges for i in (e.source_id, e.target_id)}
        nodes = {n.id: n for n in await self._get_nodes(sorted(wanted))}
        for i, edge in enumerate(edges):
            for end in ("source_id", "target_id"):
                node = nodes.get(getattr(edge, end))
                if node is None:
                    raise NotFoundError(f"{name}[{i}].{end}: graph node not found: {getattr(edge, end)}")
                if node.agent_id != edge.agent_id:
                    raise InvalidArgumentError(f"{name}[{i}].{end}", "names a node of another agent")

    # ----- nodes -------------------------------------------------------------------------------

    async def add_nodes(self, nodes: Sequence[NodeInput]) -> MemoryResult[list[GraphNode]]:
        """Store nodes (records or dicts of their fields; ``id`` and times are filled in when
        missing, ``agent_id`` may stand for ``scope``), all or nothing; a taken id is refused."""
        try:
            self._require_connected()
            checked = [check_node(f"nodes[{i}]", v) for i, v in enumerate(_list("nodes", nodes))]
            if len({n.id for n in checked}) != len(checked):
                raise InvalidArgumentError("nodes", "holds one id twice")
            if checked:
                await self._commit_graph(GraphChanges(add_nodes=checked))
            return ok(checked)
        except Exception as exc:
            return self._fail("add_nodes", exc)

    async def add_node(self, node: NodeInput) -> MemoryResult[GraphNode]:
        """Store one node (see :meth:`add_nodes`)."""
        result = await self.add_nodes([node])
        return ok(result.data[0]) if result.success and result.data else result  # type: ignore[return-value]

    async def get_node(self, node_id: str) -> MemoryResult[GraphNode | None]:
        """The node with this id, or None."""
        try:
            self._require_connected()
            found = await self._get_nodes([tree.check_id("node_id", node_id)])
            return ok(found[0] if found else None)
        except Exception as exc:
            return self._fail("get_node", exc)

    async def get_nodes(self, node_ids: Sequence[str]) -> MemoryResult[list[GraphNode]]:
        """The nodes with these ids, in the order asked (each once); an id the store does not hold
        is left out."""
        try:
            self._require_connected()
            ids = list(
                dict.fromkeys(tree.check_id(f"node_ids[{i}]", v) for i, v in enumerate(_list("node_ids", node_ids)))
            )
            found = {n.id: n for n in await self._get_nodes(ids)} if ids else {}
            return ok([found[i] for i in ids if i in found])
        except Exception as exc:
            return self._fail("get_nodes", exc)

    async def get_node_by_name(
        self, agent_id: str, name: str, *, visible_to: MemoryScope | Mapping[str, Any] | None = None
    ) -> MemoryResult[GraphNode | None]:
        """The agent's node whose name or an alias is ``name`` (spacing and case aside), the oldest
        id first when several are; ``visible_to`` keeps to the nodes a scope sees."""
        try:
            self._require_connected()
            filter_: dict[str, Any] = {"agent_id": agent_id, "name": name, "visible_to": visible_to}
            found = await self._query_nodes(check_node_filter(filter_))
            found.sort(key=lambda n: n.id)
            return ok(found[0] if found else None)
        except Exception as exc:
            return self._fail("get_node_by_name", exc)

    async def query_nodes(self, filter: Mapping[str, Any]) -> MemoryResult[list[GraphNode]]:
        """Nodes passing ``filter`` (see :func:`check_node_filter`), by name key then id."""
        try:
            self._require_connected()
            query = check_node_filter(filter)
            found = sorted(await self._query_nodes(query), key=lambda n: (name_key(n.name), n.id))
            return ok(found[: query.limit] if query.limit else found)
        except Exception as exc:
            return self._fail("query_nodes", exc)

    async def count_nodes(self, filter: Mapping[str, Any]) -> MemoryResult[int]:
        """How many nodes pass ``filter`` (as :meth:`query_nodes`, its ``limit`` aside), counted
        by the engine where it can, without reading them."""
        try:
            self._require_connected()
            return ok(await self._count_nodes(check_node_filter(filter)))
        except Exception as exc:
            return self._fail("count_nodes", exc)

    async def update_node(
        self, node_id: str, changes: Mapping[str, Any], *, expected_version: int | None = None
    ) -> MemoryResult[GraphNode]:
        """Change a node's fields (all but id, scope, created_at and version); its ``version`` moves
        on by one. With ``expected_version`` (the version it was read at) the change is made only
        if no other came first: ``ConflictError`` otherwise. A missing node is a ``NotFoundError``."""
        try:
            self._require_connected()
            node = _changed("changes", _at_version(await self._node("node_id", node_id), expected_version), changes)
            await self._commit_graph(GraphChanges(put_nodes=[node]))
            return ok(node)
        except Exception as exc:
            return self._fail("update_node", exc)

    async def _update_records(
        self,
        nodes: Sequence[tuple[str, Mapping[str, Any], int]],
        edges: Sequence[tuple[str, Mapping[str, Any], int]],
    ) -> MemoryResult[tuple[list[GraphNode], list[GraphEdge]]]:
        """Change nodes and edges, each ``(id, changes, version read)`` as :meth:`update_node` and
        :meth:`update_edge` would, in one atomic write (graph extraction's changes of a window):
        all or none, ``ConflictError`` when one moved on since it was read. The records changed,
        in the order given. The package's own call, not the contract's."""
        try:
            self._require_connected()
            found_nodes = {n.id: n for n in await self._get_nodes([i for i, _, _ in nodes])} if nodes else {}
            found_edges = {e.id: e for e in await self._get_edges([i for i, _, _ in edges])} if edges else {}
            put_nodes: list[GraphNode] = []
            for node_id, changes, version in nodes:
                node = found_nodes.get(node_id)
                if node is None:
                    raise NotFoundError(f"graph node not found: {node_id}")
                put_nodes.append(_changed("changes", _at_version(node, version), changes))
            put_edges: list[GraphEdge] = []
            for edge_id, changes, version in edges:
                edge = found_edges.get(edge_id)
                if edge is None:
                    raise NotFoundError(f"graph edge not found: {edge_id}")
                put_edges.append(_changed("changes", _at_version(edge, version), changes))
            if put_nodes or put_edges:
                await self._commit_graph(GraphChanges(put_nodes=put_nodes, put_edges=put_edges))
            return ok((put_nodes, put_edges))
        except Exception as exc:
            return self._fail("update_node", exc)

    async def delete_nodes(self, node_ids: Sequence[str]) -> MemoryResult[list[str]]:
        """Delete nodes and every edge touching them, in one atomic write; the ids that existed
        (in the order given)."""
        try:
            self._require_connected()
            ids = list(
                dict.fromkeys(tree.check_id(f"node_ids[{i}]", v) for i, v in enumerate(_list("node_ids", node_ids)))
            )
            present = {n.id for n in await self._get_nodes(ids)} if ids else set()
            gone = [i for i in ids if i in present]
            if gone:
                await self._commit_graph(GraphChanges(delete_nodes=gone))
            return ok(gone)
        except Exception as exc:
            return self._fail("delete_nodes", exc)

    async def delete_node(self, node_id: str) -> MemoryResult[bool]:
        """Delete a node and every edge touching it; whether it existed."""
        try:
            self._require_connected()
            found = await self._get_nodes([tree.check_id("node_id", node_id)])
            if found:
                await self._commit_graph(GraphChanges(delete_nodes=[found[0].id]))
            return ok(bool(found))
        except Exception as exc:
            return self._fail("delete_node", exc)

    async def search_nodes_semantic(
        self,
        agent_id: str,
        query: str | Sequence[float],
        *,
        embedding_service: EmbeddingService | None = None,
        limit: int = 10,
        threshold: float = 0.0,
        types: Sequence[str] | None = None,
        visible_to: MemoryScope | Mapping[str, Any] | None = None,
    ) -> MemoryResult[list[tuple[GraphNode, float]]]:
        """The agent's nodes whose ``embedding`` is nearest ``query`` (a vector, or text embedded by
        ``embedding_service``), best first, with their cosine; at least ``threshold``, at most ``limit``."""
        try:
            self._require_connected()
            if isinstance(query, str):
                if embedding_service is None:
                    raise InvalidArgumentError("embedding_service", "is needed to search by text")
                if not query.strip():
                    raise InvalidArgumentError("query", "must not be empty")
                vector = list(await embedding_service.embed(query))
            else:
                vector = [float(_number("query", v, -math.inf, math.inf)) for v in _list("query", query)]
                if not vector:
                    raise InvalidArgumentError("query", "must not be empty")
            count = _count("limit", limit, 1, MAX_BATCH)
            least = _number("threshold", threshold, -1.0, 1.0)
            filter_ = {"agent_id": agent_id, "types": types, "visible_to": visible_to}
            return ok(await self._nearest_nodes(check_node_filter(filter_), vector, count, least))
        except Exception as exc:
            return self._fail("search_nodes_semantic", exc)

    async def embed_nodes(
        self, agent_id: str, embedding_service: EmbeddingService, *, only_missing: bool = True
    ) -> MemoryResult[int]:
        """Give the agent's nodes an ``embedding`` of their name, aliases and description (those
        without one, or all); how many were embedded."""
        try:
            self._require_connected()
            nodes = await self._query_nodes(check_node_filter({"agent_id": agent_id}))
            todo = sorted((n for n in nodes if not only_missing or n.embedding is None), key=lambda n: n.id)
            done = 0
            for start in range(0, len(todo), 256):
                chunk = todo[start : start + 256]
                texts = [node_text(n) for n in chunk]
                vectors = await embedding_service.embed_batch(texts)
                now = clock.now()
                puts = [
                    n.model_copy(update={"embedding": list(v), "updated_at": now, "version": n.version + 1})
                    for n, v in zip(chunk, vectors, strict=True)
                ]
                await self._commit_graph(GraphChanges(put_nodes=puts))
                done += len(puts)
            return ok(done)
        except Exception as exc:
            return self._fail("embed_nodes", exc)

    # ----- edges -------------------------------------------------------------------------------

    async def add_edges(self, edges: Sequence[EdgeInput]) -> MemoryResult[list[GraphEdge]]:
        """Store edges between stored nodes of their agent, all or nothing (see :meth:`add_nodes`)."""
        try:
            self._require_connected()
            checked = [check_edge(f"edges[{i}]", v) for i, v in enumerate(_list("edges", edges))]
            if len({e.id for e in checked}) != len(checked):
                raise InvalidArgumentError("edges", "holds one id twice")
            if checked:
                await self._check_endpoints(checked, "edges")
                await self._commit_graph(GraphChanges(add_edges=checked))
            return ok(checked)
        except Exception as exc:
            return self._fail("add_edges", exc)

    async def add_edge(self, edge: EdgeInput) -> MemoryResult[GraphEdge]:
        """Store one edge (see :meth:`add_edges`)."""
        result = await self.add_edges([edge])
        return ok(result.data[0]) if result.success and result.data else result  # type: ignore[return-value]

    async def get_edge(self, edge_id: str) -> MemoryResult[GraphEdge | None]:
        """The edge with this id, or None."""
        try:
            self._require_connected()
            found = await self._get_edges([tree.check_id("edge_id", edge_id)])
            return ok(found[0] if found else None)
        except Exception as exc:
            return self._fail("get_edge", exc)

    async def query_edges(self, filter: Mapping[str, Any]) -> MemoryResult[list[GraphEdge]]:
        """Edges passing ``filter`` (see :func:`check_edge_filter`), by id."""
        try:
            self._require_connected()
            query = check_edge_filter(filter)
            found = sorted(await self._query_edges(query), key=lambda e: e.id)
            return ok(found[: query.limit] if query.limit else found)
        except Exception as exc:
            return self._fail("query_edges", exc)

    async def get_edges_between(self, source_id: str, target_id: str) -> MemoryResult[list[GraphEdge]]:
        """The edges from ``source_id`` to ``target_id``, by id."""
        try:
            self._require_connected()
            source = await self._node("source_id", source_id)
            between = (source.id, tree.check_id("target_id", target_id))
            found = await self._query_edges(EdgeQuery(agent_id=source.agent_id, between=between))
            return ok(sorted(found, key=lambda e: e.id))
        except Exception as exc:
            return self._fail("get_edges_between", exc)

    async def update_edge(
        self, edge_id: str, changes: Mapping[str, Any], *, expected_version: int | None = None
    ) -> MemoryResult[GraphEdge]:
        """Change an edge's fields (not its id, scope, ends, created_at or version), like
        :meth:`update_node` (``expected_version`` included)."""
        try:
            self._require_connected()
            found = await self._get_edges([tree.check_id("edge_id", edge_id)])
            if not found:
                raise NotFoundError(f"graph edge not found: {edge_id}")
            edge = _changed("changes", _at_version(found[0], expected_version), changes)
            await self._commit_graph(GraphChanges(put_edges=[edge]))
            return ok(edge)
        except Exception as exc:
            return self._fail("update_edge", exc)

    async def delete_edge(self, edge_id: str) -> MemoryResult[bool]:
        """Delete an edge; whether it existed."""
        try:
            self._require_connected()
            found = await self._get_edges([tree.check_id("edge_id", edge_id)])
            if found:
                await self._commit_graph(GraphChanges(delete_edges=[found[0].id]))
            return ok(bool(found))
        except Exception as exc:
            return self._fail("delete_edge", exc)

    # ----- walks -------------------------------------------------------------------------------

    def _graph_walk(self, starts: list[str], options: Mapping[str, Any], *, depth: int, fan_out: int) -> Walk:
        unknown = set(options) - {
            "max_depth",
            "direction",
            "relation_types",
            "min_confidence",
            "include_inferred",
            "fan_out",
            "max_nodes",
            "visible_to",
        }
        if unknown:
            raise InvalidArgumentError(sorted(unknown)[0], "is not an option of a walk")
        inferred = options.get("include_inferred", True)
        if not isinstance(inferred, bool):
            raise InvalidArgumentError("include_inferred", "must be true or false")
        return Walk(
            start_ids=tuple(starts),
            max_depth=_count("max_depth", options.get("max_depth", depth), 1, MAX_DEPTH),
            direction=_direction(options.get("direction", "both")),
            types=_words("relation_types", options.get("relation_types")),
            min_confidence=_number("min_confidence", options.get("min_confidence", 0.0), 0.0, 1.0),
            include_inferred=inferred,
            fan_out=_count("fan_out", options.get("fan_out", fan_out), 1, MAX_FAN_OUT),
            max_nodes=_count("max_nodes", options.get("max_nodes", 1_000), 1, MAX_BATCH),
            scope_keys=_scope_keys(options.get("visible_to"), "visible_to"),
        )

    async def traverse(self, start_node_id: str | Sequence[str], **options: Any) -> MemoryResult[TraversalResult]:
        """The nodes within ``max_depth`` hops (default 2, at most 8) of the start node(s), walked in
        the store: along at most ``fan_out`` edges from each node (default 50, the most confident),
        ``direction`` (outgoing, incoming, both), ``relation_types``, ``min_confidence``,
        ``include_inferred``; at most ``max_nodes`` nodes (default 1,000; the nearest, then by id).
        ``visible_to`` (a scope) keeps the walk to the nodes and edges that scope sees: it never
        goes through one it does not. Returns the nodes, their hops and the edges walked between them."""
        try:
            self._require_connected()
            raw = [start_node_id] if isinstance(start_node_id, str) else _list("start_node_id", start_node_id)
            starts = list(dict.fromkeys(tree.check_id(f"start_node_id[{i}]", v) for i, v in enumerate(raw)))
            if not starts:
                raise InvalidArgumentError("start_node_id", "must name at least one node")
            return ok(await self._neighbourhood(self._graph_walk(starts, options, depth=2, fan_out=50)))
        except Exception as exc:
            return self._fail("traverse", exc)

    async def _neighbourhood(self, walk: Walk) -> TraversalResult:
        """What :meth:`traverse` gives for a checked walk: the start nodes that exist (and
        ``walk.sees``), the nodes the walk reaches with their least hops, the first
        ``walk.max_nodes`` by (hops, id), and the edges walked between two of them (by id). Built
        here from the primitives; an engine may answer it in fewer round trips (the conformance
        suite holds it to the same answers)."""
        present = {n.id for n in await self._get_nodes(list(walk.start_ids)) if walk.sees(n)}
        walk = replace(walk, start_ids=tuple(s for s in walk.start_ids if s in present))
        if not walk.start_ids:
            return TraversalResult(nodes=[], edges=[], depths={})
        kept, depths, edge_ids = rules.neighbourhood_from_steps(await self._walk_steps(walk), walk.max_nodes)
        nodes = {n.id: n for n in await self._get_nodes(kept)}
        edges = sorted(await self._get_edges(edge_ids), key=lambda e: e.id) if edge_ids else []
        ordered = [nodes[n] for n in kept if n in nodes]
        return TraversalResult(nodes=ordered, edges=edges, depths={n.id: depths[n.id] for n in ordered})

    async def find_shortest_path(
        self, start_node_id: str, end_node_id: str, **options: Any
    ) -> MemoryResult[GraphPath | None]:
        """A path of the fewest edges from one node to another within ``max_depth`` hops (default 4),
        walked like :meth:`traverse` (``direction`` defaults to both, ``visible_to`` keeps it to what
        a scope sees); None when there is none."""
        try:
            self._require_connected()
            start = tree.check_id("start_node_id", start_node_id)
            end = tree.check_id("end_node_id", end_node_id)
            walk = self._graph_walk(
                [start], {k: v for k, v in options.items() if k != "max_nodes"}, depth=4, fan_out=50
            )
            if start == end:
                found = [n for n in await self._get_nodes([start]) if walk.sees(n)]
                return ok(GraphPath(nodes=found, edges=[], total_weight=0.0) if found else None)
            return ok(await self._shortest_path(walk, end))
        except Exception as exc:
            return self._fail("find_shortest_path", exc)

    async def _shortest_path(self, walk: Walk, end: str) -> GraphPath | None:
        """What :meth:`find_shortest_path` gives from ``walk.start_ids[0]`` to another node ``end``:
        the path :func:`~cogitator_memory.graph.rules.path_from_steps` reads from the first walk
        (one hop deeper at a time, up to ``walk.max_depth``) reaching ``end``, None when none does
        or either node is missing (or unseen). Built here from the primitives; an engine may answer
        it in fewer round trips (the conformance suite holds it to the same answers)."""
        start = walk.start_ids[0]
        found = {n.id: n for n in await self._get_nodes([start, end]) if walk.sees(n)}
        if start not in found or end not in found:
            return None
        # one hop deeper at a time: the first walk reaching ``end`` has every step of its
        # shortest paths (the steps of ``d`` hops do not depend on ``max_depth``), and each
        # walk costs a fraction of the next (it reaches about degree times fewer nodes)
        edge_ids = None
        for depth in range(1, walk.max_depth + 1):
            edge_ids = rules.path_from_steps(await self._walk_steps(replace(walk, max_depth=depth)), start, end)
            if edge_ids is not None:
                break
        if edge_ids is None:
            return None
        by_id = {e.id: e for e in await self._get_edges(edge_ids)}
        edges = [by_id[e] for e in edge_ids]
        order = [start]
        for edge in edges:
            order.append(edge.target_id if edge.source_id == order[-1] else edge.source_id)
        nodes = {n.id: n for n in await self._get_nodes(order)}
        return GraphPath(nodes=[nodes[n] for n in order], edges=edges, total_weight=sum(e.weight for e in edges))

    async def get_neighbors(
        self,
        node_id: str,
        *,
        direction: Direction = "both",
        relation_types: Sequence[str] | None = None,
        visible_to: MemoryScope | Mapping[str, Any] | None = None,
    ) -> MemoryResult[GraphNeighbors]:
        """The nodes one edge away (``direction`` and ``visible_to`` as in :meth:`traverse`) and those edges."""
        result = await self.traverse(
            node_id,
            max_depth=1,
            direction=direction,
            relation_types=relation_types,
            fan_out=MAX_FAN_OUT,
            visible_to=visible_to,
        )
        if not result.success or result.data is None:
            return result  # type: ignore[return-value]
        data = result.data
        return ok(GraphNeighbors(nodes=[n for n in data.nodes if data.depths[n.id] == 1], edges=data.edges))

    # ----- whole graph -------------------------------------------------------------------------

    async def merge_nodes(self, target_node_id: str, source_node_ids: Sequence[str]) -> MemoryResult[GraphNode]:
        """Merge nodes into one, in one atomic write: the sources' names become the target's aliases,
        their properties and quotes join its own (see :func:`~cogitator_memory.graph.rules.merge_node_records`),
        their edges move to it (an edge left joining it to itself goes, edges saying the same
        thing become one) and the sources are deleted. Returns the merged node."""
        try:
            self._require_connected()
            target = await self._node("target_node_id", target_node_id)
            ids = [
                tree.check_id(f"source_node_ids[{i}]", v)
                for i, v in enumerate(_list("source_node_ids", source_node_ids))
            ]
            ids = [i for i in dict.fromkeys(ids) if i != target.id]
            sources = {n.id: n for n in await self._get_nodes(ids)}
            for i, node_id in enumerate(ids):
                if node_id not in sources:
                    raise NotFoundError(f"source_node_ids[{i}]: graph node not found: {node_id}")
                if sources[node_id].agent_id != target.agent_id:
                    raise InvalidArgumentError(f"source_node_ids[{i}]", "names a node of another agent")
            now = clock.now()
            merged = rules.merge_node_records(target, [sources[i] for i in ids], now)
            moved = set(ids)
            touching = await self._query_edges(
                EdgeQuery(agent_id=target.agent_id, node_ids=frozenset(moved | {target.id}))
            )
            puts, gone = rules.repoint_edges(touching, moved, target.id, now)
            await self._commit_graph(
                GraphChanges(put_nodes=[merged], put_edges=puts, delete_edges=gone, delete_nodes=ids)
            )
            return ok(merged)
        except Exception as exc:
            return self._fail("merge_nodes", exc)

    async def clear_graph(self, agent_id: str) -> MemoryResult[dict[str, int]]:
        """Delete every node and edge of an agent; ``{"nodes": n, "edges": m}`` deleted."""
        try:
            self._require_connected()
            agent = tree.check_id("agent_id", agent_id)
            nodes, edges = await self._clear_graph(agent)
            await self._recall_clear_graph(agent)
            return ok({"nodes": nodes, "edges": edges})
        except Exception as exc:
            return self._fail("clear_graph", exc)

    async def find_by_evidence(
        self, agent_id: str, entry_ids: Sequence[str]
    ) -> MemoryResult[tuple[list[GraphNode], list[GraphEdge]]]:
        """The agent's nodes and edges (each by id) with a quote (``evidence``) of one of
        ``entry_ids``: what deleting those entries touches, found without reading the whole graph
        where the engine indexes the quotes."""
        try:
            self._require_connected()
            agent = tree.check_id("agent_id", agent_id)
            if isinstance(entry_ids, str) or not isinstance(entry_ids, Sequence):
                raise InvalidArgumentError("entry_ids", "must be a list of entry ids")
            wanted = frozenset(tree.check_id(f"entry_ids[{i}]", v) for i, v in enumerate(entry_ids))
            if not wanted:
                return ok(([], []))
            nodes, edges = await self._by_evidence(agent, wanted)
            return ok((sorted(nodes, key=lambda n: n.id), sorted(edges, key=lambda e: e.id)))
        except Exception as exc:
            return self._fail("find_by_evidence", exc)

    async def get_graph_stats(self, agent_id: str) -> MemoryResult[GraphStats]:
        """Counts of an agent's graph: nodes and edges, each by type, and the average degree."""
        try:
            self._require_connected()
            nodes, edges = await self._graph_counts(tree.check_id("agent_id", agent_id))
            node_count, edge_count = sum(nodes.values()), sum(edges.values())
            return ok(
                GraphStats(
                    node_count=node_count,
                    edge_count=edge_count,
                    nodes_by_type=dict(sorted(nodes.items())),
                    edges_by_type=dict(sorted(edges.items())),
                    average_degree=2 * edge_count / node_count if node_count else 0.0,
                )
            )
        except Exception as exc:
            return self._fail("get_graph_stats", exc)


__all__ = [
    "MAX_BATCH",
    "EdgeInput",
    "GraphAdapter",
    "GraphChanges",
    "GraphStoreMixin",
    "NodeInput",
    "check_edge",
    "check_edge_filter",
    "check_next_version",
    "check_node",
    "check_node_filter",
    "cosine",
    "is_graph_adapter",
    "node_text",
]
