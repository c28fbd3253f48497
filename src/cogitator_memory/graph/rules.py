"""Graph rules that need no store: merging nodes and edges, and reading a walk's steps back into paths.

Every engine stores what these return; none of them does I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from ..items.records import ItemEvidence
from .records import GraphEdge, GraphNode, name_key


def node_haystack(node: GraphNode) -> str:
    """What the ``text`` filter of a node query searches in ``node``, casefolded, as
    :meth:`~cogitator_memory.graph.records.NodeQuery.matches` builds it (engines index it)."""
    return " ".join([node.name, *node.aliases, node.description or ""]).casefold()


def merged_evidence(*groups: Iterable[ItemEvidence]) -> list[ItemEvidence]:
    """The quotes of every group, each once (same entry, tool call, file range and words), in order."""
    seen: set[str] = set()
    kept: list[ItemEvidence] = []
    for group in groups:
        for evidence in group:
            key = evidence.model_dump_json(exclude_none=True)
            if key not in seen:
                seen.add(key)
                kept.append(evidence)
    return kept


def merged_properties(*groups: dict[str, Any]) -> dict[str, Any]:
    """The properties of every group; an earlier group wins a key both hold."""
    merged: dict[str, Any] = {}
    for group in reversed(groups):
        merged.update(group)
    return merged


def merge_node_records(target: GraphNode, sources: Sequence[GraphNode], at: datetime) -> GraphNode:
    """``target`` taking in ``sources``: their names become aliases (the target's name stays), their
    properties fill keys it lacks, their quotes join its own, its confidence is the highest, its
    description the first one set, its embedding kept (or the first source's)."""
    aliases: list[str] = []
    keys = {name_key(target.name)}
    for name in [*target.aliases, *(n for s in sources for n in (s.name, *s.aliases))]:
        key = name_key(name)
        if key not in keys:
            keys.add(key)
            aliases.append(name)
    description = target.description or next((s.description for s in sources if s.description), None)
    embedding = target.embedding or next((s.embedding for s in sources if s.embedding), None)
    return target.model_copy(
        update={
            "aliases": aliases,
            "properties": merged_properties(target.properties, *(s.properties for s in sources)),
            "metadata": merged_properties(target.metadata, *(s.metadata for s in sources)),
            "evidence": merged_evidence(target.evidence, *(s.evidence for s in sources)),
            "confidence": max([target.confidence, *(s.confidence for s in sources)]),
            "description": description,
            "embedding": embedding,
            "updated_at": at,
            "version": target.version + 1,
        },
        deep=True,
    )


def edge_key(edge: GraphEdge) -> tuple[str, str, str]:
    """Edges with the same key say the same thing: source, type, target."""
    return (edge.source_id, edge.type, edge.target_id)


def repoint_edges(
    edges: Iterable[GraphEdge], moved: set[str], target_id: str, at: datetime
) -> tuple[list[GraphEdge], list[str]]:
    """The edges touching merged nodes re-pointed to ``target_id``: returns (edges to write, ids to
    delete). An edge that would join the target to itself goes; edges that come to say the same
    thing (see :func:`edge_key`) become one, the first by id, with the quotes of all and the
    highest confidence and weight. Each edge written is one version on."""
    kept: dict[tuple[str, str, str], GraphEdge] = {}
    gone: list[str] = []
    for edge in sorted(edges, key=lambda e: e.id):
        source = target_id if edge.source_id in moved else edge.source_id
        target = target_id if edge.target_id in moved else edge.target_id
        if source == target:
            gone.append(edge.id)
            continue
        moved_edge = edge.model_copy(update={"source_id": source, "target_id": target}, deep=True)
        key = edge_key(moved_edge)
        first = kept.get(key)
        if first is None:
            kept[key] = moved_edge
            continue
        gone.append(edge.id)
        kept[key] = first.model_copy(
            update={
                "evidence": merged_evidence(first.evidence, edge.evidence),
                "confidence": max(first.confidence, edge.confidence),
                "weight": max(first.weight, edge.weight),
                "properties": merged_properties(first.properties, edge.properties),
                "updated_at": at,
            }
        )
    changed = [e.model_copy(update={"updated_at": at, "version": e.version + 1}) for e in kept.values()]
    return changed, gone


def neighbourhood_from_steps(
    steps: Iterable[tuple[str, int, str | None, str | None]], max_nodes: int
) -> tuple[list[str], dict[str, int], list[str]]:
    """What a traversal keeps of a walk's steps ``(node, hops, previous node, edge)``: the first
    ``max_nodes`` nodes by (least hops, id), the least hops to each of them, and the ids (sorted)
    of the edges walked between two of them."""
    steps = list(steps)
    depths: dict[str, int] = {}
    for node, hops, _, _ in steps:
        if hops < depths.get(node, hops + 1):
            depths[node] = hops
    kept = sorted(depths, key=lambda n: (depths[n], n))[:max_nodes]
    if len(kept) < len(depths):
        depths = {n: depths[n] for n in kept}
    edge_ids = sorted({e for node, _, prev, e in steps if e and node in depths and prev in depths})
    return kept, depths, edge_ids


def path_from_steps(steps: Iterable[tuple[str, int, str | None, str | None]], start: str, end: str) -> list[str] | None:
    """The edge ids of a shortest path from ``start`` to ``end`` read from a walk's steps
    ``(node, hops, previous node, edge)``: the least hops to ``end``, then back through a node one
    hop closer (the smallest edge id first, so every engine gives the same path). None if unreached."""
    by_node: dict[str, dict[int, list[tuple[str, str]]]] = {}
    for node, hops, prev, edge in steps:
        if prev is not None and edge is not None:
            by_node.setdefault(node, {}).setdefault(hops, []).append((edge, prev))
    if start == end:
        return []
    reached = by_node.get(end)
    if not reached:
        return None
    hops = min(reached)
    path: list[str] = []
    node = end
    while hops > 0:
        options = sorted(
            (edge, prev)
            for edge, prev in by_node.get(node, {}).get(hops, [])
            if (prev == start and hops == 1) or (hops > 1 and (hops - 1) in by_node.get(prev, {}))
        )
        if not options:
            return None
        edge, node = options[0]
        path.append(edge)
        hops -= 1
    path.reverse()
    return path


__all__ = [
    "edge_key",
    "merge_node_records",
    "merged_evidence",
    "merged_properties",
    "neighbourhood_from_steps",
    "node_haystack",
    "path_from_steps",
    "repoint_edges",
]
