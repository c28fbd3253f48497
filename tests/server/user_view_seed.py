"""A memory of two users for the user view tests (REST and the inspector in Chromium): Ada's thread,
a slot whose value moved from Lisbon to Porto, core facts that changed, a fact saved with
``remember``, an entity of the graph with a relation, a memory file; and Bob, whom nothing of Ada's
must reach and whom forgetting Ada must leave whole."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cogitator_memory import unwrap
from cogitator_memory.runtime.memory import Memory
from engine_configs import memory_config


def config(tmp_path: Path, engine: str = "sqlite") -> dict[str, Any]:
    """A memory on ``engine`` with hashing embeddings (vectors for every turn) and files on, and
    the graph where the engine keeps one (SQLite, PostgreSQL, in memory)."""
    return memory_config(engine, tmp_path, "uv") | {"embedding": {"provider": "hashing"}, "files": {"enabled": True}}


async def seed(memory: Memory) -> dict[str, Any]:
    """Ada's and Bob's memory; the ids the tests look for."""
    ada = await memory.add(
        [
            {"role": "user", "content": "I live in Lisbon."},
            {"role": "assistant", "content": "Lisbon, noted."},
            {"role": "user", "content": "I moved to Porto last June, my sister Maria lives there."},
            {"role": "assistant", "content": "Porto it is."},
        ],
        user_id="ada",
    )
    thread = ada.thread_id
    ids = [e.id for e in ada.entries]
    scope = {"agent_id": memory.agent_id, "user_id": "ada"}
    lisbon = await memory.items.add(
        {
            "kind": "fact",
            "subject": "Ada",
            "attribute": "lives in",
            "value": "Lisbon",
            "valid_from": datetime(2024, 1, 1, tzinfo=UTC),
            "evidence": [{"entry_id": ids[0], "thread_id": thread, "quote": "I live in Lisbon"}],
            "trust": "user",
            "verified": True,
            "scope": scope,
        }
    )
    maria = porto_node = edge = None
    if memory.graph is not None:
        maria = unwrap(
            await memory.graph.add_node(
                {
                    "type": "person",
                    "name": "Maria",
                    "description": "Ada's sister",
                    "scope": scope,
                    "evidence": [{"entry_id": ids[2], "thread_id": thread, "quote": "my sister Maria lives there"}],
                }
            )
        )
        porto_node = unwrap(
            await memory.graph.add_node(
                {
                    "type": "location",
                    "name": "Porto",
                    "scope": scope,
                    "evidence": [{"entry_id": ids[2], "thread_id": thread, "quote": "I moved to Porto"}],
                }
            )
        )
        edge = unwrap(
            await memory.graph.add_edge(
                {
                    "source_id": maria.id,
                    "target_id": porto_node.id,
                    "type": "located_in",
                    "label": "lives in",
                    "scope": scope,
                    "evidence": [{"entry_id": ids[2], "thread_id": thread, "quote": "my sister Maria lives there"}],
                }
            )
        )
    porto = await memory.items.add(
        {
            "kind": "fact",
            "subject": "Ada",
            "attribute": "lives in",
            "value": "Porto",
            "valid_from": datetime(2025, 6, 1, tzinfo=UTC),
            "evidence": [{"entry_id": ids[2], "thread_id": thread, "quote": "I moved to Porto last June"}],
            "related_entity_ids": [porto_node.id] if porto_node is not None else None,
            "trust": "user",
            "verified": True,
            "scope": scope,
        }
    )
    core = await memory.core_facts(user_id="ada")
    await core.set("city", "Lisbon")
    await core.set("city", "Porto")
    await core.set("name", "Ada")
    if memory.graph is not None:
        await memory.remember("Ada is allergic to peanuts", user_id="ada")
    assert memory.files is not None
    await memory.files.put({"scope": scope, "author": "user"}, "/memories/ada.md", "likes: tea\n")
    # Bob: his own thread, item, core fact, graph fact and file.
    bob = await memory.add([{"role": "user", "content": "I live in Berlin."}], user_id="bob")
    bob_scope = {"agent_id": memory.agent_id, "user_id": "bob"}
    bob_item = await memory.items.add(
        {
            "kind": "fact",
            "subject": "Bob",
            "attribute": "lives in",
            "value": "Berlin",
            "evidence": [{"entry_id": bob.entries[0].id, "thread_id": bob.thread_id, "quote": "I live in Berlin"}],
            "trust": "user",
            "verified": True,
            "scope": bob_scope,
        }
    )
    await (await memory.core_facts(user_id="bob")).set("city", "Berlin")
    if memory.graph is not None:
        await memory.remember("Bob plays the cello", user_id="bob")
    await memory.files.put({"scope": bob_scope, "author": "user"}, "/memories/bob.md", "likes: coffee\n")
    # The agent's shared memory: every user's view shows it, marked shared; no user's forget takes it.
    shared = await memory.items.add(
        {
            "kind": "instruction",
            "subject": "Office",
            "attribute": "opens at",
            "value": "9am",
            "trust": "system",
            "scope": {"agent_id": memory.agent_id},
        }
    )
    await memory.flush()
    return {
        "shared": shared.id,
        "thread": thread,
        "ids": ids,
        "lisbon": lisbon.id,
        "porto": porto.id,
        "maria": maria.id if maria is not None else None,
        "porto_node": porto_node.id if porto_node is not None else None,
        "edge": edge.id if edge is not None else None,
        "bob_thread": bob.thread_id,
        "bob_item": bob_item.id,
    }
