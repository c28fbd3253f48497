"""The records of the knowledge graph: entities (:class:`GraphNode`) and the relations between them (:class:`GraphEdge`).

A node is an entity of an agent's memory (a person, a place, a project...) with a name, other
names it goes by (``aliases``), free ``properties``, a ``confidence`` and the quotes it stands
on (``evidence``, the same :class:`~cogitator_memory.items.records.ItemEvidence` memory items
carry). An edge says ``source --type--> target``. Both live in a
:class:`~cogitator_memory.items.records.MemoryScope` (the agent's, optionally narrowed to a
user, project or thread) and say where they came from (``origin``): told by the user,
extracted by a model, or inferred by the inference pass (:mod:`cogitator_memory.graph.rules`).

The query records (:class:`NodeQuery`, :class:`EdgeQuery`, :class:`Walk`) are what engines
receive, already checked; their ``matches`` methods are the reference every engine's filters
follow.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, TypeAlias

from pydantic import Field, TypeAdapter, ValidationInfo, field_validator

from ..items.records import TRUSTED, ItemEvidence, MemoryScope, normalize_key_text, scope_key
from ..threads import tree
from ..threads.records import Record
from ..threads.values import MAX_INT, has_surrogate

__all__ = [
    "ENTITY_TYPES",
    "RELATION_TYPES",
    "TRUSTED",
    "Direction",
    "EdgeQuery",
    "GraphEdge",
    "GraphNeighbors",
    "GraphNode",
    "GraphOrigin",
    "GraphPath",
    "GraphStats",
    "NodeQuery",
    "TraversalResult",
    "Walk",
    "name_key",
    "stored_edges",
    "stored_nodes",
]

#: Common entity types (any short word is accepted; these are what extraction asks for).
ENTITY_TYPES: tuple[str, ...] = ("person", "organization", "location", "concept", "event", "object")
#: Common relation types (any short word is accepted).
RELATION_TYPES: tuple[str, ...] = (
    "knows",
    "works_at",
    "located_in",
    "part_of",
    "related_to",
    "created_by",
    "belongs_to",
    "associated_with",
    "causes",
    "precedes",
)
GraphOrigin: TypeAlias = Literal["user", "extracted", "inferred"]
Direction: TypeAlias = Literal["outgoing", "incoming", "both"]

MAX_NAME_CHARS = 500
MAX_TYPE_CHARS = 64
MAX_DESCRIPTION_CHARS = 10_000
#: The most edges a traversal or a path may go from one node (fan-out), and the most hops.
MAX_FAN_OUT = 1_000
MAX_DEPTH = 8


def name_key(name: str) -> str:
    """A name as a lookup key: spacing and case aside (``"  Ana  Lima"`` and ``"ana lima"`` match)."""
    return normalize_key_text(name)


def _text(value: str, limit: int, *, allow_empty: bool = False) -> str:
    if not allow_empty and not value.strip():
        raise ValueError("must not be empty")
    if len(value) > limit:
        raise ValueError(f"must be at most {limit} characters")
    if "\x00" in value or has_surrogate(value):
        raise ValueError("must not contain NUL characters or lone surrogates")
    return value


def _type(value: str) -> str:
    value = _text(value, MAX_TYPE_CHARS).strip().lower()
    if not all(c.isalnum() or c in "_-" for c in value):
        raise ValueError("must be a word of letters, digits, '_' or '-'")
    return value


class _GraphRecord(Record):
    """Fields shared by nodes and edges."""

    id: str
    scope: MemoryScope
    properties: dict[str, Any] = Field(default_factory=dict)
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)
    origin: GraphOrigin = "user"
    evidence: list[ItemEvidence] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime
    updated_at: datetime
    #: 1 when stored, one more with every change: a change given the ``expected_version`` it was
    #: read at fails with ``ConflictError`` once another change came first.
    version: int = Field(default=1, ge=1, le=MAX_INT)

    @field_validator("id")
    @classmethod
    def _id(cls, value: str, info: ValidationInfo) -> str:
        if info.context is TRUSTED:
            return value
        try:
            return tree.check_id("id", value)
        except Exception as exc:  # InvalidArgumentError -> pydantic error naming the field
            raise ValueError(getattr(exc, "problem", str(exc))) from None

    @field_validator("properties", "metadata")
    @classmethod
    def _json(cls, value: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        if info.context is TRUSTED:
            return value
        try:
            return tree.check_metadata("properties", value)
        except Exception as exc:
            raise ValueError(getattr(exc, "problem", str(exc))) from None

    @property
    def agent_id(self) -> str:
        """The agent whose memory this is."""
        return self.scope.agent_id

    @property
    def scope_key(self) -> str:
        """See :func:`~cogitator_memory.items.records.scope_key`."""
        return scope_key(self.scope)

    @property
    def inferred(self) -> bool:
        """Whether the inference pass made it (not told, not extracted)."""
        return self.origin == "inferred"


class GraphNode(_GraphRecord):
    """An entity: ``type`` (``person``, ``location``... any short word), ``name`` and ``aliases``,
    a ``description``, ``properties``, and optionally an ``embedding`` of its name and description
    that :meth:`~cogitator_memory.graph.base.GraphStoreMixin.search_nodes_semantic` compares."""

    type: str
    name: str
    aliases: list[str] = Field(default_factory=list)
    description: str | None = None
    embedding: list[float] | None = None

    @field_validator("type")
    @classmethod
    def _node_type(cls, value: str, info: ValidationInfo) -> str:
        return value if info.context is TRUSTED else _type(value)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str, info: ValidationInfo) -> str:
        return value if info.context is TRUSTED else _text(value, MAX_NAME_CHARS).strip()

    @field_validator("aliases")
    @classmethod
    def _aliases(cls, value: list[str], info: ValidationInfo) -> list[str]:
        if info.context is TRUSTED:
            return value
        return list(dict.fromkeys(_text(v, MAX_NAME_CHARS).strip() for v in value))

    @field_validator("description")
    @classmethod
    def _description(cls, value: str | None, info: ValidationInfo) -> str | None:
        if info.context is TRUSTED or value is None:
            return value
        return _text(value, MAX_DESCRIPTION_CHARS, allow_empty=True)

    @property
    def name_keys(self) -> list[str]:
        """The lookup keys of its name and aliases (see :func:`name_key`), name first."""
        return list(dict.fromkeys(name_key(n) for n in [self.name, *self.aliases]))


class GraphEdge(_GraphRecord):
    """A relation ``source_id --type--> target_id`` between two nodes of one agent; ``label`` says
    it in words, ``weight`` how strong it is; a ``bidirectional`` edge can be walked both ways."""

    source_id: str
    target_id: str
    type: str
    label: str | None = None
    weight: float = Field(default=1.0, ge=0.0)
    bidirectional: bool = False

    @field_validator("type")
    @classmethod
    def _edge_type(cls, value: str, info: ValidationInfo) -> str:
        return value if info.context is TRUSTED else _type(value)

    @field_validator("label")
    @classmethod
    def _label(cls, value: str | None, info: ValidationInfo) -> str | None:
        if info.context is TRUSTED or value is None:
            return value
        return _text(value, MAX_NAME_CHARS, allow_empty=True)


class TraversalResult(Record):
    """What :meth:`~cogitator_memory.graph.base.GraphStoreMixin.traverse` found: the nodes reached
    (start nodes first, then by hops), the hops to each, and the edges between them."""

    nodes: list[GraphNode]
    edges: list[GraphEdge]
    depths: dict[str, int]


class GraphPath(Record):
    """A path: ``nodes[0] --edges[0]--> nodes[1] ...``; ``length`` is the number of edges."""

    nodes: list[GraphNode]
    edges: list[GraphEdge]
    total_weight: float

    @property
    def length(self) -> int:
        """How many edges the path goes along."""
        return len(self.edges)


class GraphNeighbors(Record):
    """The nodes one edge away, and those edges."""

    nodes: list[GraphNode]
    edges: list[GraphEdge]


class GraphStats(Record):
    """Counts of an agent's graph."""

    node_count: int
    edge_count: int
    nodes_by_type: dict[str, int]
    edges_by_type: dict[str, int]
    average_degree: float


