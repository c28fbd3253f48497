"""The knowledge graph: entities and their relations, with quotes, confidence and scope.

Records in :mod:`.records`, the store contract in :mod:`.base` (:class:`GraphAdapter`, and
:class:`GraphStoreMixin` in which every call is written once), merge rules in :mod:`.rules`.
The built-in engines (in process, SQLite, PostgreSQL) mix it into their thread stores.
Entities and relations read by a model in :mod:`.extract` (prompts in :mod:`.prompts`), the
inference pass in :mod:`.inference`, background auto-extraction in :mod:`.auto`.
"""

from .auto import AutoExtractFailure, AutoExtractor, AutoExtractSettings, AutoExtractStats
from .base import GraphAdapter, GraphChanges, GraphStoreMixin, is_graph_adapter
from .extract import (
    GraphAnswerCutError,
    GraphExtractionReport,
    GraphExtractor,
    GraphWindowError,
    parse_graph_extraction,
)
from .inference import InferenceReport, InferenceRules, infer_edges, run_inference
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
    "AutoExtractFailure",
    "AutoExtractSettings",
    "AutoExtractStats",
    "AutoExtractor",
    "EdgeQuery",
    "GraphAdapter",
    "GraphAnswerCutError",
    "GraphChanges",
    "GraphEdge",
    "GraphExtractionReport",
    "GraphExtractor",
    "GraphNeighbors",
    "GraphNode",
    "GraphPath",
    "GraphStats",
    "GraphStoreMixin",
    "GraphWindowError",
    "InferenceReport",
    "InferenceRules",
    "NodeQuery",
    "TraversalResult",
    "Walk",
    "infer_edges",
    "is_graph_adapter",
    "parse_graph_extraction",
    "run_inference",
]
