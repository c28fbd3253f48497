"""Graph context: the entities a turn names and their neighbourhood, as blocks of the recall partition.

With ``include_graph_context`` the builder looks up, in the graph store of
``deps.graph_adapter``, the nodes whose name or an alias the turn names (the names
:func:`~cogitator_memory.recall.query.analyze_query` finds, and the turn's single words), walks
``max_depth`` hops from them in the store (``traverse``), keeps at most ``max_nodes`` entities
(the named ones first, then the nearest) of ``entity_types``, and makes one block per entity: its
line and the relations joining it to the entities ranked before it (at most ``max_edges`` in
all). The assembler fits them in the recall partition after recalled turns and semantic hits;
what does not fit is reported in ``dropped.graph_nodes``.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..graph.base import GraphAdapter
from ..graph.records import GraphEdge, GraphNode, name_key
from ..items.records import MemoryScope, scope_key, visible_scope_keys
from ..recall.query import QueryAnalysis
from ..result import unwrap
from ..search import index_terms
from .config import GraphContextOptions
from .records import ContextBlock

#: The heading of the graph section of the memory context.
GRAPH_HEADING = "Knowledge graph:"
#: The most names one build looks up.
MAX_LOOKUPS = 16
_WORDS = re.compile(r"[^\W_][\w'’.\-]*[^\W_]|[^\W_]")


@dataclass(slots=True)
class GraphContextNode:
    """One entity of the graph context: the node, its hops from the nearest named entity (0: the
    turn names it) and the relations its block states (to entities ranked before it)."""

    node: GraphNode
    depth: int
    edges: list[GraphEdge] = field(default_factory=list)


@dataclass(slots=True)
class GraphSelection:
    """What a build read from the graph: the entities in rank order, as blocks (``blocks``), and
    those past ``max_nodes`` (``extra``, left out as ``not-selected``)."""

    blocks: list[ContextBlock] = field(default_factory=list)
    extra: list[ContextBlock] = field(default_factory=list)


@dataclass(slots=True)
class GraphContext:
    """``BuiltContext.graph_context``: the entities sent (``nodes``, in rank order), the relations
    sent (``edges``), the ids of the entities the turn names (``named``) and the section as sent
    (``text``, ``None`` when nothing was sent)."""

    nodes: list[GraphNode] = field(default_factory=list)
    edges: list[GraphEdge] = field(default_factory=list)
    named: list[str] = field(default_factory=list)
    text: str | None = None


def candidate_names(text: str, analysis: QueryAnalysis) -> list[str]:
    """The names to look up: the names the turn mentions, then its single words that are not
    stopwords, without repeats (spacing and case aside), at most :data:`MAX_LOOKUPS`."""
    out: dict[str, str] = {}
    for name in analysis.entities:
        out.setdefault(name_key(name), name)
    for word in _WORDS.findall(text):
        if index_terms(word):
            out.setdefault(name_key(word), word)
    return list(out.values())[:MAX_LOOKUPS]


def node_line(node: GraphNode) -> str:
    """``Name (type; also Alias, ...): description``."""
    head = f"{node.name} ({node.type}"
    if node.aliases:
        head += "; also " + ", ".join(node.aliases)
    head += ")"
    return f"{head}: {node.description}" if node.description else head


def edge_line(edge: GraphEdge, names: dict[str, str]) -> str:
    """``Source -[type]-> Target`` (``<-[type]->`` both ways), ``(inferred)`` when inferred."""
    arrow = f"<-[{edge.type}]->" if edge.bidirectional else f"-[{edge.type}]->"
    line = f"{names[edge.source_id]} {arrow} {names[edge.target_id]}"
    if edge.label:
        line += f" ({edge.label})"
    return line + (" (inferred)" if edge.origin == "inferred" else "")


async def select_graph(
    adapter: GraphAdapter,
    agent_id: str,
    user_id: str | None,
    thread_id: str,
    text: str,
    analysis: QueryAnalysis,
    options: GraphContextOptions,
    count: Any,
) -> GraphSelection:
    """The graph blocks of a turn (see the module docs), of the nodes the scope of the build (the
    agent, the user, the thread) sees; ``count(text)`` counts tokens."""
    visible = {"agent_id": agent_id, "user_id": user_id, "thread_id": thread_id}
    names = candidate_names(text, analysis)
    found = await asyncio.gather(
        *(adapter.query_nodes({"agent_id": agent_id, "name": n, "visible_to": visible}) for n in names)
    )
    named_nodes: dict[str, GraphNode] = {}
    for result in found:
        matches: list[GraphNode] = unwrap(result)
        for node in sorted(matches, key=lambda n: n.id)[:1]:
            named_nodes.setdefault(node.id, node)
    named = list(named_nodes)
    if not named:
        return GraphSelection()
    reach = options.max_nodes * 3 + len(named)
    if options.max_depth > 0:
        walked = unwrap(
            await adapter.traverse(
                named,
                max_depth=options.max_depth,
                include_inferred=options.include_inferred,
                max_nodes=min(reach, 10_000),
            )
        )
        nodes, depths, edges = walked.nodes, walked.depths, walked.edges
    else:
        nodes, depths, edges = list(named_nodes.values()), dict.fromkeys(named, 0), []
    visible_ids = _visible(nodes, agent_id, user_id, thread_id)
    rank = {node_id: i for i, node_id in enumerate(named)}
    chosen = [
        n
        for n in nodes
        if n.id in visible_ids
        and (options.entity_types is None or n.type in options.entity_types)
        and (options.include_inferred or n.origin != "inferred")
    ]
    chosen.sort(key=lambda n: (depths[n.id], rank.get(n.id, len(rank)), n.id))
    return _blocks(chosen, edges, depths, options, count)


def _visible(nodes: Sequence[GraphNode], agent_id: str, user_id: str | None, thread_id: str) -> set[str]:
    """The nodes the build's scope sees (a walk may reach a node narrowed to another user)."""
    sees = MemoryScope(agent_id=agent_id, user_id=user_id, thread_id=thread_id)
    keys = set(visible_scope_keys(sees))
    return {n.id for n in nodes if scope_key(n.scope) in keys}


