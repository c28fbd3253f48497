"""Graph context in the context builder: the entities the turn names and their neighbourhood, in
the recall partition, on the in-process store and SQLite (each keeps threads and a graph)."""

from __future__ import annotations

from typing import Any

import pytest
from ctx_helpers import conversation

from cogitator_memory import InMemoryAdapter, unwrap
from cogitator_memory.context import ContextBuilder
from cogitator_memory.errors import InvalidArgumentError
from cogitator_memory.threads.base import BaseMemoryAdapter

AGENT = "concierge"


async def seed(store: Any) -> str:
    thread = unwrap(await store.create_thread(AGENT))
    unwrap(
        await store.add_nodes(
            [
                {"id": "me", "name": "User", "type": "person", "agent_id": AGENT},
                {"id": "ana", "name": "Ana", "type": "person", "description": "the user's sister", "agent_id": AGENT},
                {"id": "porto", "name": "Porto", "type": "location", "aliases": ["Oporto"], "agent_id": AGENT},
                {"id": "portugal", "name": "Portugal", "type": "location", "agent_id": AGENT},
                {"id": "bo-cat", "name": "Mia", "type": "animal", "scope": {"agent_id": AGENT, "user_id": "bo"}},
                {"id": "other", "name": "Ana", "type": "person", "agent_id": "someone-else"},
            ]
        )
    )
    unwrap(
        await store.add_edges(
            [
                {
                    "id": "e1",
                    "source_id": "me",
                    "target_id": "ana",
                    "type": "sibling_of",
                    "bidirectional": True,
                    "agent_id": AGENT,
                },
                {"id": "e2", "source_id": "ana", "target_id": "porto", "type": "located_in", "agent_id": AGENT},
                {"id": "e3", "source_id": "porto", "target_id": "portugal", "type": "part_of", "agent_id": AGENT},
                {
                    "id": "e4",
                    "source_id": "ana",
                    "target_id": "portugal",
                    "type": "located_in",
                    "origin": "inferred",
                    "agent_id": AGENT,
                },
                {
                    "id": "e5",
                    "source_id": "porto",
                    "target_id": "bo-cat",
                    "type": "home_of",
                    "scope": {"agent_id": AGENT, "user_id": "bo"},
                },
            ]
        )
    )
    return str(thread.id)


def builder(store: Any, **options: Any) -> ContextBuilder:
    config: dict[str, Any] = {"include_graph_context": True, "graph_context_options": options}
    return ContextBuilder(config, {"memory_adapter": store, "graph_adapter": store})


FULL = """<memory_context>
Knowledge graph:
- Ana (person): the user's sister
- User (person)
  - User <-[sibling_of]-> Ana
- Porto (location; also Oporto)
  - Ana -[located_in]-> Porto
- Portugal (location)
  - Porto -[part_of]-> Portugal
  - Ana -[located_in]-> Portugal (inferred)
</memory_context>"""


async def test_the_named_entity_and_its_neighbourhood_are_sent(memory: BaseMemoryAdapter) -> None:
    thread = await seed(memory)
    built = await builder(memory).build(thread, current_input="Where does Ana live these days?", max_tokens=2000)
    assert built.memory_context == FULL
    assert built.messages[-1].content == FULL
    graph = built.graph_context
    assert graph is not None and graph.text is not None and graph.text in FULL
    assert [n.id for n in graph.nodes] == ["ana", "me", "porto", "portugal"]
    assert sorted(e.id for e in graph.edges) == ["e1", "e2", "e3", "e4"]
    assert graph.named == ["ana"]
    assert built.metadata.graph_nodes_included == 4 and built.metadata.graph_edges_included == 4
    assert built.partitions["recall"] > 0 and not built.errors and not built.dropped.graph_nodes


async def test_an_alias_in_lower_case_names_the_entity(memory: BaseMemoryAdapter) -> None:
    thread = await seed(memory)
    built = await builder(memory, max_depth=1, include_inferred=False).build(
        thread, current_input="is oporto far from the sea?", max_tokens=2000
    )
    assert built.memory_context == (
        "<memory_context>\nKnowledge graph:\n- Porto (location; also Oporto)\n- Ana (person): the user's sister\n"
        "  - Ana -[located_in]-> Porto\n- Portugal (location)\n  - Porto -[part_of]-> Portugal\n</memory_context>"
    )
    assert built.graph_context is not None and built.graph_context.named == ["porto"]


