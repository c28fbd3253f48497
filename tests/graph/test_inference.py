"""The inference pass: the rules without a store (infer_edges), then run_inference on real stores."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from graph_extract_world import STORES, open_store

from cogitator_memory import unwrap
from cogitator_memory.errors import InvalidArgumentError
from cogitator_memory.graph.inference import (
    INFERRED_BY_KEY,
    INFERRED_FROM_KEY,
    InferenceRules,
    infer_edges,
    run_inference,
)
from cogitator_memory.graph.records import GraphEdge

T0 = datetime(2026, 1, 1, tzinfo=UTC)
AGENT = {"agent_id": "a"}


def edge(edge_id: str, source: str, kind: str, target: str, confidence: float = 1.0, **extra: Any) -> GraphEdge:
    return GraphEdge.model_validate(
        {
            "id": edge_id,
            "scope": extra.pop("scope", AGENT),
            "source_id": source,
            "target_id": target,
            "type": kind,
            "confidence": confidence,
            "evidence": [{"entry_id": f"entry_{edge_id}", "quote": f"quote {edge_id}"}],
            "created_at": T0,
            "updated_at": T0,
            **extra,
        }
    )


def keys(edges: list[Any]) -> list[tuple[str, str, str]]:
    return sorted(e.key for e in edges)


# ----- the rules -----------------------------------------------------------------------------------


def test_inverses_and_symmetric_relations() -> None:
    made = infer_edges([edge("e1", "ana", "works_at", "acme"), edge("e2", "ana", "knows", "bo")])
    assert keys(made) == [("acme", "employs", "ana"), ("bo", "knows", "ana")]
    employs = next(f for f in made if f.type == "employs")
    assert (employs.rule, employs.inferred_from, employs.confidence) == ("inverse", ("e1",), 1.0)
    assert [q.quote for q in employs.evidence] == ["quote e1"]


def test_a_chain_gives_the_relation_across_it_with_the_quotes_and_confidence_of_both() -> None:
    made = infer_edges(
        [edge("e1", "ana", "located_in", "porto", 0.9), edge("e2", "porto", "part_of", "portugal", 0.8)],
        InferenceRules(inverses={}),
    )
    assert keys(made) == [("ana", "located_in", "portugal")]
    (fact,) = made
    assert (fact.rule, fact.inferred_from, fact.confidence) == ("chain", ("e1", "e2"), 0.72)
    assert [q.quote for q in fact.evidence] == ["quote e1", "quote e2"]
    fields = fact.edge_fields()
    assert fields["origin"] == "inferred"
    assert fields["metadata"] == {INFERRED_FROM_KEY: ["e1", "e2"], INFERRED_BY_KEY: "chain"}


def test_what_is_stated_or_joins_a_node_to_itself_or_walks_both_ways_is_not_made() -> None:
    made = infer_edges(
        [
            edge("e1", "ana", "knows", "bo"),
            edge("e2", "bo", "knows", "ana"),  # the inverse of e1 is stated
            edge("e3", "x", "part_of", "y"),
            edge("e4", "y", "part_of", "x"),  # a loop: x part_of x is not made
            edge("e5", "cy", "sibling_of", "di", bidirectional=True),  # walked both ways already
        ],
        InferenceRules(inverses={"knows": "knows", "sibling_of": "sibling_of"}),
    )
    assert made == []


def test_chains_are_bounded_by_max_hops_and_the_count_by_max_new() -> None:
    line = [edge(f"e{i}", f"n{i}", "part_of", f"n{i + 1}") for i in range(6)]
    two = infer_edges(line, InferenceRules(inverses={}, max_hops=2))
    assert keys(two) == [(f"n{i}", "part_of", f"n{i + 2}") for i in range(5)]
    assert all(f.hops == 2 for f in two)
    three = infer_edges(line, InferenceRules(inverses={}, max_hops=3))
    assert max(f.hops for f in three) == 3 and len(three) == 5 + 4
    capped = infer_edges(line, InferenceRules(inverses={}, max_hops=8, max_new=4))
    assert len(capped) == 4 and all(f.hops == 2 for f in capped)  # the shortest first
    assert len(infer_edges(line, InferenceRules(inverses={}, max_hops=8))) == 15  # every pair i < j - 1


def test_scopes_are_never_joined_and_inferred_edges_never_stand() -> None:
    ana = {"agent_id": "a", "user_id": "ana"}
    made = infer_edges(
        [
            edge("e1", "x", "part_of", "y", scope=ana),
            edge("e2", "y", "part_of", "z"),  # the agent's shared scope
            edge("e3", "p", "part_of", "q", origin="inferred"),
            edge("e4", "q", "part_of", "r"),
        ],
        InferenceRules(inverses={}),
    )
    assert made == []


def test_rules_are_checked() -> None:
    cases: list[tuple[dict[str, Any], str]] = [
        ({"max_hops": 0}, "max_hops"),
        ({"max_hops": 9}, "max_hops"),
        ({"max_new": 0}, "max_new"),
        ({"inverses": {"a": 1}}, "inverses"),
        ({"chains": {"a": "b"}}, "chains"),
    ]
    for kwargs, name in cases:
        with pytest.raises(InvalidArgumentError) as caught:
            InferenceRules(**kwargs)
        assert caught.value.argument == name
    with pytest.raises(InvalidArgumentError):
        infer_edges([{"id": "e"}])  # type: ignore[list-item]


# ----- on a store ------------------------------------------------------------------------------------


@pytest.fixture(params=STORES)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    async with open_store(request.param, tmp_path) as opened:
        unwrap(
            await opened.add_nodes(
                [
                    {"id": n, "name": n.title(), "type": "location", "agent_id": "a"}
                    for n in ("ana", "porto", "pt", "eu")
                ]
            )
        )
        yield opened


async def stored(store: Any) -> list[tuple[str, str, str, str]]:
    edges = unwrap(await store.query_edges({"agent_id": "a"}))
    return sorted((e.source_id, e.type, e.target_id, e.origin) for e in edges)


async def test_run_inference_writes_what_follows_and_keeps_it_in_step(store: Any) -> None:
    unwrap(
        await store.add_edges(
            [
                {
                    "id": "e1",
                    "source_id": "ana",
                    "target_id": "porto",
                    "type": "located_in",
                    "agent_id": "a",
                    "confidence": 0.9,
                    "evidence": [{"entry_id": "entry_1", "quote": "Ana is in Porto"}],
                },
                {"id": "e2", "source_id": "porto", "target_id": "pt", "type": "part_of", "agent_id": "a"},
                {
                    "id": "e3",
                    "source_id": "pt",
                    "target_id": "eu",
                    "type": "part_of",
                    "agent_id": "a",
                    "evidence": [{"entry_id": "entry_3", "quote": "Portugal is in the EU"}],
                },
            ]
        )
    )
    rules = InferenceRules(inverses={"located_in": "location_of"}, max_hops=3)
    report = await run_inference(store, "a", rules=rules)
    assert report.complete and report.deleted == [] and report.updated == []
    inferred = [e for e in await stored(store) if e[3] == "inferred"]
    assert inferred == [
        ("ana", "located_in", "eu", "inferred"),
        ("ana", "located_in", "pt", "inferred"),
        ("eu", "location_of", "ana", "inferred"),  # inverses of what was inferred too
        ("porto", "location_of", "ana", "inferred"),
        ("porto", "part_of", "eu", "inferred"),
        ("pt", "location_of", "ana", "inferred"),
    ]
    far = unwrap(await store.query_edges({"agent_id": "a", "between": ["ana", "eu"]}))[0]
    assert far.confidence == 0.9 and far.metadata[INFERRED_FROM_KEY] == ["e1", "e2", "e3"]
    assert [q.quote for q in far.evidence] == ["Ana is in Porto", "Portugal is in the EU"]

    again = await run_inference(store, "a", rules=rules)  # idempotent
    assert (again.added, again.updated, again.deleted) == ([], [], [])

    walk = unwrap(await store.traverse("ana", max_depth=1, include_inferred=False))
    assert {n.id for n in walk.nodes} == {"ana", "porto"}

    unwrap(await store.update_edge("e1", {"confidence": 0.5}))
    moved = await run_inference(store, "a", rules=rules)
    assert sorted(e.target_id for e in moved.updated if e.source_id == "ana") == ["eu", "pt"]

    unwrap(await store.delete_edge("e2"))  # what most of them stood on goes
    gone = await run_inference(store, "a", rules=rules)
    assert len(gone.deleted) == 5 and gone.added == []
    assert [e for e in await stored(store) if e[3] == "inferred"] == [("porto", "location_of", "ana", "inferred")]


async def test_run_inference_in_one_scope_leaves_the_others(store: Any) -> None:
    ana = {"agent_id": "a", "user_id": "ana"}
    unwrap(
        await store.add_edges(
            [
                {"source_id": "porto", "target_id": "pt", "type": "part_of", "agent_id": "a"},
                {"source_id": "pt", "target_id": "eu", "type": "part_of", "agent_id": "a"},
                {"source_id": "ana", "target_id": "porto", "type": "located_in", "scope": ana},
            ]
        )
    )
    report = await run_inference(store, "a", scope=ana, rules=InferenceRules(inverses={}))
    assert report.added == []  # Ana's one edge chains with nothing of her scope
    report = await run_inference(store, "a", scope=AGENT, rules=InferenceRules(inverses={}))
    assert [(e.source_id, e.target_id, e.scope.user_id) for e in report.added] == [("porto", "eu", None)]


async def test_run_inference_refuses_bad_arguments(store: Any) -> None:
    for call, name in [
        (run_inference(object(), "a"), "graph"),  # type: ignore[arg-type]
        (run_inference(store, ""), "agent_id"),
        (run_inference(store, "a", max_edges=0), "max_edges"),
        (run_inference(store, "a", scope={"agent_id": "b"}), "scope"),
    ]:
        with pytest.raises(InvalidArgumentError) as caught:
            await call
        assert caught.value.argument == name