def _blocks(
    chosen: list[GraphNode],
    edges: list[GraphEdge],
    depths: dict[str, int],
    options: GraphContextOptions,
    count: Any,
) -> GraphSelection:
    names = {n.id: n.name for n in chosen}
    order = {n.id: i for i, n in enumerate(chosen)}
    kept = chosen[: options.max_nodes]
    kept_ids = {n.id for n in kept}
    by_later: dict[str, list[GraphEdge]] = {}
    budget = options.max_edges
    ranked = sorted(
        (e for e in edges if e.source_id in kept_ids and e.target_id in kept_ids),
        key=lambda e: (max(order[e.source_id], order[e.target_id]), -e.confidence, e.id),
    )
    for edge in ranked[:budget]:
        later = edge.source_id if order[edge.source_id] > order[edge.target_id] else edge.target_id
        by_later.setdefault(later, []).append(edge)
    selection = GraphSelection()
    for i, node in enumerate(chosen):
        item = GraphContextNode(node, depths[node.id], by_later.get(node.id, []) if i < options.max_nodes else [])
        lines = [node_line(node), *(f"  - {edge_line(e, names)}" for e in item.edges)]
        body = "\n".join(lines)
        block = ContextBlock("recall", body, int(count(body)) + 2, f"graph:{node.id}", item)
        (selection.blocks if i < options.max_nodes else selection.extra).append(block)
    return selection


def graph_section(blocks: Sequence[ContextBlock]) -> str:
    """The graph section of the memory context from its kept blocks."""
    return GRAPH_HEADING + "\n" + "\n".join(f"- {b.text}" for b in blocks)


def graph_context(blocks: Sequence[ContextBlock]) -> GraphContext:
    """``BuiltContext.graph_context`` from the kept graph blocks."""
    items = [b.item for b in blocks if isinstance(b.item, GraphContextNode)]
    return GraphContext(
        nodes=[i.node.model_copy(deep=True) for i in items],
        edges=[e.model_copy(deep=True) for i in items for e in i.edges],
        named=[i.node.id for i in items if i.depth == 0],
        text=graph_section(blocks) if blocks else None,
    )


__all__ = [
    "GRAPH_HEADING",
    "MAX_LOOKUPS",
    "GraphContext",
    "GraphContextNode",
    "GraphSelection",
    "candidate_names",
    "edge_line",
    "graph_context",
    "graph_section",
    "node_line",
    "select_graph",
]
