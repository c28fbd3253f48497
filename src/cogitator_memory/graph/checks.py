"""The argument checks of the graph calls: records and filters from what a caller gives, each
refusal an ``InvalidArgumentError`` naming the argument (used by :mod:`.base` and by the tools)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from .. import clock
from ..errors import InvalidArgumentError
from ..ids import new_id
from ..items.records import check_scope, scope_key, visible_scope_keys
from ..threads import tree
from .records import Direction, EdgeQuery, GraphEdge, GraphNode, NodeQuery, name_key

NodeInput = GraphNode | Mapping[str, Any]
EdgeInput = GraphEdge | Mapping[str, Any]
#: The most nodes or edges one call may write or read.
MAX_BATCH = 10_000
_DIRECTIONS = ("outgoing", "incoming", "both")
_FIXED = frozenset({"id", "scope", "created_at", "source_id", "target_id", "version"})


def _fields(name: str, value: object, model: type[Any]) -> dict[str, Any]:
    if isinstance(value, model):
        dumped: dict[str, Any] = value.model_dump()
        return dumped
    if not isinstance(value, Mapping):
        raise InvalidArgumentError(name, f"must be a {model.__name__} or a dict, got {type(value).__name__}")
    return dict(value)


def _with_defaults(name: str, data: dict[str, Any], prefix: str) -> dict[str, Any]:
    now = clock.now()
    if "scope" not in data and "agent_id" in data:
        data["scope"] = {"agent_id": data.pop("agent_id")}
    elif "agent_id" in data:
        raise InvalidArgumentError(f"{name}.agent_id", "give agent_id or scope, not both")
    data.setdefault("id", new_id(prefix))
    data.setdefault("created_at", now)
    data.setdefault("updated_at", data["created_at"])
    return data


def check_node(name: str, value: object) -> GraphNode:
    """A :class:`GraphNode` from a record or a dict (``id`` and times filled in when missing;
    ``agent_id`` may stand for ``scope``); ``InvalidArgumentError`` naming the field."""
    try:
        return GraphNode.model_validate(_with_defaults(name, _fields(name, value, GraphNode), "node_"))
    except ValidationError as exc:
        raise tree.validation_error(name, exc) from None


def check_edge(name: str, value: object) -> GraphEdge:
    """A :class:`GraphEdge` from a record or a dict, like :func:`check_node`; an edge from a node
    to itself is refused."""
    try:
        edge = GraphEdge.model_validate(_with_defaults(name, _fields(name, value, GraphEdge), "edge_"))
    except ValidationError as exc:
        raise tree.validation_error(name, exc) from None
    if edge.source_id == edge.target_id:
        raise InvalidArgumentError(f"{name}.target_id", "an edge must join two different nodes")
    return edge


def _changed(name: str, record: Any, changes: object) -> Any:
    if not isinstance(changes, Mapping):
        raise InvalidArgumentError(name, "must be a dict of the fields to change")
    for key in changes:
        if key in _FIXED:
            raise InvalidArgumentError(f"{name}.{key}", "cannot change")
    data = record.model_dump()
    data.update(changes)
    data["updated_at"] = clock.now()
    data["version"] = record.version + 1
    try:
        return type(record).model_validate(data)
    except ValidationError as exc:
        raise tree.validation_error(name, exc) from None


def _list(name: str, value: object) -> list[Any]:
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Sequence):
        raise InvalidArgumentError(name, "must be a list")
    if len(value) > MAX_BATCH:
        raise InvalidArgumentError(name, f"must hold at most {MAX_BATCH} elements, got {len(value)}")
    return list(value)


def _words(name: str, value: object) -> frozenset[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = [value]
    items = _list(name, value)
    if not items or not all(isinstance(v, str) and v.strip() for v in items):
        raise InvalidArgumentError(name, "must be a non-empty list of words")
    return frozenset(v.strip().lower() for v in items)


def _number(name: str, value: object, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise InvalidArgumentError(name, f"must be a number from {low} to {high}")
    return float(value)


def _count(name: str, value: object, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidArgumentError(name, f"must be a whole number from {low} to {high}")
    return value


def _direction(value: object) -> Direction:
    if value not in _DIRECTIONS:
        raise InvalidArgumentError("direction", f"must be one of {', '.join(_DIRECTIONS)}")
    return value  # type: ignore[return-value]


def _scope_keys(value: object, name: str) -> frozenset[str] | None:
    return None if value is None else frozenset(visible_scope_keys(check_scope(name, value)))


def check_node_filter(value: object) -> NodeQuery:
    """A :class:`NodeQuery` from a dict: ``agent_id`` (required), ``visible_to`` (a scope: the nodes
    it sees) or ``scope`` (exactly that scope), ``types``, ``name`` (name or alias, spacing and case
    aside), ``text`` (words in the name, an alias or the description), ``origins``,
    ``min_confidence``, ``limit``."""
    if not isinstance(value, Mapping):
        raise InvalidArgumentError("filter", "must be a dict")
    unknown = set(value) - {
        "agent_id",
        "visible_to",
        "scope",
        "types",
        "name",
        "text",
        "origins",
        "min_confidence",
        "limit",
    }
    if unknown:
        raise InvalidArgumentError(f"filter.{sorted(unknown)[0]}", "is not a filter field")
    agent = tree.check_id("filter.agent_id", value.get("agent_id"))
    keys = _scope_keys(value.get("visible_to"), "filter.visible_to")
    if value.get("scope") is not None:
        if keys is not None:
            raise InvalidArgumentError("filter.scope", "give visible_to or scope, not both")
        keys = frozenset({scope_key(check_scope("filter.scope", value["scope"]))})
    text = value.get("text")
    if text is not None and (not isinstance(text, str) or not text.strip()):
        raise InvalidArgumentError("filter.text", "must be non-empty text")
    name = value.get("name")
    if name is not None and (not isinstance(name, str) or not name.strip()):
        raise InvalidArgumentError("filter.name", "must be non-empty text")
    return NodeQuery(
        agent_id=agent,
        scope_keys=keys,
        types=_words("filter.types", value.get("types")),
        name_key=None if name is None else name_key(name),
        text=None if text is None else " ".join(text.split()),
        origins=_words("filter.origins", value.get("origins")),
        min_confidence=_number("filter.min_confidence", value.get("min_confidence", 0.0), 0.0, 1.0),
        limit=_count("filter.limit", value.get("limit", 0), 0, MAX_BATCH),
    )


def check_edge_filter(value: object) -> EdgeQuery:
    """An :class:`EdgeQuery` from a dict: ``agent_id`` (required), ``node_ids`` with ``direction``,
    ``between`` (source, target), ``types``, ``origins``, ``min_confidence``, ``limit``."""
    if not isinstance(value, Mapping):
        raise InvalidArgumentError("filter", "must be a dict")
    unknown = set(value) - {
        "agent_id",
        "node_ids",
        "direction",
        "between",
        "types",
        "origins",
        "min_confidence",
        "limit",
    }
    if unknown:
        raise InvalidArgumentError(f"filter.{sorted(unknown)[0]}", "is not a filter field")
    node_ids = value.get("node_ids")
    between = value.get("between")
    if between is not None:
        pair = _list("filter.between", between)
        if len(pair) != 2:
            raise InvalidArgumentError("filter.between", "must be (source id, target id)")
        between = (tree.check_id("filter.between[0]", pair[0]), tree.check_id("filter.between[1]", pair[1]))
    return EdgeQuery(
        agent_id=tree.check_id("filter.agent_id", value.get("agent_id")),
        node_ids=None
        if node_ids is None
        else frozenset(
            tree.check_id(f"filter.node_ids[{i}]", v) for i, v in enumerate(_list("filter.node_ids", node_ids))
        ),
        direction=_direction(value.get("direction", "both")),
        between=between,
        types=_words("filter.types", value.get("types")),
        origins=_words("filter.origins", value.get("origins")),
        min_confidence=_number("filter.min_confidence", value.get("min_confidence", 0.0), 0.0, 1.0),
        limit=_count("filter.limit", value.get("limit", 0), 0, MAX_BATCH),
    )


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """The cosine of two vectors of one size (0 when either is all zeros)."""
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def node_text(node: GraphNode) -> str:
    """What a node's embedding is made of: its name, aliases and description."""
    parts = [node.name]
    if node.aliases:
        parts.append(f"(also {', '.join(node.aliases)})")
    if node.description:
        parts.append(f": {node.description}")
    return " ".join(parts)


__all__ = [
    "MAX_BATCH",
    "EdgeInput",
    "NodeInput",
    "check_edge",
    "check_edge_filter",
    "check_node",
    "check_node_filter",
    "cosine",
    "node_text",
]
