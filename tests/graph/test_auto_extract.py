"""AutoExtractor: user messages read into the graph in the background, over a real HTTP model on real stores.

A model that waits on a switch the test holds shows that submitting never waits for it; the
queue's bounds, the retries, the failures, flush and close are checked against what reached the
store.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from graph_extract_world import STORES, Model, array, entity, graph_of, open_store, relation, say, scripted_model, shown

from cogitator_memory import InMemoryAdapter, unwrap
from cogitator_memory.errors import InvalidArgumentError
from cogitator_memory.graph.auto import AutoExtractFailure, AutoExtractor, AutoExtractSettings
from cogitator_memory.graph.extract import GraphWindowError
from cogitator_memory.items.extract import ExtractionAnswerError
from cogitator_memory.models import ModelServiceError
from cogitator_memory.testing.scripted_server import ScriptedChatRequest

PATH = "/v1/chat/completions"
FAST = {"backoff_base": 0.01, "backoff_max": 0.02, "jitter": 0}


def reader(chat: ScriptedChatRequest) -> str:
    """Reads "<Name> lives in <Place>." messages (and nothing else) honestly."""
    text = shown(chat)[1]
    if " lives in " not in text:
        return "[]"
    name, place = text.rstrip(".").split(" lives in ")
    return array(
        entity(name, "person", (1, name)),
        entity(place, "location", (1, place)),
        relation("located_in", name, place, (1, text.rstrip("."))),
    )


class Switch:
    """A model that holds every answer until the test lets it go."""

    def __init__(self) -> None:
        self.open = threading.Event()
        self.entered = threading.Event()

    def __call__(self, chat: ScriptedChatRequest) -> str:
        self.entered.set()
        assert self.open.wait(30), "the test never let the model answer"
        return reader(chat)


@pytest.fixture
async def model() -> AsyncIterator[Model]:
    async with scripted_model() as scripted:
        yield scripted


@pytest.fixture
def switch(model: Model) -> Iterator[Switch]:
    held = Switch()
    model.answer(held)
    try:
        yield held
    finally:
        held.open.set()


@pytest.fixture
async def memory() -> AsyncIterator[InMemoryAdapter]:
    async with InMemoryAdapter() as store:
        yield store


async def thread_of(store: Any, user: str = "ana") -> str:
    return str(unwrap(await store.create_thread("concierge", {"user_id": user})).id)


def auto(store: Any, model: Model, **settings: Any) -> AutoExtractor:
    return AutoExtractor(
        graph=store, summarize=model.client.as_summarize_fn(), memory=store, settings={"enabled": True, **settings}
    )


@pytest.mark.parametrize("kind", STORES)
async def test_attached_it_reads_each_user_message_into_the_graph(kind: str, tmp_path: Path, model: Model) -> None:
    model.answer(reader)
    async with open_store(kind, tmp_path) as store, auto(store, model, infer=False) as extractor:
        thread = await thread_of(store)
        extractor.attach(store)
        await say(store, thread, "Ana lives in Porto.")
        await say(store, thread, "Bo lives in Lisbon.", role="assistant")  # not the user's: not read
        await say(store, thread, "Cy lives in Braga.")
        assert await extractor.flush(timeout=30)

        nodes, edges = await graph_of(store, "concierge")
        assert edges == [("Ana", "located_in", "Porto"), ("Cy", "located_in", "Braga")]
        assert {n.scope.user_id for n in nodes.values()} == {"ana"}  # the thread's user
        stats = extractor.stats
        assert (stats.submitted, stats.ignored, stats.done, stats.failed, stats.pending) == (2, 1, 2, 0, 0)
        assert (stats.nodes_written, stats.edges_written) == (4, 2)
        assert len(model.requests()) == 2


async def test_submit_never_waits_for_the_model(memory: InMemoryAdapter, model: Model, switch: Switch) -> None:
    extractor = auto(memory, model)
    thread = await thread_of(memory)
    first = await say(memory, thread, "Ana lives in Porto.")
    assert extractor.submit(first) == "queued"
    await asyncio.to_thread(switch.entered.wait, 10)  # the worker is inside the model call now
    second = await say(memory, thread, "Bo lives in Faro.")
    assert extractor.submit(second) == "queued"
    assert extractor.stats.pending == 2 and await graph_of(memory, "concierge") == ({}, [])
    assert not await extractor.flush(timeout=0.05)  # still waiting on the model
    switch.open.set()
    assert await extractor.flush(timeout=30)
    assert len(unwrap(await memory.query_edges({"agent_id": "concierge", "origins": ["extracted"]}))) == 2
    await extractor.close()


@pytest.mark.parametrize(
    ("on_full", "statuses", "read"),
    [
        ("drop_oldest", ["queued", "queued", "queued_dropped_oldest", "queued_dropped_oldest"], ["E", "P"]),
        ("reject", ["queued", "queued", "rejected", "rejected"], ["A", "B"]),
    ],
)
async def test_a_full_queue_drops_the_oldest_or_refuses(
    memory: InMemoryAdapter, model: Model, on_full: str, statuses: list[str], read: list[str]
) -> None:
    model.answer(reader)
    extractor = auto(memory, model, queue_size=2, on_full=on_full, infer=False)
    thread = await thread_of(memory)
    said = [await say(memory, thread, f"{n} lives in {n}ville.") for n in ("A", "B", "E", "P")]
    assert [extractor.submit(e) for e in said] == statuses  # no await between: the worker has not run
    await extractor.flush(timeout=30)
    _, edges = await graph_of(memory, "concierge")
    assert sorted(e[0] for e in edges) == read
    stats = extractor.stats
    assert (stats.dropped, stats.rejected) == ((2, 0) if on_full == "drop_oldest" else (0, 2))
    await extractor.close()


async def test_a_failing_model_is_tried_again_after_a_wait(memory: InMemoryAdapter, model: Model) -> None:
    model.server.enqueue(PATH, status=503, json={"error": {"message": "overloaded"}})
    model.server.enqueue(PATH, status=500, json={"error": {"message": "oops"}})
    model.answer(reader)
    async with auto(memory, model, max_retries=2, infer=False, **FAST) as extractor:
        thread = await thread_of(memory)
        assert extractor.submit(await say(memory, thread, "Ana lives in Porto.")) == "queued"
        await extractor.flush(timeout=30)
        assert extractor.stats.retries == 2 and extractor.stats.failed == 0
        assert (await graph_of(memory, "concierge"))[1] == [("Ana", "located_in", "Porto")]


async def test_given_up_messages_are_reported_and_the_worker_goes_on(memory: InMemoryAdapter, model: Model) -> None:
    heard: list[AutoExtractFailure] = []

    async def on_error(failure: AutoExtractFailure) -> None:
        heard.append(failure)

    for _ in range(3):
        model.server.enqueue(PATH, status=500, json={"error": {"message": "down"}})
    model.answer(reader)
    extractor = AutoExtractor(
        graph=memory,
        summarize=model.client.as_summarize_fn(),
        memory=memory,
        settings=AutoExtractSettings(enabled=True, max_retries=2, infer=False, **FAST),
        on_error=on_error,
    )
    thread = await thread_of(memory)
    lost = await say(memory, thread, "Ana lives in Porto.")
    extractor.submit(lost)
    extractor.submit(await say(memory, thread, "Bo lives in Faro."))
    await extractor.flush(timeout=30)
    assert [(f.entry_id, f.attempts) for f in heard] == [(lost.id, 3)]
    assert isinstance(heard[0].error, GraphWindowError) and isinstance(heard[0].error.__cause__, ModelServiceError)
    assert extractor.failures == heard
    assert (await graph_of(memory, "concierge"))[1] == [("Bo", "located_in", "Faro")]
    assert (extractor.stats.failed, extractor.stats.done) == (1, 2)
    await extractor.close()


async def test_answers_the_model_got_wrong_are_not_tried_again_and_write_nothing(
    memory: InMemoryAdapter, model: Model
) -> None:
    def wrong(chat: ScriptedChatRequest) -> str:
        text = shown(chat)[1]
        if text.startswith("Ana"):
            return "Sorry, no."  # never an array
        return array(
            entity("Bo", "person", (1, "Bob")),
            entity("Faro", "location", (1, "Faro")),
            relation("located_in", "Bo", "Faro", (1, "Bo lives in Faro")),
        )  # Bo's quote lies

    model.answer(wrong)
    async with auto(memory, model, max_retries=3, **FAST) as extractor:
        thread = await thread_of(memory)
        extractor.submit(await say(memory, thread, "Ana lives in Porto."))
        extractor.submit(await say(memory, thread, "Bo lives in Faro."))
        await extractor.flush(timeout=30)
        (failure,) = extractor.failures
        assert failure.attempts == 1 and isinstance(failure.error.__cause__, ExtractionAnswerError)
        nodes, edges = await graph_of(memory, "concierge")
        assert sorted(nodes) == ["Faro"] and edges == []  # the lie and the relation on it are not written
        assert extractor.stats.retries == 0


async def test_close_without_draining_drops_the_queue_and_stops_the_message_being_read(
    memory: InMemoryAdapter, model: Model, switch: Switch
) -> None:
    extractor = auto(memory, model)
    thread = await thread_of(memory)
    extractor.submit(await say(memory, thread, "Ana lives in Porto."))
    extractor.submit(await say(memory, thread, "Bo lives in Faro."))
    await asyncio.to_thread(switch.entered.wait, 10)
    await extractor.close(drain=False)
    assert extractor.closed and extractor.stats.dropped == 1 and extractor.stats.pending == 0
    assert extractor.submit(await say(memory, thread, "Cy lives in Braga.")) == "closed"
    switch.open.set()
    assert await extractor.flush(timeout=1)
    assert await graph_of(memory, "concierge") == ({}, [])


async def test_close_drains_by_default_and_inference_follows_each_message(
    memory: InMemoryAdapter, model: Model
) -> None:
    def answer(chat: ScriptedChatRequest) -> str:
        text = shown(chat)[1]
        if text.startswith("Porto"):
            return array(
                entity("Porto", "location", (1, "Porto")),
                entity("Portugal", "location", (1, "Portugal")),
                relation("part_of", "Porto", "Portugal", (1, "Porto is in Portugal")),
            )
        return reader(chat)

    model.answer(answer)
    extractor = auto(memory, model)
    thread = await thread_of(memory)
    extractor.submit(await say(memory, thread, "Ana lives in Porto."))
    extractor.submit(await say(memory, thread, "Porto is in Portugal."))
    await extractor.close()
    edges = unwrap(await memory.query_edges({"agent_id": "concierge", "origins": ["inferred"]}))
    names = {n.id: n.name for n in unwrap(await memory.query_nodes({"agent_id": "concierge"}))}
    assert ("Ana", "located_in", "Portugal") in {(names[e.source_id], e.type, names[e.target_id]) for e in edges}
    assert extractor.stats.inferred_edges == len(edges) > 0


async def test_settings_and_arguments_are_checked(memory: InMemoryAdapter, model: Model) -> None:
    summarize = model.client.as_summarize_fn()
    assert AutoExtractSettings().enabled is False
    assert AutoExtractSettings(max_retries=5, backoff_base=2).retry.backoff(2) == pytest.approx(4, rel=0.11)
    cases: list[tuple[dict[str, Any], str]] = [
        ({"queue_size": 0}, "settings.queue_size"),
        ({"on_full": "block"}, "settings.on_full"),
        ({"roles": ["robot"]}, "settings.roles.0"),
        ({"wat": 1}, "settings.wat"),
    ]
    for settings, name in cases:
        with pytest.raises(InvalidArgumentError) as caught:
            AutoExtractor(graph=memory, summarize=summarize, settings=settings)
        assert caught.value.argument == name
    with pytest.raises(InvalidArgumentError) as caught:
        AutoExtractor(graph=memory, summarize=summarize, memory=object())
    assert caught.value.argument == "memory"
    extractor = AutoExtractor(graph=memory, summarize=summarize)
    thread = await thread_of(memory)
    entry = await say(memory, thread, "Ana lives in Porto.")
    with pytest.raises(InvalidArgumentError) as caught:
        extractor.submit(entry)  # no scope and no thread store to find one
    assert caught.value.argument == "scope"
    with pytest.raises(InvalidArgumentError) as caught:
        extractor.submit({"id": "x"})  # type: ignore[arg-type]
    assert caught.value.argument == "entry"
    assert extractor.submit(entry, scope={"agent_id": "concierge"}) == "queued"
    await extractor.close(drain=False)


def test_submit_outside_a_running_loop_raises_and_queues_nothing() -> None:
    from datetime import UTC, datetime

    from cogitator_memory.threads.records import MemoryEntry

    async def never(messages: Any, options: Any) -> str:
        raise AssertionError("the model is never asked")

    extractor = AutoExtractor(graph=InMemoryAdapter(), summarize=never)
    entry = MemoryEntry.model_validate(
        {
            "id": "entry_1",
            "thread_id": "t",
            "seq": 1,
            "type": "message",
            "message": {"role": "user", "content": "Ana lives in Porto."},
            "token_count": 5,
            "created_at": datetime(2026, 1, 1, tzinfo=UTC),
        }
    )
    with pytest.raises(RuntimeError):
        extractor.submit(entry, scope={"agent_id": "concierge"})
    assert (extractor.stats.submitted, extractor.stats.pending) == (0, 0)


class EdgesHang(InMemoryAdapter):
    """An in-process store whose edge writes never finish (a store that stopped answering)."""

    async def add_edges(self, edges: Any) -> Any:
        await asyncio.Event().wait()


async def test_close_without_draining_takes_back_the_writes_of_the_message_being_read(model: Model) -> None:
    model.answer(reader)
    async with EdgesHang() as store:
        extractor = auto(store, model, infer=False)
        thread = await thread_of(store)
        extractor.submit(await say(store, thread, "Ana lives in Porto."))
        for _ in range(500):  # until its nodes are written and it waits on the edges
            if len((await graph_of(store, "concierge"))[0]) == 2:
                break
            await asyncio.sleep(0.01)
        assert sorted((await graph_of(store, "concierge"))[0]) == ["Ana", "Porto"]
        await extractor.close(drain=False)
        assert await graph_of(store, "concierge") == ({}, [])


def test_settings_from_what_a_configuration_holds() -> None:
    assert AutoExtractSettings.of(True) == AutoExtractSettings(enabled=True)
    assert AutoExtractSettings.of(False).enabled is False and AutoExtractSettings.of(None).enabled is False
    assert AutoExtractSettings.of({"queue_size": 5}) == AutoExtractSettings(enabled=True, queue_size=5)
    assert AutoExtractSettings.of({"enabled": False}).enabled is False
    given = AutoExtractSettings(max_retries=1)
    assert AutoExtractSettings.of(given) is given
    with pytest.raises(InvalidArgumentError) as caught:
        AutoExtractSettings.of({"max_retries": -1})
    assert caught.value.argument == "auto_extract.max_retries"
    with pytest.raises(InvalidArgumentError) as caught:
        AutoExtractSettings.of("yes")  # type: ignore[arg-type]
    assert caught.value.argument == "auto_extract"
