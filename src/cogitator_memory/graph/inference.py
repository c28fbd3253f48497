"""The inference pass: relations that follow from the stated ones, kept as edges marked inferred.

Two kinds of rule (:class:`InferenceRules`):

- **inverse**: ``a --works_at--> b`` gives ``b --employs--> a``; a type that is its own inverse
  (``knows``, ``sibling_of``...) is symmetric and gives the same type back.
- **chain** (transitive): ``a --located_in--> b --part_of--> c`` gives ``a --located_in--> c``;
  ``(part_of, part_of) -> part_of`` is plain transitivity.

:func:`infer_edges` works out, without I/O, every relation the rules give from a set of stated
edges (those of origin ``user`` or ``extracted``), bounded: a relation stands on at most
``max_hops`` stated edges, and at most ``max_new`` relations are made (the ones standing on fewer
edges first). Each keeps the quotes of the edges it stands on, their ids
(``metadata["inferred_from"]``), the rule (``metadata["inferred_by"]``) and the product of their
confidences. Relations only join edges of one scope, so an inferred edge is never seen by a user
who could not see what it stands on. A relation already stated, a bidirectional edge's inverse
and a relation of a node to itself are not made.

:func:`run_inference` brings a store's inferred edges to what :func:`infer_edges` gives for an
agent (or one scope): it adds the missing ones, updates those whose confidence or quotes moved and
deletes those nothing stands on any more (an edge deleted, a quote purged). Inferred edges are
derived data: the pass is idempotent, so one that fails part of the way is put right by the next.
Walks and the graph context skip them with ``include_inferred=False``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidArgumentError
from ..items.records import ItemEvidence, MemoryScope, check_scope, scope_key
from ..result import unwrap
from ..threads import tree
from . import rules as graph_rules
from .base import MAX_BATCH, GraphStoreMixin
from .records import GraphEdge

#: Inverse relation types: a type that maps to itself is symmetric.
DEFAULT_INVERSES: Mapping[str, str] = {
    "knows": "knows",
    "sibling_of": "sibling_of",
    "married_to": "married_to",
    "friend_of": "friend_of",
    "related_to": "related_to",
    "associated_with": "associated_with",
    "parent_of": "child_of",
    "child_of": "parent_of",
    "works_at": "employs",
    "employs": "works_at",
    "part_of": "has_part",
    "has_part": "part_of",
    "located_in": "location_of",
    "location_of": "located_in",
    "created_by": "created",
    "created": "created_by",
    "belongs_to": "owns",
    "owns": "belongs_to",
    "precedes": "follows",
    "follows": "precedes",
    "causes": "caused_by",
    "caused_by": "causes",
}
#: Chain rules ``(first, second) -> result``: ``a -first-> b -second-> c`` gives ``a -result-> c``.
DEFAULT_CHAINS: Mapping[tuple[str, str], str] = {
    ("part_of", "part_of"): "part_of",
    ("located_in", "located_in"): "located_in",
    ("located_in", "part_of"): "located_in",
    ("works_at", "part_of"): "works_at",
    ("precedes", "precedes"): "precedes",
    ("has_part", "has_part"): "has_part",
    ("location_of", "location_of"): "location_of",
}
#: The most stated edges an inferred one stands on, and the most a pass makes.
DEFAULT_MAX_HOPS = 3
DEFAULT_MAX_NEW = 1_000
INFERRED_FROM_KEY = "inferred_from"
INFERRED_BY_KEY = "inferred_by"


@dataclass(frozen=True)
class InferenceRules:
    """The rules of the pass: ``inverses`` (type -> inverse type), ``chains`` ((first, second) ->
    result), ``max_hops`` (1 to 8: the most stated edges one inferred edge stands on; 1 allows
    inverses only) and ``max_new`` (the most edges one pass makes, 1 to 10,000)."""

    inverses: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_INVERSES))
    chains: Mapping[tuple[str, str], str] = field(default_factory=lambda: dict(DEFAULT_CHAINS))
    max_hops: int = DEFAULT_MAX_HOPS
    max_new: int = DEFAULT_MAX_NEW

    def __post_init__(self) -> None:
        for name, value, high in (("max_hops", self.max_hops, 8), ("max_new", self.max_new, MAX_BATCH)):
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
                raise InvalidArgumentError(name, f"must be a whole number from 1 to {high}, got {value!r}")
        if not isinstance(self.inverses, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in self.inverses.items()
        ):
            raise InvalidArgumentError("inverses", "must map relation types to relation types")
        if not isinstance(self.chains, Mapping) or not all(
            isinstance(k, tuple) and len(k) == 2 and all(isinstance(t, str) for t in k) and isinstance(v, str)
            for k, v in self.chains.items()
        ):
            raise InvalidArgumentError("chains", "must map (type, type) pairs to relation types")


@dataclass(frozen=True)
class InferredEdge:
    """A relation the rules give: ``source_id --type--> target_id`` in ``scope``, standing on the
    stated edges ``inferred_from`` (their ids, in the order of the chain) through ``rule``
    (``inverse`` or ``chain``), with the product of their confidences and their quotes."""

    source_id: str
    type: str
    target_id: str
    scope: MemoryScope
    confidence: float
    evidence: tuple[ItemEvidence, ...]
    inferred_from: tuple[str, ...]
    rule: str

    @property
    def key(self) -> tuple[str, str, str]:
        """Source, type, target (see :func:`~cogitator_memory.graph.rules.edge_key`)."""
        return (self.source_id, self.type, self.target_id)

    @property
    def hops(self) -> int:
        """How many stated edges it stands on."""
        return len(self.inferred_from)

    def edge_fields(self) -> dict[str, Any]:
        """The fields of the edge that stores it (``origin="inferred"``)."""
        return {
            "scope": self.scope,
            "source_id": self.source_id,
            "target_id": self.target_id,
            "type": self.type,
            "confidence": self.confidence,
            "origin": "inferred",
            "evidence": list(self.evidence),
            "metadata": {INFERRED_FROM_KEY: list(self.inferred_from), INFERRED_BY_KEY: self.rule},
        }


def _better(a: InferredEdge, b: InferredEdge) -> bool:
    """Whether ``a`` beats ``b`` for the same key: more confident, then fewer hops, then ids."""
    return (-a.confidence, a.hops, a.inferred_from) < (-b.confidence, b.hops, b.inferred_from)


def _infer_group(edges: list[GraphEdge], config: InferenceRules) -> tuple[list[InferredEdge], bool]:
    """Semi-naive rounds: each round joins only what the last one made with what is known, every
    candidate of a round offered shortest first, so a capped pass keeps the shortest chains."""
    scope = edges[0].scope
    stated = {graph_rules.edge_key(e) for e in edges}
    stated |= {(e.target_id, e.type, e.source_id) for e in edges if e.bidirectional}
    bidirectional = {graph_rules.edge_key(e) for e in edges if e.bidirectional}
    facts: dict[tuple[str, str, str], InferredEdge] = {}
    by_source: dict[tuple[str, str], set[tuple[str, str, str]]] = defaultdict(set)
    by_target: dict[tuple[str, str], set[tuple[str, str, str]]] = defaultdict(set)

    def know(fact: InferredEdge) -> None:
        facts[fact.key] = fact
        by_source[(fact.source_id, fact.type)].add(fact.key)
        by_target[(fact.target_id, fact.type)].add(fact.key)

    for edge in sorted(edges, key=lambda e: e.id):
        fact = InferredEdge(
            edge.source_id,
            edge.type,
            edge.target_id,
            scope,
            edge.confidence,
            tuple(edge.evidence),
            (edge.id,),
            "stated",
        )
        if fact.key not in facts or _better(fact, facts[fact.key]):
            know(fact)
    seconds: dict[str, list[tuple[str, str]]] = defaultdict(list)
    firsts: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for (first, second), result in config.chains.items():
        seconds[first].append((second, result))
        firsts[second].append((first, result))
    made: dict[tuple[str, str, str], InferredEdge] = {}
    capped = False

    def offer(candidate: InferredEdge) -> bool:
        nonlocal capped
        key = candidate.key
        old = made.get(key)
        if old is None and len(made) >= config.max_new:
            capped = True
            return False
        if old is not None and not _better(candidate, old):
            return False
        made[key] = candidate
        know(candidate)
        return True

    def chain(a: InferredEdge, b: InferredEdge, result: str, out: list[InferredEdge]) -> None:
        if a.source_id == b.target_id or a.hops + b.hops > config.max_hops:
            return
        if (a.source_id, result, b.target_id) in stated or set(a.inferred_from) & set(b.inferred_from):
            return
        out.append(
            InferredEdge(
                a.source_id,
                result,
                b.target_id,
                scope,
                round(a.confidence * b.confidence, 6),
                tuple(graph_rules.merged_evidence(a.evidence, b.evidence)),
                a.inferred_from + b.inferred_from,
                "chain",
            )
        )

    frontier = sorted(facts.values(), key=lambda f: f.key)
    # every fact stands on at most max_hops edges, and a candidate is taken only when new or
    # better, so rounds end; the bound is a guard
    for _ in range(4 * config.max_hops):
        candidates: list[InferredEdge] = []
        for fact in frontier:
            other = config.inverses.get(fact.type)
            if (
                other is not None
                and fact.key not in bidirectional
                and (fact.target_id, other, fact.source_id) not in stated
            ):
                candidates.append(
                    InferredEdge(
                        fact.target_id,
                        other,
                        fact.source_id,
                        scope,
                        fact.confidence,
                        fact.evidence,
                        fact.inferred_from,
                        "inverse",
                    )
                )
            for second, result in seconds.get(fact.type, ()):
                for key in sorted(by_source.get((fact.target_id, second), ())):
                    chain(fact, facts[key], result, candidates)
            for first, result in firsts.get(fact.type, ()):
                for key in sorted(by_target.get((fact.source_id, first), ())):
                    chain(facts[key], fact, result, candidates)
        candidates.sort(key=lambda f: (f.hops, -f.confidence, f.key, f.inferred_from))
        frontier = [c for c in candidates if offer(c)]
        if not frontier:
            break
    return list(made.values()), capped


def infer_edges(edges: Iterable[GraphEdge], rules: InferenceRules | None = None) -> list[InferredEdge]:
    """The relations ``rules`` (default :class:`InferenceRules`) give from ``edges``, as the
    module docstring says: inferred edges among ``edges`` are left out of what stands, and
    relations join edges of one scope only. At most ``max_new`` (those made in earlier rounds,
    on fewer edges, first), ordered by scope and key."""
    return _infer(edges, rules)[0]


def _infer(edges: Iterable[GraphEdge], rules: InferenceRules | None) -> tuple[list[InferredEdge], bool]:
    chosen = rules or InferenceRules()
    if not isinstance(chosen, InferenceRules):
        raise InvalidArgumentError("rules", f"must be InferenceRules, got {type(chosen).__name__}")
    groups: dict[str, list[GraphEdge]] = defaultdict(list)
    for edge in edges:
        if not isinstance(edge, GraphEdge):
            raise InvalidArgumentError("edges", f"must be GraphEdge records, got {type(edge).__name__}")
        if not edge.inferred:
            groups[edge.scope_key].append(edge)
    made: list[InferredEdge] = []
    capped = False
    for key in sorted(groups):
        group, cut = _infer_group(groups[key], chosen)
        made.extend(group)
        capped = capped or cut
    made.sort(key=lambda f: (f.hops, -f.confidence, f.key))
    capped = capped or len(made) > chosen.max_new
    kept = made[: chosen.max_new]
    kept.sort(key=lambda f: (scope_key(f.scope), f.key))
    return kept, capped


@dataclass
class InferenceReport:
    """What :func:`run_inference` did: inferred edges ``added``, ``updated`` and ``deleted`` (as
    stored, and ids); ``complete`` is false when the read of the agent's stated edges reached
    ``max_edges`` (the pass used the first by id and deleted nothing) or the rules gave more than
    ``max_new``."""

    added: list[GraphEdge] = field(default_factory=list)
    updated: list[GraphEdge] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    complete: bool = True


async def run_inference(
    graph: GraphStoreMixin,
    agent_id: str,
    *,
    scope: MemoryScope | Mapping[str, Any] | None = None,
    rules: InferenceRules | None = None,
    max_edges: int = MAX_BATCH,
) -> InferenceReport:
    """Bring ``graph``'s inferred edges of ``agent_id`` (of exactly ``scope`` when given) to what
    :func:`infer_edges` gives from its stated edges (at most ``max_edges`` of them read), as the
    module docstring says. Store failures raise (see :func:`~cogitator_memory.unwrap`)."""
    if not isinstance(graph, GraphStoreMixin):
        raise InvalidArgumentError("graph", f"must be a graph store (GraphStoreMixin), got {type(graph).__name__}")
    agent = tree.check_id("agent_id", agent_id)
    chosen = rules or InferenceRules()
    if isinstance(max_edges, bool) or not isinstance(max_edges, int) or not 1 <= max_edges <= MAX_BATCH:
        raise InvalidArgumentError("max_edges", f"must be a whole number from 1 to {MAX_BATCH}")
    key = None
    if scope is not None:
        checked = check_scope("scope", scope)
        if checked.agent_id != agent:
            raise InvalidArgumentError("scope", "must be a scope of agent_id")
        key = scope_key(checked)
    stated = unwrap(await graph.query_edges({"agent_id": agent, "origins": ["user", "extracted"], "limit": max_edges}))
    report = InferenceReport(complete=len(stated) < max_edges)  # at the limit, more may be left unread
    stated = [e for e in stated if key is None or e.scope_key == key]
    wanted, capped = _infer(stated, chosen)
    report.complete = report.complete and not capped
    stored = unwrap(await graph.query_edges({"agent_id": agent, "origins": ["inferred"]}))
    stored_by_key: dict[tuple[str, tuple[str, str, str]], GraphEdge] = {}
    for edge in sorted(stored, key=lambda e: e.id):
        if key is None or edge.scope_key == key:
            stored_by_key.setdefault((edge.scope_key, graph_rules.edge_key(edge)), edge)
    adds: list[dict[str, Any]] = []
    wanted_keys = set()
    for fact in wanted:
        where = (scope_key(fact.scope), fact.key)
        wanted_keys.add(where)
        old = stored_by_key.get(where)
        fields = fact.edge_fields()
        if old is None:
            adds.append(fields)
            continue
        changes = {k: fields[k] for k in ("confidence", "evidence", "metadata") if fields[k] != getattr(old, k)}
        if changes:
            report.updated.append(unwrap(await graph.update_edge(old.id, changes, expected_version=old.version)))
    if adds:
        report.added = unwrap(await graph.add_edges(adds))
    if report.complete:
        for where, edge in stored_by_key.items():
            if where not in wanted_keys:
                unwrap(await graph.delete_edge(edge.id))
                report.deleted.append(edge.id)
        # an inferred edge of the same key as another (a race) goes too
        for edge in stored:
            if (key is None or edge.scope_key == key) and stored_by_key[
                (edge.scope_key, graph_rules.edge_key(edge))
            ] is not edge:
                unwrap(await graph.delete_edge(edge.id))
                report.deleted.append(edge.id)
    return report


__all__ = [
    "DEFAULT_CHAINS",
    "DEFAULT_INVERSES",
    "DEFAULT_MAX_HOPS",
    "DEFAULT_MAX_NEW",
    "INFERRED_BY_KEY",
    "INFERRED_FROM_KEY",
    "InferenceReport",
    "InferenceRules",
    "InferredEdge",
    "infer_edges",
    "run_inference",
]