_NODE_LIST: TypeAdapter[list[GraphNode]] = TypeAdapter(list[GraphNode])
_EDGE_LIST: TypeAdapter[list[GraphEdge]] = TypeAdapter(list[GraphEdge])


def stored_nodes(array: str | bytes | None) -> list[GraphNode]:
    """The nodes of a JSON array of stored bodies (checked when written, so validated with
    :data:`TRUSTED`): one parse for them all, quicker than one per body. None: no nodes."""
    return [] if array is None else _NODE_LIST.validate_json(array, context=TRUSTED)


def stored_edges(array: str | bytes | None) -> list[GraphEdge]:
    """The edges of a JSON array of stored bodies (see :func:`stored_nodes`)."""
    return [] if array is None else _EDGE_LIST.validate_json(array, context=TRUSTED)


# --- what engines receive ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NodeQuery:
    """Nodes of ``agent_id``; each other field, when set, narrows: scope keys (any of), types,
    a name or alias key (exact), words the name, an alias or the description hold (case aside),
    origins, least confidence. ``limit`` > 0 keeps the first by ``(name key, id)``."""

    agent_id: str
    scope_keys: frozenset[str] | None = None
    types: frozenset[str] | None = None
    name_key: str | None = None
    text: str | None = None
    origins: frozenset[str] | None = None
    min_confidence: float = 0.0
    limit: int = 0

    def matches(self, node: GraphNode) -> bool:
        """Whether ``node`` passes (the reference of every engine)."""
        if node.agent_id != self.agent_id or node.confidence < self.min_confidence:
            return False
        if self.scope_keys is not None and node.scope_key not in self.scope_keys:
            return False
        if self.types is not None and node.type not in self.types:
            return False
        if self.origins is not None and node.origin not in self.origins:
            return False
        if self.name_key is not None and self.name_key not in node.name_keys:
            return False
        if self.text is not None:
            words = self.text.casefold()
            hay = " ".join([node.name, *node.aliases, node.description or ""]).casefold()
            if words not in hay:
                return False
        return True


