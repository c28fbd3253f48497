"""``GraphExtractor``: entities and relations read out of a conversation by a model, on quotes that are checked.

It is the graph reader of the one extraction pipeline
(:class:`~cogitator_memory.extraction.pipeline.ExtractionPipeline`, which memory item extraction,
:class:`~cogitator_memory.items.extract.MemoryExtractor`, uses too): the entries are cut into
windows (:func:`~cogitator_memory.extraction.windows.plan_windows`), each window is one model call
(:data:`~cogitator_memory.graph.prompts.GRAPH_EXTRACTION_PROMPT`), the JSON array of the answer is
read past any text around it (:func:`~cogitator_memory.models.read_json_array`), an answer cut at
its length limit is continued up to :data:`~cogitator_memory.extraction.pipeline.EXTRACTION_CONTINUATIONS`
times and one holding no array is asked again,
:class:`~cogitator_memory.extraction.pipeline.ExtractionAnswerError` after
:data:`~cogitator_memory.extraction.pipeline.EXTRACTION_ATTEMPTS` tries. Fields and quotes are
read as for items (:mod:`cogitator_memory.items.reading`): each quote names a message the window
showed, and holds when its words are in that message
(:func:`~cogitator_memory.lineage.verify_evidence`, whitespace aside); its trust is that of the
message (:func:`~cogitator_memory.items.reading.trust_of_entry`).

What is written is stricter than for items, since the graph has no "suggested" state:

- an entity or a relation is written only when every quote it gives holds and it comes from a
  source at least as trusted as ``min_trust`` (``user`` by default: what the assistant, another
  user, a tool or a page said is not written);
- a relation is written only when both its ends are entities written from the same window
  (by name or alias, case and spacing aside): one naming an entity the answer did not list, or
  one whose quotes did not hold, writes nothing;
- a window whose answers held no array, or whose answer was still cut after the last
  continuation (:class:`GraphAnswerCutError`), writes nothing.

An entity whose name (or an alias) is a node's of the same type in the same scope adds its quotes,
aliases and confidence to that node; others become nodes of ``origin="extracted"``. A relation
already stored between the same nodes with the same type adds its quotes to that edge (an
inferred one becomes extracted); a node or edge changed by someone else between the read and the
write is a ``ConflictError`` (the window fails, nothing of it stays). A window is three writes of
:class:`~cogitator_memory.graph.base.GraphStoreMixin`, whatever its size: its new nodes
(``add_nodes``), its new edges (``add_edges``), and the changes of the nodes and edges it found
stored (``_update_records``, one atomic write); when one fails, what the window wrote
before it is taken back (nodes and edges added deleted, changed ones put back) and the error
raised. Reading an answer and choosing what may be written is :mod:`.answers`. See
``docs/graph.md``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import tzinfo
from functools import partial
from typing import Any, TypeAlias

from ..errors import InvalidArgumentError, MemoryStoreError
from ..extraction.pipeline import (
    DEFAULT_EXTRACTION_MAX_TOKENS,
    DEFAULT_WINDOW_TOKENS,
    EXTRACTION_CONTINUATIONS,
    ExtractionAnswerError,
    ExtractionPipeline,
    ExtractionWindowError,
    ReportTotals,
    Step,
    WindowCounts,
    WindowStatus,
    count_quotes,
)
from ..extraction.windows import Window
from ..items.records import TRUST_ORDER, MemoryScope, Trust, check_scope
from ..models.records import SummarizeFn
from ..result import MemoryResult, unwrap
from ..threads import tree
from ..threads.records import MemoryEntry
from . import rules
from .answers import (
    DEFAULT_ENTITY_TYPE,
    ExtractedEntity,
    ExtractedRelation,
    GraphAnswer,
    GraphAnswerReader,
    Writable,
    parse_graph_extraction,
    select_writable,
)
from .base import GraphStoreMixin, check_node
from .prompts import GRAPH_ANSWER, GRAPH_EXTRACTION_PROMPT, GRAPH_EXTRACTION_RETRY_PROMPT, graph_continuation_prompt
from .records import GraphEdge, GraphNode, name_key

logger = logging.getLogger("cogitator_memory")


# ----- errors ------------------------------------------------------------------------------------


class GraphAnswerCutError(MemoryStoreError):
    """The model's answer for a window was still cut at its length limit after
    :data:`~cogitator_memory.extraction.pipeline.EXTRACTION_CONTINUATIONS` continuations; the window
    wrote nothing. ``window`` is its number (from 1), ``elements`` how many it had finished."""

    def __init__(self, window: int, elements: int) -> None:
        self.window = window
        self.elements = elements
        super().__init__(
            f"the model's answer for graph extraction window {window} was still cut after "
            f"{EXTRACTION_CONTINUATIONS} continuations ({elements} elements finished); nothing was written"
        )


class GraphWindowError(ExtractionWindowError):
    """:meth:`GraphExtractor.extract` could not read or write a window (it wrote nothing).

    ``window`` is its number (from 1) of ``windows``, ``entry_ids`` the entries it showed and
    ``__cause__`` what failed (:class:`~cogitator_memory.items.extract.ExtractionAnswerError`,
    :class:`GraphAnswerCutError`, the model's or the store's error). ``report`` is the
    :class:`GraphExtractionReport` of the whole call (what the other windows wrote).
    """

    what = "graph extraction"
    report: GraphExtractionReport | None


# ----- the report ----------------------------------------------------------------------------------

GraphWindowStatus: TypeAlias = WindowStatus


@dataclass
class GraphWindowReport(WindowCounts):
    """What happened to one window.

    ``status``: ``read``, ``failed`` (``error`` says why; it wrote nothing) or ``not_read`` (an
    earlier window stopped the call). ``calls``, ``continuations``, ``retries`` and
    ``complete`` count model calls as for items. ``entities_read`` and ``relations_read`` fit;
    ``elements_dropped`` did not (``unknown_messages`` of them named a message not shown);
    ``unverified``, ``untrusted`` and ``unknown_entities`` were read and not written (see
    :class:`Writable`); ``quotes_verified`` and ``quotes_rejected`` count the quotes of what was
    read. ``nodes_added``, ``nodes_updated``, ``edges_added`` and ``edges_updated`` say what was written.
    """

    error: GraphWindowError | None = None
    entities_read: int = 0
    relations_read: int = 0
    elements_dropped: int = 0
    unknown_messages: int = 0
    unverified: int = 0
    untrusted: int = 0
    unknown_entities: int = 0
    quotes_verified: int = 0
    quotes_rejected: int = 0
    nodes_added: int = 0
    nodes_updated: int = 0
    edges_added: int = 0
    edges_updated: int = 0


@dataclass
class GraphExtractionReport(ReportTotals):
    """What one :meth:`GraphExtractor.extract` call did: the nodes and edges written (added or
    updated, as stored, in the order written), a :class:`GraphWindowReport` per window and the
    :class:`GraphWindowError` of every window that failed. Its totals over every window:
    ``calls``, ``continuations``, ``quotes_verified``, ``quotes_rejected`` and ``left_out``."""

    nodes: list[GraphNode] = field(default_factory=list)
    edges: list[GraphEdge] = field(default_factory=list)
    windows: list[GraphWindowReport] = field(default_factory=list)
    errors: list[GraphWindowError] = field(default_factory=list)

    @property
    def left_out(self) -> int:
        """Elements read and not written (unverified, untrusted, naming unknown entities) or
        that did not fit, over every window."""
        return sum(self._sum(n) for n in ("unverified", "untrusted", "unknown_entities", "elements_dropped"))


# ----- the extractor -------------------------------------------------------------------------------


@dataclass
class _Undo:
    """What a window wrote, to take back when a later write of it fails."""

    added_nodes: list[str] = field(default_factory=list)
    added_edges: list[str] = field(default_factory=list)
    changed_nodes: list[tuple[str, dict[str, Any], int]] = field(
        default_factory=list
    )  # id, fields before, version written
    changed_edges: list[tuple[str, dict[str, Any], int]] = field(default_factory=list)


_NODE_FIELDS = ("aliases", "evidence", "confidence", "description")
_EDGE_FIELDS = ("evidence", "confidence", "origin", "label")


class GraphExtractor:
    """Reads entities and relations out of conversation entries with a model and writes them to
    a graph store (see the module docstring).

    ``graph`` is the store (any :class:`~cogitator_memory.graph.base.GraphStoreMixin`:
    ``InMemoryAdapter``, ``SQLiteAdapter``, ``PostgresAdapter`` or your own); ``summarize`` the
    :data:`~cogitator_memory.models.SummarizeFn` reaching the model (asked for ``model``, else its
    own, and for at most ``max_tokens`` tokens an answer); ``window_tokens`` the size of a window;
    ``min_trust`` the least trusted source whose entities and relations are written.
    """

    def __init__(
        self,
        *,
        graph: GraphStoreMixin,
        summarize: SummarizeFn,
        window_tokens: int = DEFAULT_WINDOW_TOKENS,
        max_tokens: int = DEFAULT_EXTRACTION_MAX_TOKENS,
        model: str | None = None,
        min_trust: Trust = "user",
    ) -> None:
        if not isinstance(graph, GraphStoreMixin):
            raise InvalidArgumentError("graph", f"must be a graph store (GraphStoreMixin), got {type(graph).__name__}")
        self._pipeline = ExtractionPipeline(
            summarize=summarize,
            prompt=GRAPH_EXTRACTION_PROMPT,
            retry_prompt=GRAPH_EXTRACTION_RETRY_PROMPT,
            continuation=graph_continuation_prompt,
            answer=GRAPH_ANSWER,
            window_tokens=window_tokens,
            max_tokens=max_tokens,
            model=model,
        )
        if min_trust not in TRUST_ORDER:
            raise InvalidArgumentError("min_trust", f"must be one of {', '.join(TRUST_ORDER)}, got {min_trust!r}")
        self.graph = graph
        self.summarize = summarize
        self.window_tokens = window_tokens
        self.max_tokens = max_tokens
        self.model = model
        self.min_trust: Trust = min_trust

    async def extract(
        self,
        entries: Sequence[MemoryEntry | Mapping[str, Any]],
        *,
        scope: MemoryScope | Mapping[str, Any],
        user_id: str | None = None,
        time_zone: str | tzinfo = "UTC",
    ) -> GraphExtractionReport:
        """Read ``entries`` window by window and write their entities and relations in ``scope``.

        ``user_id`` (default: the scope's user) is the user whose messages count as ``user``;
        ``time_zone`` dates the messages shown. Each window is written once read, or not at all.
        A window whose answers held no array or stayed cut is passed and the next one read; a
        model or store failure stops the call. Either way, once the windows are done, the first
        failure is raised as a :class:`GraphWindowError` whose ``report`` holds what was written.
        """
        checked_scope = check_scope("scope", scope)
        user = tree.check_optional_id("user_id", user_id)
        if user is None:
            user = checked_scope.user_id
        plan = self._pipeline.plan(entries, time_zone)
        report = GraphExtractionReport(
            windows=[GraphWindowReport(w.number, w.entry_ids, w.tokens) for w in plan.windows]
        )

        def steps(window: Window, stats: GraphWindowReport) -> list[Step]:
            reader = GraphAnswerReader(window.entries_by_ref, user)
            return [partial(self._window, window, reader, checked_scope, stats, report)]

        await ExtractionPipeline.run(
            plan.windows,
            report,
            steps,
            passing=(ExtractionAnswerError, GraphAnswerCutError),
            window_error=GraphWindowError,
        )
        return report

    async def _window(
        self,
        window: Window,
        reader: GraphAnswerReader,
        scope: MemoryScope,
        stats: GraphWindowReport,
        report: GraphExtractionReport,
    ) -> None:
        """Read one window and write what may be written of it (all of it, or nothing)."""
        answer = await self._read_window(window, reader, stats)
        chosen = select_writable(answer, min_trust=self.min_trust)
        stats.unverified, stats.untrusted = chosen.unverified, chosen.untrusted
        stats.unknown_entities = chosen.unknown_entities
        await self._write(chosen, scope, stats, report)

    async def _read_window(self, window: Window, reader: GraphAnswerReader, stats: GraphWindowReport) -> GraphAnswer:
        """The window's answer (:meth:`~cogitator_memory.extraction.pipeline.ExtractionPipeline.ask`),
        read; :class:`GraphAnswerCutError` when it was still cut (nothing of it is written)."""
        total = await self._pipeline.ask(window, stats)
        parsed = reader.read(total.elements)
        stats.entities_read, stats.relations_read = len(parsed.entities), len(parsed.relations)
        stats.elements_dropped = total.skipped + parsed.dropped + parsed.unknown_messages
        stats.unknown_messages = parsed.unknown_messages
        count_quotes(stats, [*parsed.entities, *parsed.relations])
        if total.cut:
            raise GraphAnswerCutError(window.number, len(total.elements))
        return parsed

    # ----- writing ---------------------------------------------------------------------------------

    async def _find_node(self, scope: MemoryScope, entity: ExtractedEntity) -> GraphNode | None:
        """The oldest node of the entity's type in exactly ``scope`` named by its name or an alias."""
        for name in (entity.name, *entity.aliases):
            found = unwrap(
                await self.graph.query_nodes(
                    {"agent_id": scope.agent_id, "scope": scope, "name": name, "types": [entity.type]}
                )
            )
            if found:
                return min(found, key=lambda n: n.id)
        return None

    async def _write(
        self, chosen: Writable, scope: MemoryScope, stats: GraphWindowReport, report: GraphExtractionReport
    ) -> None:
        if not chosen.entities:
            return
        new_nodes: list[GraphNode] = []
        node_changes: list[tuple[GraphNode, dict[str, Any]]] = []
        ids: dict[int, str] = {}
        existing: set[str] = set()
        for entity in chosen.entities:
            evidence = [q.evidence() for q in entity.quotes]
            node = await self._find_node(scope, entity)
            if node is None:
                new = check_node(
                    f"nodes[{len(new_nodes)}]",
                    {
                        "scope": scope,
                        "type": entity.type,
                        "name": entity.name,
                        "aliases": list(entity.aliases),
                        "description": entity.description,
                        "confidence": entity.confidence,
                        "origin": "extracted",
                        "evidence": evidence,
                        "metadata": {"trust": entity.trust},
                    },
                )
                new_nodes.append(new)
                ids[id(entity)] = new.id
                continue
            ids[id(entity)] = node.id
            existing.add(node.id)
            keys = set(node.name_keys)
            aliases = [*node.aliases, *(a for a in (entity.name, *entity.aliases) if name_key(a) not in keys)]
            changes = {
                "aliases": list(dict.fromkeys(aliases)),
                "evidence": rules.merged_evidence(node.evidence, evidence),
                "confidence": max(node.confidence, entity.confidence),
                "description": node.description or entity.description,
            }
            changes = {k: v for k, v in changes.items() if v != getattr(node, k)}
            if changes:
                node_changes.append((node, changes))
        undo = _Undo()
        try:
            added = unwrap(await self.graph.add_nodes(new_nodes))
            undo.added_nodes = [n.id for n in added]
            report.nodes.extend(added)
            stats.nodes_added = len(added)
            edge_changes = await self._write_edges(chosen, scope, ids, existing, stats, report, undo)
            await self._write_changes(node_changes, edge_changes, stats, report, undo)
        except BaseException:
            await self._undo(undo)
            raise

    async def _write_edges(
        self,
        chosen: Writable,
        scope: MemoryScope,
        ids: dict[int, str],
        existing: set[str],
        stats: GraphWindowReport,
        report: GraphExtractionReport,
        undo: _Undo,
    ) -> list[tuple[GraphEdge, dict[str, Any]]]:
        """Add the window's new edges; the changes of the edges it finds stored, to write."""
        new_edges: list[dict[str, Any]] = []
        edge_changes: list[tuple[GraphEdge, dict[str, Any]]] = []
        for source, relation, target in chosen.relations:
            source_id, target_id = ids[id(source)], ids[id(target)]
            evidence = [q.evidence() for q in relation.quotes]
            stored: list[GraphEdge] = []
            if source_id in existing and target_id in existing:
                stored = unwrap(
                    await self.graph.query_edges(
                        {"agent_id": scope.agent_id, "between": [source_id, target_id], "types": [relation.type]}
                    )
                )
            if not stored:
                new_edges.append(
                    {
                        "scope": scope,
                        "source_id": source_id,
                        "target_id": target_id,
                        "type": relation.type,
                        "label": relation.label,
                        "confidence": relation.confidence,
                        "origin": "extracted",
                        "evidence": evidence,
                        "metadata": {"trust": relation.trust},
                    }
                )
                continue
            edge = min(stored, key=lambda e: (e.origin == "inferred", e.id))
            changes = {
                "evidence": rules.merged_evidence(edge.evidence, evidence),
                "confidence": max(edge.confidence, relation.confidence),
                "origin": "extracted" if edge.origin == "inferred" else edge.origin,
                "label": edge.label or relation.label,
            }
            changes = {k: v for k, v in changes.items() if v != getattr(edge, k)}
            if changes:
                edge_changes.append((edge, changes))
        added = unwrap(await self.graph.add_edges(new_edges))
        undo.added_edges = [e.id for e in added]
        report.edges.extend(added)
        stats.edges_added = len(added)
        return edge_changes

    async def _write_changes(
        self,
        node_changes: list[tuple[GraphNode, dict[str, Any]]],
        edge_changes: list[tuple[GraphEdge, dict[str, Any]]],
        stats: GraphWindowReport,
        report: GraphExtractionReport,
        undo: _Undo,
    ) -> None:
        """Write the changes of the stored nodes and edges the window found, each at the version
        read (a change made meanwhile is a ConflictError), in one write of the store."""
        nodes, edges = unwrap(
            await self.graph._update_records(
                [(n.id, c, n.version) for n, c in node_changes], [(e.id, c, e.version) for e, c in edge_changes]
            )
        )
        for (node, changes), updated_node in zip(node_changes, nodes, strict=True):
            undo.changed_nodes.append((node.id, {k: getattr(node, k) for k in changes}, updated_node.version))
            report.nodes.append(updated_node)
            stats.nodes_updated += 1
        for (edge, changes), updated_edge in zip(edge_changes, edges, strict=True):
            undo.changed_edges.append((edge.id, {k: getattr(edge, k) for k in changes}, updated_edge.version))
            report.edges.append(updated_edge)
            stats.edges_updated += 1

    async def _undo(self, undo: _Undo) -> None:
        """Take back a window's writes, best effort (a failure here is logged, the first error raised);
        a record changed by someone else since it was written here is left as it is."""
        graph = self.graph
        steps: list[Callable[[], Awaitable[MemoryResult[Any]]]] = [
            *(partial(graph.delete_edge, e) for e in undo.added_edges),
            *(
                partial(graph.update_edge, e, before, expected_version=v)
                for e, before, v in reversed(undo.changed_edges)
            ),
            *(
                partial(graph.update_node, n, before, expected_version=v)
                for n, before, v in reversed(undo.changed_nodes)
            ),
            *(partial(graph.delete_node, n) for n in undo.added_nodes),
        ]
        for step in steps:
            try:
                result = await step()
            except Exception as exc:
                logger.warning("graph extraction could not take back a write: %s", exc)
                continue
            if not result.success:
                logger.warning("graph extraction could not take back a write: %s", result.error)


__all__ = [
    "DEFAULT_ENTITY_TYPE",
    "ExtractedEntity",
    "ExtractedRelation",
    "GraphAnswer",
    "GraphAnswerCutError",
    "GraphExtractionReport",
    "GraphExtractor",
    "GraphWindowError",
    "GraphWindowReport",
    "Writable",
    "parse_graph_extraction",
    "select_writable",
]
