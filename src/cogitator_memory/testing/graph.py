"""The conformance suite of knowledge-graph stores, written once and run against every store.

:func:`graph_adapter_conformance_cases` returns named cases; each takes a fresh, connected, empty
store (one that keeps a graph, see :class:`~cogitator_memory.graph.base.GraphAdapter`) and raises
``AssertionError`` saying what differed::

    @pytest.mark.parametrize("case", graph_adapter_conformance_cases(), ids=str)
    async def test_graph_conformance(case, store):
        await case.run(store)
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ..errors import ConflictError, InvalidArgumentError, NotFoundError
from ..graph.checks import check_node_filter
from ..result import unwrap
from .cases import expect_failed

GraphCase = Callable[[Any], Awaitable[None]]
AGENT = "concierge"


@dataclass(frozen=True)
class GraphConformanceCase:
    """One named check of the graph store contract."""

    name: str
    run: GraphCase

    def __str__(self) -> str:
        return self.name


_CASES: list[GraphConformanceCase] = []


def _case(fn: GraphCase) -> GraphCase:
    _CASES.append(GraphConformanceCase(fn.__name__.removeprefix("case_"), fn))
    return fn


def graph_adapter_conformance_cases() -> list[GraphConformanceCase]:
    """Every case of the graph store contract, in a stable order."""
    return list(_CASES)


def _eq(actual: Any, expected: Any, what: str) -> None:
    if actual != expected:
        raise AssertionError(f"{what}: expected {expected!r}, got {actual!r}")


_fails = expect_failed


def _node(node_id: str, name: str, type_: str = "person", **fields: Any) -> dict[str, Any]:
    if "scope" not in fields:
        fields["scope"] = {"agent_id": fields.pop("agent_id", AGENT)}
    return {"id": node_id, "name": name, "type": type_, **fields}


def _edge(edge_id: str, source: str, target: str, type_: str = "knows", **fields: Any) -> dict[str, Any]:
    scope = {"agent_id": fields.pop("agent_id", AGENT)}
    return {"id": edge_id, "source_id": source, "target_id": target, "type": type_, "scope": scope, **fields}


async def _chain(store: Any, count: int, prefix: str = "n") -> list[str]:
    """Nodes n0 -> n1 -> ... (edges e0, e1, ...); their ids."""
    ids = [f"{prefix}{i}" for i in range(count)]
    unwrap(await store.add_nodes([_node(i, f"Node {i}", "concept") for i in ids]))
    unwrap(await store.add_edges([_edge(f"e{prefix}{i}", ids[i], ids[i + 1], "precedes") for i in range(count - 1)]))
    return ids


@_case
async def case_node_round_trip(store: Any) -> None:
    evidence = [{"entry_id": "entry_1", "thread_id": "t1", "quote": "I moved to Lisbon"}]
    node = unwrap(
        await store.add_node(
            {
                "name": "Lisbon",
                "type": "location",
                "aliases": ["Lisboa"],
                "description": "capital",
                "properties": {"country": "PT", "big": 2**62, "nested": {"a": [1, 2]}},
                "confidence": 0.75,
                "origin": "extracted",
                "evidence": evidence,
                "scope": {"agent_id": AGENT, "user_id": "ana"},
                "embedding": [0.5, 0.25],
            }
        )
    )
    got = unwrap(await store.get_node(node.id))
    _eq(got, node, "get_node gives back what add_node stored")
    _eq(got.evidence[0].quote, "I moved to Lisbon", "evidence kept")
    got.properties["country"] = "changed"
    _eq(unwrap(await store.get_node(node.id)).properties["country"], "PT", "the store keeps its own copy")
    _eq(unwrap(await store.get_node("node_missing")), None, "a missing node")
    by_alias = unwrap(await store.get_node_by_name(AGENT, "  LISBOA "))
    _eq(by_alias.id if by_alias else None, node.id, "found by an alias, spacing and case aside")
    _eq(unwrap(await store.get_node_by_name(AGENT, "Porto")), None, "an unknown name")
    _eq(unwrap(await store.get_node_by_name("other", "Lisbon")), None, "another agent's graph")


@_case
async def case_refusals_are_named(store: Any) -> None:
    _fails(
        await store.add_node({"name": " ", "type": "person", "agent_id": AGENT}),
        "empty name",
        InvalidArgumentError,
        "name",
    )
    _fails(
        await store.add_node({"name": "A", "type": "two words", "agent_id": AGENT}),
        "bad type",
        InvalidArgumentError,
        "type",
    )
    _fails(
        await store.add_node({"name": "A", "type": "x", "agent_id": AGENT, "confidence": 2}),
        "confidence",
        InvalidArgumentError,
        "confidence",
    )
    unwrap(await store.add_node(_node("a", "A")))
    _fails(await store.add_nodes([_node("b", "B"), _node("a", "A again")]), "taken id", ConflictError, "a")
    _eq(unwrap(await store.get_node("b")), None, "a refused batch writes nothing")
    _fails(await store.add_edge(_edge("e1", "a", "missing")), "missing end", NotFoundError, "missing")
    _fails(await store.add_edge(_edge("e1", "a", "a")), "self loop", InvalidArgumentError, "target_id")
    unwrap(await store.add_node(_node("z", "Z", agent_id="other")))
    _fails(await store.add_edge(_edge("e1", "a", "z")), "across agents", InvalidArgumentError, "target_id")
    _fails(await store.update_node("missing", {"name": "x"}), "update missing", NotFoundError)
    _fails(await store.update_node("a", {"scope": {"agent_id": "x"}}), "fixed field", InvalidArgumentError, "scope")
    _fails(await store.traverse("a", max_depth=99), "depth bound", InvalidArgumentError, "max_depth")
    _fails(await store.traverse("a", fan_out=0), "fan-out bound", InvalidArgumentError, "fan_out")
    _fails(
        await store.query_nodes({"agent_id": AGENT, "colour": "red"}), "unknown filter", InvalidArgumentError, "colour"
    )


@_case
async def case_update_and_delete(store: Any) -> None:
    unwrap(await store.add_nodes([_node("a", "Ana"), _node("b", "Bo")]))
    unwrap(await store.add_edge(_edge("e1", "a", "b", confidence=0.5)))
    node = unwrap(await store.update_node("a", {"aliases": ["Ana Lima"], "properties": {"age": 30}}))
    _eq(unwrap(await store.get_node("a")), node, "update_node stored")
    _eq(node.created_at <= node.updated_at, True, "updated_at moves")
    found = unwrap(await store.get_node_by_name(AGENT, "ana lima"))
    _eq(found.id if found else None, "a", "a new alias is looked up")
    edge = unwrap(await store.update_edge("e1", {"confidence": 0.9, "label": "met in 2020"}))
    _eq(unwrap(await store.get_edge("e1")), edge, "update_edge stored")
    _eq([e.id for e in unwrap(await store.get_edges_between("a", "b"))], ["e1"], "edges between")
    _eq(unwrap(await store.get_edges_between("b", "a")), [], "direction matters between")
    _eq(unwrap(await store.delete_node("a")), True, "delete a node")
    _eq(unwrap(await store.get_edge("e1")), None, "its edges go with it")
    _eq(unwrap(await store.delete_node("a")), False, "deleting twice")
    unwrap(await store.add_nodes([_node("c", "Cy")]))
    unwrap(await store.add_edge(_edge("e2", "b", "c")))
    _eq(unwrap(await store.delete_edge("e2")), True, "delete an edge")
    _eq([n.id for n in unwrap(await store.query_nodes({"agent_id": AGENT}))], ["b", "c"], "nodes stay")


@_case
async def case_text_filter(store: Any) -> None:
    unwrap(
        await store.add_nodes(
            [
                _node("t1", "Straße", aliases=["Rua Ana"], description='a "quoted" Ünïcode line'),
                _node("t2", "Ab", description="x"),
                _node("t3", "Muster", aliases=["Ssx"]),
                _node("t4", "Ana", agent_id="other"),
            ]
        )
    )

    async def ids(text: str) -> list[str]:
        return sorted(n.id for n in unwrap(await store.query_nodes({"agent_id": AGENT, "text": text})))

    _eq(await ids("STRASSE"), ["t1"], "casefolded (ß is ss)")
    _eq(await ids("SS"), ["t1", "t3"], "two characters")
    _eq(await ids("b"), ["t2"], "one character")
    _eq(await ids("straße rua"), ["t1"], "across the name and an alias")
    _eq(await ids('"quoted" ü'), ["t1"], "quotes and accents")
    _eq(await ids("  rua   ana "), ["t1"], "spacing of the text aside")
    _eq(await ids("rua  ana"), ["t1"], "spaces inside the text")
    _eq(await ids("ruaana"), [], "no such text")
    _eq(await ids("ana"), ["t1"], "only the agent's nodes")
    unwrap(await store.update_node("t1", {"name": "Gasse", "aliases": [], "description": None}))
    _eq(await ids("straße"), [], "an updated node is found by its new text only")
    _eq(await ids("GASSE"), ["t1"], "an updated node by its new name")
    unwrap(await store.delete_nodes(["t3"]))
    _eq(await ids("muster"), [], "a deleted node is gone from the text filter")
    unwrap(await store.add_node(_node("t3", "Muster again")))
    _eq(await ids("muster"), ["t3"], "an id written again")


@_case
async def case_text_filter_finds_what_the_reference_finds(store: Any) -> None:
    rng = random.Random(7)
    alphabet = 'aAbBßSsİi̇ΣσςﬁFI"*().-_%\\ NEAR AND OR ǘ😀'

    def word(low: int, high: int) -> str:
        return "".join(rng.choice(alphabet) for _ in range(rng.randint(low, high)))

    nodes = [
        _node(
            f"r{i}",
            word(1, 12).strip() or "x",
            "concept",
            aliases=[word(4, 4).strip() or "y"],
            description=word(0, 10) or None,
        )
        for i in range(200)
    ]
    stored = unwrap(await store.add_nodes(nodes))
    texts = [n.name[i : i + k] for n in stored for i in range(3) for k in (1, 3, 5)] + ["ss", "SS", "σς", "FI", "ﬁ"]
    for text in dict.fromkeys(t for t in texts if t.strip()):
        query = check_node_filter({"agent_id": AGENT, "text": text})
        expected = sorted(n.id for n in stored if query.matches(n))
        found = sorted(n.id for n in unwrap(await store.query_nodes({"agent_id": AGENT, "text": text})))
        _eq(found, expected, f"the nodes holding {text!r} (as NodeQuery.matches finds them)")


@_case
async def case_find_by_evidence(store: Any) -> None:
    def quotes(*entries: str) -> list[dict[str, Any]]:
        return [{"quote": f"said in {e}", "entry_id": e, "thread_id": "t"} for e in entries]

    unwrap(
        await store.add_nodes(
            [
                _node("q1", "Ana", evidence=quotes("e1")),
                _node("q2", "Bo", evidence=quotes("e2", "e1")),
                _node("q3", "Cy", evidence=quotes("e3")),
                _node("q4", "Di"),
                _node("q5", "Ed", agent_id="other", evidence=quotes("e1")),
            ]
        )
    )
    unwrap(
        await store.add_edges(
            [
                _edge("k1", "q1", "q3", evidence=quotes("e3", "e1")),
                _edge("k2", "q3", "q4", evidence=quotes("e3")),
                _edge("k3", "q2", "q4"),
            ]
        )
    )

    async def found(entries: list[str]) -> tuple[list[str], list[str]]:
        nodes, edges = unwrap(await store.find_by_evidence(AGENT, entries))
        return [n.id for n in nodes], [e.id for e in edges]

    _eq(await found(["e1"]), (["q1", "q2"], ["k1"]), "the nodes and edges quoting an entry, of the agent only")
    _eq(await found(["e3", "e2"]), (["q2", "q3"], ["k1", "k2"]), "quoting any of the entries")
    _eq(await found(["nope"]), ([], []), "no quote of it")
    _eq(await found([]), ([], []), "no entries")
    unwrap(await store.update_node("q1", {"evidence": quotes("e2")}))
    unwrap(await store.update_edge("k1", {"evidence": quotes("e3")}))
    _eq(await found(["e1"]), (["q2"], []), "an update replaces the quotes")
    unwrap(await store.delete_nodes(["q2"]))
    _eq(await found(["e2"]), (["q1"], []), "a deleted node is not found")
    unwrap(await store.delete_nodes(["q3"]))
    _eq(await found(["e3"]), ([], []), "nor the edges that went with a node")
    _fails(await store.find_by_evidence(AGENT, "e1"), "entry ids as one string", InvalidArgumentError, "entry_ids")
    _fails(await store.find_by_evidence(AGENT, [""]), "an empty entry id", InvalidArgumentError, "entry_ids[0]")
    unwrap(await store.clear_graph("other"))
    _eq(unwrap(await store.find_by_evidence("other", ["e1"])), ([], []), "a cleared graph")


@_case
async def case_queries(store: Any) -> None:
    unwrap(
        await store.add_nodes(
            [
                _node("p1", "Ana", description="a painter from Porto"),
                _node("p2", "Bo", confidence=0.4, origin="extracted"),
                _node("l1", "Porto", "location", scope={"agent_id": AGENT, "user_id": "ana"}),
                _node("l2", "Oslo", "location", scope={"agent_id": AGENT, "user_id": "bo"}),
                _node("x", "Ana", agent_id="other"),
            ]
        )
    )

    async def ids(flt: dict[str, Any]) -> list[str]:
        return [n.id for n in unwrap(await store.query_nodes({"agent_id": AGENT, **flt}))]

    _eq(await ids({}), ["p1", "p2", "l2", "l1"], "all of an agent's nodes, by name")
    _eq(await ids({"types": ["location"]}), ["l2", "l1"], "by type")
    _eq(await ids({"visible_to": {"agent_id": AGENT, "user_id": "ana"}}), ["p1", "p2", "l1"], "what a user sees")
    _eq(await ids({"scope": {"agent_id": AGENT, "user_id": "bo"}}), ["l2"], "one scope exactly")
    _eq(await ids({"text": "PORTO"}), ["p1", "l1"], "words in a name or description")
    _eq(await ids({"min_confidence": 0.5}), ["p1", "l2", "l1"], "least confidence")
    _eq(await ids({"origins": ["extracted"]}), ["p2"], "by origin")
    _eq(await ids({"limit": 2}), ["p1", "p2"], "limit")
    for flt in (
        {},
        {"types": ["location"]},
        {"visible_to": {"agent_id": AGENT, "user_id": "ana"}},
        {"scope": {"agent_id": AGENT, "user_id": "bo"}},
        {"text": "PORTO"},
        {"min_confidence": 0.5, "origins": ["user"]},
        {"name": "ana"},
    ):
        counted = unwrap(await store.count_nodes({"agent_id": AGENT, **flt}))
        _eq(counted, len(await ids(flt)), f"count_nodes counts what query_nodes reads: {flt}")
    _eq(unwrap(await store.count_nodes({"agent_id": AGENT, "limit": 1})), 4, "a count takes no limit")
    _fails(
        await store.count_nodes({"agent_id": AGENT, "min_confidence": 2}), "bad", InvalidArgumentError, "min_confidence"
    )
    unwrap(
        await store.add_edges(
            [
                _edge("e1", "p1", "l1", "located_in"),
                _edge("e2", "p2", "p1"),
                _edge("e3", "p2", "l2", "located_in", confidence=0.3),
            ]
        )
    )

    async def edges(flt: dict[str, Any]) -> list[str]:
        return [e.id for e in unwrap(await store.query_edges({"agent_id": AGENT, **flt}))]

    _eq(await edges({}), ["e1", "e2", "e3"], "all edges")
    _eq(await edges({"node_ids": ["p1"]}), ["e1", "e2"], "touching a node")
    _eq(await edges({"node_ids": ["p1"], "direction": "outgoing"}), ["e1"], "leaving a node")
    _eq(await edges({"node_ids": ["p1"], "direction": "incoming"}), ["e2"], "reaching a node")
    _eq(await edges({"types": ["located_in"], "min_confidence": 0.5}), ["e1"], "type and confidence")
    _eq(await edges({"between": ["p2", "l2"]}), ["e3"], "between")


@_case
async def case_traverse_is_bounded(store: Any) -> None:
    ids = await _chain(store, 6)
    result = unwrap(await store.traverse("n0", max_depth=2, direction="outgoing"))
    _eq([n.id for n in result.nodes], ids[:3], "two hops along a chain")
    _eq(result.depths, {"n0": 0, "n1": 1, "n2": 2}, "hops to each")
    _eq([e.id for e in result.edges], ["en0", "en1"], "edges walked")
    _eq(
        [n.id for n in unwrap(await store.traverse("n3", max_depth=2, direction="incoming")).nodes],
        ["n3", "n2", "n1"],
        "against the edges",
    )
    _eq([n.id for n in unwrap(await store.traverse("n3", max_depth=1)).nodes], ["n3", "n2", "n4"], "both ways")
    _eq(
        [
            n.id
            for n in unwrap(
                await store.traverse("n3", max_depth=1, direction="outgoing", relation_types=["knows"])
            ).nodes
        ],
        ["n3"],
        "types",
    )
    _eq(len(unwrap(await store.traverse("n0", max_depth=8, max_nodes=4)).nodes), 4, "max_nodes")
    _eq(unwrap(await store.traverse("missing")).nodes, [], "from a missing node")
    # a star: fan-out keeps the most confident edges
    unwrap(await store.add_nodes([_node(f"s{i}", f"Star {i}") for i in range(5)]))
    unwrap(await store.add_edges([_edge(f"es{i}", "n0", f"s{i}", confidence=0.5 + i / 10) for i in range(5)]))
    star = unwrap(await store.traverse("n0", max_depth=1, direction="outgoing", fan_out=2))
    _eq(sorted(n.id for n in star.nodes), ["n0", "n1", "s4"], "fan_out keeps the most confident")
    unwrap(await store.update_edge("es4", {"origin": "inferred"}))
    no_inferred = unwrap(
        await store.traverse("n0", max_depth=1, direction="outgoing", fan_out=2, include_inferred=False)
    )
    _eq(sorted(n.id for n in no_inferred.nodes), ["n0", "n1", "s3"], "inferred edges left out")
    cycle = unwrap(await store.add_edge(_edge("back", "n5", "n0")))
    around = unwrap(await store.traverse("n0", max_depth=8, direction="outgoing", relation_types=["precedes"]))
    _eq(around.depths, {f"n{i}": i for i in range(6)}, f"a cycle ({cycle.id}) is walked once")


@_case
async def case_bidirectional_edges(store: Any) -> None:
    unwrap(await store.add_nodes([_node("a", "A"), _node("b", "B")]))
    unwrap(await store.add_edge(_edge("e", "a", "b", "married_to", bidirectional=True)))
    _eq(
        [n.id for n in unwrap(await store.traverse("b", max_depth=1, direction="outgoing")).nodes],
        ["b", "a"],
        "walked back",
    )
    neighbors = unwrap(await store.get_neighbors("a", direction="incoming"))
    _eq(([n.id for n in neighbors.nodes], [e.id for e in neighbors.edges]), (["b"], ["e"]), "neighbors")


@_case
async def case_shortest_path(store: Any) -> None:
    ids = await _chain(store, 6)
    unwrap(await store.add_edge(_edge("shortcut", "n1", "n4", weight=2.5)))
    path = unwrap(await store.find_shortest_path("n0", "n5"))
    assert path is not None, "a path exists"
    _eq([n.id for n in path.nodes], ["n0", "n1", "n4", "n5"], "the fewest hops")
    _eq([e.id for e in path.edges], ["en0", "shortcut", "en4"], "its edges")
    _eq((path.length, path.total_weight), (3, 4.5), "length and weight")
    back = unwrap(await store.find_shortest_path("n5", "n0"))
    _eq(back.length if back else None, 3, "against the edges when direction is both")
    _eq(unwrap(await store.find_shortest_path("n5", "n0", direction="outgoing")), None, "not along them")
    _eq(unwrap(await store.find_shortest_path("n0", "n5", max_depth=2)), None, "beyond max_depth")
    same = unwrap(await store.find_shortest_path("n2", "n2"))
    _eq(same.length if same else None, 0, "a node to itself")
    _eq(unwrap(await store.find_shortest_path("n0", "missing")), None, "to a missing node")
    _eq(ids[0], "n0", "chain")


@_case
async def case_shortest_path_ties_and_fan_out(store: Any) -> None:
    unwrap(await store.add_nodes([_node(i, i.upper()) for i in ("a", "b", "c", "d", "x", "y", "z")]))
    unwrap(
        await store.add_edges(
            [
                _edge("e_ab", "a", "b", confidence=0.9),
                _edge("e_ac", "a", "c", confidence=0.5),
                _edge("z_bd", "b", "d"),
                _edge("y_cd", "c", "d"),
                _edge("m_dx", "d", "x"),
                _edge("k_xz", "x", "z"),
                _edge("j_zy", "z", "y"),
                _edge("q_yx", "y", "x", bidirectional=True),
            ]
        )
    )

    async def path(start: str, end: str, **options: Any) -> list[str] | None:
        found = unwrap(await store.find_shortest_path(start, end, **options))
        if found is None:
            return None
        _eq(found.nodes[0].id, start, "a path starts at its start")
        _eq(found.nodes[-1].id, end, "a path ends at its end")
        return [e.id for e in found.edges]

    _eq(await path("a", "d"), ["e_ac", "y_cd"], "of two, the one whose edges from the end are the smallest ids")
    _eq(await path("a", "d", fan_out=1), ["e_ab", "z_bd"], "fan_out: only the most confident edge is followed")
    _eq(await path("a", "d", fan_out=1, direction="incoming"), None, "against every edge there is no way")
    _eq(
        await path("d", "a", direction="incoming"), ["z_bd", "e_ab"], "against the edges, the smallest ids from the end"
    )
    _eq(
        await path("a", "y", direction="outgoing"),
        ["e_ac", "y_cd", "m_dx", "q_yx"],
        "a bidirectional edge, walked back",
    )
    _eq(await path("a", "y", direction="outgoing", max_depth=3), None, "four hops, three allowed")
    _eq(await path("a", "x", relation_types=["likes"]), None, "no edge of that type")
    _eq(await path("a", "d", min_confidence=0.6), ["e_ab", "z_bd"], "least confidence")
    _eq(await path("a", "b", max_depth=1), ["e_ab"], "one hop")


@_case
async def case_merge_keeps_evidence_and_edges(store: Any) -> None:
    quote = {"entry_id": "entry_2", "quote": "Bob is my brother"}
    unwrap(
        await store.add_nodes(
            [
                _node("ana", "Ana"),
                _node("bob", "Bob", evidence=[{"entry_id": "entry_1", "quote": "Bob called"}], properties={"age": 40}),
                _node("rob", "Robert", evidence=[quote], confidence=0.6, properties={"age": 41, "job": "chef"}),
                _node("porto", "Porto", "location"),
            ]
        )
    )
    unwrap(
        await store.add_edges(
            [
                _edge("e1", "ana", "bob", "sibling_of", evidence=[{"quote": "a"}], confidence=0.5),
                _edge("e2", "ana", "rob", "sibling_of", evidence=[{"quote": "b"}], confidence=0.9),
                _edge("e3", "rob", "porto", "located_in"),
                _edge("e4", "bob", "rob", "same_as"),
            ]
        )
    )
    merged = unwrap(await store.merge_nodes("bob", ["rob"]))
    _eq(merged.aliases, ["Robert"], "the source's name becomes an alias")
    _eq([e.quote for e in merged.evidence], ["Bob called", "Bob is my brother"], "evidence of both")
    _eq(merged.properties, {"age": 40, "job": "chef"}, "properties: the target wins")
    _eq(unwrap(await store.get_node("bob")), merged, "stored")
    _eq(unwrap(await store.get_node("rob")), None, "the source is gone")
    edges = {e.id: e for e in unwrap(await store.query_edges({"agent_id": AGENT}))}
    _eq(sorted(edges), ["e1", "e3"], "duplicates and self loops go")
    _eq((edges["e1"].confidence, [q.quote for q in edges["e1"].evidence]), (0.9, ["a", "b"]), "duplicate edges merged")
    _eq((edges["e3"].source_id, edges["e3"].target_id), ("bob", "porto"), "edges re-pointed")
    _fails(await store.merge_nodes("bob", ["nobody"]), "missing source", NotFoundError, "nobody")


@_case
async def case_semantic_search(store: Any) -> None:
    unwrap(
        await store.add_nodes(
            [
                _node("a", "A", embedding=[1.0, 0.0]),
                _node("b", "B", embedding=[0.6, 0.8]),
                _node("c", "C", embedding=[0.0, 1.0], type_="location"),
                _node("d", "D"),
            ]
        )
    )
    found = unwrap(await store.search_nodes_semantic(AGENT, [1.0, 0.1], limit=2))
    _eq([n.id for n, _ in found], ["a", "b"], "nearest first")
    _eq(round(found[0][1], 3), 0.995, "cosine")
    typed = unwrap(await store.search_nodes_semantic(AGENT, [1.0, 0.1], types=["location"]))
    _eq([n.id for n, _ in typed], ["c"], "by type")
    _eq(unwrap(await store.search_nodes_semantic(AGENT, [1.0, 0.0], threshold=0.9))[0][0].id, "a", "threshold")
    _fails(
        await store.search_nodes_semantic(AGENT, "text"),
        "text without a service",
        InvalidArgumentError,
        "embedding_service",
    )


@_case
async def case_versions_guard_changes(store: Any) -> None:
    unwrap(await store.add_nodes([_node("a", "Ana"), _node("b", "Bo")]))
    unwrap(await store.add_edge(_edge("e", "a", "b")))
    _eq(unwrap(await store.get_node("a")).version, 1, "a new node")
    first = unwrap(await store.update_node("a", {"description": "painter"}, expected_version=1))
    _eq(first.version, 2, "a change moves the version on")
    _eq(unwrap(await store.get_node("a")), first, "stored at version 2")
    _fails(
        await store.update_node("a", {"description": "chef"}, expected_version=1),
        "a change from a stale read",
        ConflictError,
        "version 2, not 1",
    )
    _eq(unwrap(await store.get_node("a")).description, "painter", "the refused change wrote nothing")
    _eq(unwrap(await store.update_node("a", {"description": "chef"})).version, 3, "no expected_version: no check")
    _fails(await store.update_node("a", {"version": 9}), "version is the store's", InvalidArgumentError, "version")
    _fails(
        await store.update_node("a", {}, expected_version=0), "a bad version", InvalidArgumentError, "expected_version"
    )
    edge = unwrap(await store.update_edge("e", {"confidence": 0.4}, expected_version=1))
    _eq(edge.version, 2, "edges too")
    _fails(await store.update_edge("e", {"confidence": 0.9}, expected_version=1), "stale edge", ConflictError, "e")
    _eq(unwrap(await store.get_edge("e")).confidence, 0.4, "the stale edge change wrote nothing")
    merged = unwrap(await store.merge_nodes("a", ["b"]))
    _eq(merged.version, 4, "a merge is a change of its target")
    # two changes made from one read: the second is refused whoever calls
    a, b = await asyncio.gather(
        store.update_node("a", {"aliases": ["One"]}, expected_version=4),
        store.update_node("a", {"aliases": ["Two"]}, expected_version=4),
    )
    _eq(sorted([a.success, b.success]), [False, True], "one of two racing changes wins")
    loser = a if not a.success else b
    _eq(loser.error_type is not None and issubclass(loser.error_type, ConflictError), True, "the other conflicts")


@_case
async def case_delete_nodes_in_one_write(store: Any) -> None:
    ids = await _chain(store, 4)
    _eq(unwrap(await store.delete_nodes(["n1", "missing", "n2", "n1"])), ["n1", "n2"], "the ids that existed")
    _eq([n.id for n in unwrap(await store.query_nodes({"agent_id": AGENT}))], [ids[0], ids[3]], "nodes left")
    _eq(unwrap(await store.query_edges({"agent_id": AGENT})), [], "their edges went with them")
    _eq(unwrap(await store.delete_nodes([])), [], "nothing to delete")
    _fails(await store.delete_nodes("n0"), "a bare id", InvalidArgumentError, "node_ids")


@_case
async def case_get_nodes_by_ids(store: Any) -> None:
    ids = await _chain(store, 3)
    got = unwrap(await store.get_nodes([ids[2], "missing", ids[0], ids[2]]))
    _eq([n.id for n in got], [ids[2], ids[0]], "the nodes held, in the order asked, each once")
    _eq(got[1], unwrap(await store.get_node(ids[0])), "each read whole")
    _eq(unwrap(await store.get_nodes([])), [], "no ids")
    _fails(await store.get_nodes(ids[0]), "a bare id", InvalidArgumentError, "node_ids")
    _fails(await store.get_nodes([ids[0], ""]), "an empty id", InvalidArgumentError, "node_ids[1]")


@_case
async def case_walks_keep_to_a_scope(store: Any) -> None:
    ana = {"agent_id": AGENT, "user_id": "ana"}
    bo = {"agent_id": AGENT, "user_id": "bo"}
    unwrap(
        await store.add_nodes(
            [
                _node("me", "Agent"),
                _node("porto", "Porto", "location"),
                _node("ana", "Ana", scope=ana),
                _node("bo", "Bo", scope=bo),
                _node("bo_cat", "Mia", "animal", scope=bo),
                _node("lisbon", "Lisbon", "location"),
            ]
        )
    )
    unwrap(
        await store.add_edges(
            [
                _edge("e1", "me", "ana"),
                _edge("e2", "me", "bo"),
                _edge("e3", "bo", "bo_cat", "owns"),
                _edge("e4", "bo", "porto", "located_in"),
                _edge("e5", "ana", "porto", "located_in"),
                {**_edge("e6", "me", "lisbon", "located_in"), "scope": bo},  # what bo said of shared nodes
            ]
        )
    )

    async def reached(start: str, scope: dict[str, Any] | None, **options: Any) -> dict[str, int]:
        depths: dict[str, int] = unwrap(await store.traverse(start, max_depth=3, visible_to=scope, **options)).depths
        return depths

    _eq(
        await reached("me", None),
        {"me": 0, "ana": 1, "bo": 1, "lisbon": 1, "porto": 2, "bo_cat": 2},
        "no scope: everything",
    )
    _eq(await reached("me", ana), {"me": 0, "ana": 1, "porto": 2}, "ana's walk: her nodes and the shared ones")
    _eq(
        await reached("me", bo),
        {"me": 0, "bo": 1, "lisbon": 1, "porto": 2, "bo_cat": 2},
        "bo's walk: his edge between shared nodes too",
    )
    _eq(await reached("ana", bo), {}, "a start the scope does not see")
    _eq(await reached("me", {"agent_id": AGENT}), {"me": 0}, "the agent's own scope sees no user's")
    walked = unwrap(await store.traverse("me", max_depth=3, visible_to=ana))
    _eq([e.id for e in walked.edges], ["e1", "e5"], "only the edges it sees")
    path = unwrap(await store.find_shortest_path("ana", "porto", visible_to=ana))
    _eq([e.id for e in path.edges] if path else None, ["e5"], "a path within the scope")
    _eq(unwrap(await store.find_shortest_path("me", "bo_cat", visible_to=ana)), None, "none through what it cannot see")
    around = unwrap(await store.find_shortest_path("porto", "me", visible_to=bo))
    _eq([e.id for e in around.edges] if around else None, ["e4", "e2"], "around a hidden node")
    near = unwrap(await store.get_neighbors("me", visible_to=ana))
    _eq(([n.id for n in near.nodes], [e.id for e in near.edges]), (["ana"], ["e1"]), "neighbors in a scope")
    _fails(await store.traverse("me", visible_to={"user_id": "x"}), "a scope without agent", InvalidArgumentError)


@_case
async def case_clear_and_stats(store: Any) -> None:
    await _chain(store, 4)
    unwrap(await store.add_node(_node("p", "Ana")))
    unwrap(await store.add_node(_node("q", "Other", agent_id="other")))
    stats = unwrap(await store.get_graph_stats(AGENT))
    _eq((stats.node_count, stats.edge_count), (5, 3), "counts")
    _eq((stats.nodes_by_type, stats.edges_by_type), ({"concept": 4, "person": 1}, {"precedes": 3}), "by type")
    _eq(stats.average_degree, 1.2, "average degree")
    _eq(unwrap(await store.clear_graph(AGENT)), {"nodes": 5, "edges": 3}, "cleared")
    _eq(unwrap(await store.get_graph_stats(AGENT)).node_count, 0, "nothing left")
    _eq(unwrap(await store.get_node("q")) is not None, True, "other agents keep theirs")


__all__ = ["GraphConformanceCase", "graph_adapter_conformance_cases"]
