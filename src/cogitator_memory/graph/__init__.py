"""The knowledge graph: entities and their relations, with quotes, confidence and scope.

Records in :mod:`.records`, the store contract in :mod:`.base` (:class:`GraphAdapter`, and
:class:`GraphStoreMixin` in which every call is written once), merge rules in :mod:`.rules`.
The built-in engines (in process, SQLite, PostgreSQL) mix it into their thread stores.
"""

from .base import GraphAdapter, GraphChanges, GraphStoreMixin, is_graph_adapter
from .records import (
    ENTITY_TYPES,
    RELATION_TYPES,
    EdgeQuery,
    GraphEdge,
    GraphNeighbors,
    GraphNode,
    GraphPath,
    GraphStats,
    NodeQuery,
    TraversalResult,
    Walk,
)

__all__ = [
    "ENTITY_TYPES",
    "RELATION_TYPES",
    "EdgeQuery",
    "GraphAdapter",
    "GraphChanges",
    "GraphEdge",
    "GraphNeighbors",
    "GraphNode",
    "GraphPath",
    "GraphStats",
    "GraphStoreMixin",
    "NodeQuery",
    "TraversalResult",
    "Walk",
    "is_graph_adapter",
]