@dataclass(frozen=True, slots=True)
class EdgeQuery:
    """Edges of ``agent_id``; ``node_ids`` with ``direction`` keeps those leaving (outgoing),
    reaching (incoming) or touching (both) them; ``between`` those from the first to the second
    node; ``types``, origins and least confidence narrow. ``limit`` > 0 keeps the first by id."""

    agent_id: str
    node_ids: frozenset[str] | None = None
    direction: Direction = "both"
    between: tuple[str, str] | None = None
    types: frozenset[str] | None = None
    origins: frozenset[str] | None = None
    min_confidence: float = 0.0
    limit: int = 0

    def matches(self, edge: GraphEdge) -> bool:
        """Whether ``edge`` passes (the reference of every engine)."""
        if edge.agent_id != self.agent_id or edge.confidence < self.min_confidence:
            return False
        if self.types is not None and edge.type not in self.types:
            return False
        if self.origins is not None and edge.origin not in self.origins:
            return False
        if self.between is not None and (edge.source_id, edge.target_id) != self.between:
            return False
        if self.node_ids is not None:
            out = edge.source_id in self.node_ids
            inc = edge.target_id in self.node_ids
            if self.direction == "outgoing" and not out:
                return False
            if self.direction == "incoming" and not inc:
                return False
            if not (out or inc):
                return False
        return True


@dataclass(frozen=True, slots=True)
class Walk:
    """A bounded walk from ``start_ids``: at most ``max_depth`` hops, at most ``fan_out`` edges
    followed from each node (the most confident first, then by edge id), at most ``max_nodes``
    nodes reached (start nodes included), along edges of ``types`` (None: any) whose confidence is
    at least ``min_confidence``, inferred ones only with ``include_inferred``. ``direction`` is
    walked as :meth:`steps` says. With ``scope_keys`` (a ``visible_to`` scope's keys) the walk
    goes only along edges and into nodes whose scope key is one of them (:meth:`sees`)."""

    start_ids: tuple[str, ...]
    max_depth: int = 2
    direction: Direction = "both"
    types: frozenset[str] | None = None
    min_confidence: float = 0.0
    include_inferred: bool = True
    fan_out: int = 50
    max_nodes: int = 1_000
    scope_keys: frozenset[str] | None = None

    def sees(self, record: GraphNode | GraphEdge) -> bool:
        """Whether the walk may go into this node or along this edge for its scope."""
        return self.scope_keys is None or record.scope_key in self.scope_keys

    def follows(self, edge: GraphEdge) -> bool:
        """Whether the walk may go along ``edge`` at all (type, confidence, origin, scope)."""
        if self.types is not None and edge.type not in self.types:
            return False
        if not self.sees(edge):
            return False
        if not self.include_inferred and edge.inferred:
            return False
        return edge.confidence >= self.min_confidence

    def steps(self, edge: GraphEdge, node_id: str) -> str | None:
        """The node the walk reaches from ``node_id`` along ``edge``, or None when it may not go
        that way: along the edge (outgoing), against it (incoming), either (both); a
        bidirectional edge goes both ways whatever the direction."""
        if edge.source_id == node_id and (self.direction != "incoming" or edge.bidirectional):
            return edge.target_id
        if edge.target_id == node_id and (self.direction != "outgoing" or edge.bidirectional):
            return edge.source_id
        return None