async def test_a_user_sees_their_own_entities_and_not_another_agents(memory: BaseMemoryAdapter) -> None:
    thread = await seed(memory)
    built = await builder(memory, max_depth=1, entity_types=["animal", "location"]).build(
        thread, user_id="bo", agent_id=AGENT, current_input="How is Mia doing in Porto?", max_tokens=2000
    )
    assert built.memory_context == (
        "<memory_context>\nKnowledge graph:\n- Mia (animal)\n- Porto (location; also Oporto)\n"
        "  - Porto -[home_of]-> Mia\n- Portugal (location)\n  - Porto -[part_of]-> Portugal\n</memory_context>"
    )
    other = await builder(memory, max_depth=1).build(thread, current_input="How is Mia doing?", max_tokens=2000)
    assert other.memory_context is None and other.graph_context is not None and other.graph_context.nodes == []


async def test_past_max_nodes_and_max_edges_is_left_out_and_reported(memory: BaseMemoryAdapter) -> None:
    thread = await seed(memory)
    built = await builder(memory, max_nodes=2, max_edges=0).build(
        thread, current_input="Tell me about Ana", max_tokens=2000
    )
    assert built.memory_context == (
        "<memory_context>\nKnowledge graph:\n- Ana (person): the user's sister\n- User (person)\n</memory_context>"
    )
    assert [n.id for n in built.dropped.graph_nodes] == ["porto", "portugal"]
    assert [(b.partition, b.reason, b.source_id) for b in built.dropped.blocks] == [
        ("recall", "not-selected", "graph:porto"),
        ("recall", "not-selected", "graph:portugal"),
    ]
    assert built.metadata.graph_nodes_included == 2 and built.metadata.graph_edges_included == 0


async def test_what_the_recall_share_cannot_hold_is_dropped_for_budget(memory: BaseMemoryAdapter) -> None:
    thread = await seed(memory)
    await conversation(memory, thread, [f"message number {i} about the trip planning" for i in range(30)])
    built = await builder(memory).build(
        thread, current_input="Where does Ana live?", max_tokens=200, reserve_tokens=100
    )
    kept = built.graph_context
    assert kept is not None and kept.nodes and built.dropped.graph_nodes
    assert [n.id for n in kept.nodes] + [n.id for n in built.dropped.graph_nodes] == ["ana", "me", "porto", "portugal"]
    graph_drops = [b for b in built.dropped.blocks if b.partition == "recall"]
    assert [b.source_id for b in graph_drops] == [f"graph:{n.id}" for n in built.dropped.graph_nodes]
    assert {b.reason for b in graph_drops} <= {"budget", "oversized"}
    assert built.token_count <= 100
    assert built.metadata.graph_nodes_included == len(kept.nodes)


async def test_a_turn_naming_no_entity_sends_no_graph(memory: BaseMemoryAdapter) -> None:
    thread = await seed(memory)
    built = await builder(memory).build(thread, current_input="what should I cook tonight?", max_tokens=2000)
    assert built.memory_context is None and built.graph_context is not None
    assert built.graph_context.nodes == [] and built.metadata.graph_nodes_included == 0
    silent = await builder(memory).build(thread, max_tokens=2000)
    assert silent.graph_context is not None and silent.graph_context.nodes == []


async def test_a_failing_graph_store_is_reported_not_raised(memory: BaseMemoryAdapter) -> None:
    thread = await seed(memory)
    closed = InMemoryAdapter()  # never connected: every call fails
    built = await ContextBuilder(
        {"include_graph_context": True}, {"memory_adapter": memory, "graph_adapter": closed}
    ).build(thread, current_input="Where does Ana live?", max_tokens=2000)
    assert [e.source for e in built.errors] == ["graph"] and built.memory_context is None


async def test_graph_context_without_a_graph_store_is_refused(memory: BaseMemoryAdapter) -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        ContextBuilder({"include_graph_context": True}, {"memory_adapter": memory})
    assert caught.value.argument == "deps.graph_adapter"
    with pytest.raises(InvalidArgumentError) as bad:
        ContextBuilder({"graph_context_options": {"max_nodes": 0}}, {"memory_adapter": memory})
    assert bad.value.argument.startswith("config.graph_context_options")
    for options, name in (({"entity_types": "person"}, "entity_types"), ({"depth": 2}, "depth")):
        with pytest.raises(InvalidArgumentError) as wrong:
            ContextBuilder({"graph_context_options": options}, {"memory_adapter": memory})
        assert name in str(wrong.value)
    with pytest.raises(InvalidArgumentError) as not_graph:
        ContextBuilder({}, {"memory_adapter": memory, "graph_adapter": object()})
    assert not_graph.value.argument == "deps.graph_adapter"
