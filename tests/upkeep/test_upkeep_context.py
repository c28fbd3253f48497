"""The context builder's ``observations`` dependency: up to three observations for a turn naming an entity."""

from __future__ import annotations

from datetime import timedelta

import pytest
from upkeep_helpers import ANA, T0, World, array, shown_ids

from cogitator_memory import unwrap
from cogitator_memory.context import ContextBuilder
from cogitator_memory.errors import InvalidArgumentError
from cogitator_memory.upkeep import MemoryObservations

NAMES = ["Ana", "Bo", "Cy", "Dee"]


@pytest.fixture
async def built(world: World) -> tuple[World, ContextBuilder, str]:
    for k, name in enumerate(NAMES):
        for n in range(3):
            await world.add(name, f"{name} fact {n}", attribute=f"a{n}", at=T0 + timedelta(hours=k, minutes=n))
    world.model.default = lambda chat: array({"statement": "Likes quiet evenings.", "items": shown_ids(chat)[:2]})
    keeper = MemoryObservations(files=world.files, items=world.items)
    assert len((await keeper.refresh(ANA, summarize=world.model.summarize, max_entities=4)).written) == 4
    thread = unwrap(await world.memory.create_thread("concierge", {"user_id": "ana"}))
    await world.memory.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": "hello"}})
    builder = ContextBuilder(
        {"max_tokens": 4000, "include_facts": True},
        {"memory_adapter": world.memory, "memory_items": world.items, "observations": keeper},
    )
    return world, builder, thread.id


async def test_a_turn_naming_entities_gets_up_to_three_observations_after_the_facts(
    built: tuple[World, ContextBuilder, str],
) -> None:
    _, builder, thread_id = built
    context = await builder.build(thread_id, current_input="Plan a dinner for dee, Bo, Ana and Cy.")
    text = context.memory_context or ""
    assert not context.errors
    assert "Known facts:" in text and text.index("Known facts:") < text.index("Observations:")
    named = [name for name in NAMES if f"About {name}:\n- Likes quiet evenings." in text]
    assert named == ["Ana", "Bo", "Dee"] and text.index("About Dee") < text.index("About Bo")
    assert "[item:" not in text
    assert all("About" not in str(f.content) for f in context.facts)  # observations are not facts

    quiet = await builder.build(thread_id, current_input="What is the weather like?")
    assert "Observations:" not in (quiet.memory_context or "")
    unwrapped = await builder.build(thread_id, current_input="Anabel and Bobby")
    assert "Observations:" not in (unwrapped.memory_context or "")


async def test_observations_alone_get_the_memory_context_and_a_bad_dependency_is_named(
    built: tuple[World, ContextBuilder, str],
) -> None:
    world, _, thread_id = built
    keeper = MemoryObservations(files=world.files, items=world.items)
    builder = ContextBuilder({"max_tokens": 2000}, {"memory_adapter": world.memory, "observations": keeper})
    context = await builder.build(thread_id, current_input="Is Cy coming?")
    assert (context.memory_context or "").startswith("<memory_context>\nObservations:\nAbout Cy:")
    with pytest.raises(InvalidArgumentError, match=r"deps\.observations"):
        ContextBuilder({"max_tokens": 2000}, {"memory_adapter": world.memory, "observations": object()})
