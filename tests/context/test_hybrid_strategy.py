"""The hybrid strategy: history like recent, older turns and memory items recalled for the turn."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from ctx_helpers import CountingEmbedder

from cogitator_memory import frozen_clock, unwrap
from cogitator_memory.context import ContextBuilder, MessageIndex
from cogitator_memory.embeddings import HashingEmbedder, OpenAIEmbeddingService, RetryPolicy
from cogitator_memory.items import MemoryItem
from cogitator_memory.items.service import MemoryItems
from cogitator_memory.testing.scripted_server import ScriptedServer
from cogitator_memory.threads.base import BaseMemoryAdapter
from cogitator_memory.vectors import InMemoryEmbeddingAdapter

START = datetime(2024, 4, 1, 9, 0, tzinfo=UTC)  # a Monday
FILLER = [f"filler message {i} about the weather, the traffic and other small things" for i in range(40)]


async def chat(
    memory: BaseMemoryAdapter, texts: Sequence[str], *, agent: str = "concierge", user: str = "ana"
) -> tuple[str, list[Any]]:
    """A thread of alternating user/assistant turns, one a day from START."""
    thread = unwrap(await memory.create_thread(agent, {"user_id": user}))
    entries = []
    for i, text in enumerate(texts):
        with frozen_clock(START + timedelta(days=i)):
            role = "user" if i % 2 == 0 else "assistant"
            entries.append(
                unwrap(await memory.add_entry({"thread_id": thread.id, "message": {"role": role, "content": text}}))
            )
    return thread.id, entries


HOTEL = [
    "We stayed at the Hotel Avenida in Lisbon, room 214.",
    "Noted: Hotel Avenida, Lisbon, room 214.",
    *FILLER,
]


def hybrid(memory: BaseMemoryAdapter, **deps: Any) -> ContextBuilder:
    return ContextBuilder({"strategy": "hybrid", "reserve_tokens": 0}, {"memory_adapter": memory, **deps})


async def test_a_recalled_turn_names_who_said_it_between_named_people(memory: BaseMemoryAdapter) -> None:
    """Between people (``message.name``, or ``metadata["speaker"]``) a recalled line names the
    speaker, not the role all of them share."""
    thread = unwrap(await memory.create_thread("concierge", {"user_id": "ana"}))
    said = [
        ({"name": "Melanie"}, None, "I painted a sunrise over the lake last week."),
        ({"name": "Caroline"}, None, "That sounds lovely, I want to see it!"),
        ({}, {"speaker": "  Caroline   Reyes "}, "I adopted a puppy named Oscar."),
        *(({"name": "Melanie" if i % 2 else "Caroline"}, None, text) for i, text in enumerate(FILLER)),
    ]
    for i, (named, metadata, text) in enumerate(said):
        with frozen_clock(START + timedelta(days=i)):
            entry: dict[str, Any] = {"thread_id": thread.id, "message": {"role": "user", "content": text, **named}}
            if metadata:
                entry["metadata"] = metadata
            unwrap(await memory.add_entry(entry))
    builder = hybrid(memory, embedding_service=HashingEmbedder(64))
    painted = await builder.build(thread.id, current_input="What has Melanie painted?", max_tokens=400)
    assert "[Mon 01 Apr 2024 09:00] Melanie: I painted a sunrise over the lake" in (painted.memory_context or "")
    assert "] user: I painted" not in (painted.memory_context or "")
    adopted = await builder.build(thread.id, current_input="Who adopted a puppy named Oscar?", max_tokens=400)
    assert "[Wed 03 Apr 2024 09:00] Caroline Reyes: I adopted a puppy named Oscar." in (adopted.memory_context or "")


async def test_an_older_turn_is_recalled_dated_with_its_neighbour(memory: BaseMemoryAdapter) -> None:
    tid, entries = await chat(memory, HOTEL)
    context = await hybrid(memory, embedding_service=HashingEmbedder(64)).build(
        tid, current_input="Which hotel did we stay at in Lisbon?", max_tokens=400, time_zone="Europe/Lisbon"
    )
    assert context.strategy == "hybrid" and not context.errors
    assert context.recalled is not None
    assert context.recalled["entries"][0].id == entries[0].id
    assert context.recalled["items"] == []
    text = context.memory_context or ""
    assert "Earlier in this conversation:\n[Mon 01 Apr 2024 10:00] user: We stayed at the Hotel Avenida" in text
    assert "[Tue 02 Apr 2024 10:00] assistant: Noted: Hotel Avenida" in text  # the reply that makes it readable
    # The history keeps the newest turns, as recent does, and never the recalled ones.
    assert context.entries[-1].id == entries[-1].id
    assert entries[0].id not in {e.id for e in context.entries}
    assert entries[0].id not in {e.id for e in context.dropped.entries}
    assert context.partitions["recall"] > 0 and context.partitions["recent"] > 0
    assert context.messages[-1].role == "user" and context.messages[-1].content == context.memory_context
    # Recalled entries are the caller's copies.
    context.recalled["entries"][0].message.content = "changed"  # type: ignore[union-attr]
    assert unwrap(await memory.get_entry(entries[0].id)).message.content.startswith("We stayed")  # type: ignore[union-attr]


async def test_hybrid_without_vectors_recalls_by_keywords_without_errors(memory: BaseMemoryAdapter) -> None:
    tid, entries = await chat(memory, HOTEL)
    context = await hybrid(memory).build(tid, current_input="hotel in Lisbon, which room?", max_tokens=400)
    assert not context.errors
    assert context.recalled is not None and context.recalled["entries"][0].id == entries[0].id


async def test_an_embedding_service_that_fails_is_a_relevance_error_and_recall_goes_on(
    memory: BaseMemoryAdapter,
) -> None:
    tid, entries = await chat(memory, HOTEL)
    with ScriptedServer() as server:
        server.enqueue("/v1/embeddings", status=429, json={"error": {"message": "rate limited"}})
        service = OpenAIEmbeddingService(
            base_url=server.url + "/v1", model="m", dimensions=8, retry=RetryPolicy(max_retries=0)
        )
        async with service:
            context = await hybrid(memory, embedding_service=service).build(
                tid, current_input="Which hotel did we stay at in Lisbon?", max_tokens=400
            )
    assert [e.source for e in context.errors] == ["relevance"]
    assert "429" in context.errors[0].message
    assert context.recalled is not None and context.recalled["entries"][0].id == entries[0].id


async def test_a_vector_size_mismatch_is_a_relevance_error_and_recall_goes_on(memory: BaseMemoryAdapter) -> None:
    store = InMemoryEmbeddingAdapter()
    await store.connect()
    index = MessageIndex(store=store, embedding=HashingEmbedder(64))
    index.attach(memory)
    tid, entries = await chat(memory, HOTEL)
    await index.flush()
    context = await hybrid(memory, embedding_service=HashingEmbedder(32), message_index=index).build(
        tid, current_input="Which hotel did we stay at in Lisbon?", max_tokens=400
    )
    assert [e.source for e in context.errors] == ["relevance"]
    assert context.recalled is not None and context.recalled["entries"][0].id == entries[0].id
    await index.close()


async def test_small_talk_recalls_nothing_and_keeps_the_history_like_recent(memory: BaseMemoryAdapter) -> None:
    tid, _entries = await chat(memory, HOTEL)
    embedder = CountingEmbedder()
    context = await hybrid(memory, embedding_service=embedder).build(tid, current_input="thanks!", max_tokens=400)
    recent = await ContextBuilder({"strategy": "recent", "reserve_tokens": 0}, {"memory_adapter": memory}).build(
        tid, current_input="thanks!", max_tokens=400
    )
    # hybrid did not search, so it does not say it did: the history was chosen as recent
    assert context.strategy == "recent" and context.recalled is None
    assert [e.id for e in context.entries] == [e.id for e in recent.entries]
    assert embedder.texts == []  # nothing to search: the input is not embedded
    assert "recall" not in context.partitions


async def test_no_input_is_like_recent(memory: BaseMemoryAdapter) -> None:
    tid, entries = await chat(memory, HOTEL)
    context = await hybrid(memory).build(tid, max_tokens=300)
    assert context.strategy == "recent" and context.entries[-1].id == entries[-1].id
    assert context.recalled is None and not context.warnings


async def test_as_of_reads_the_time_the_input_names(memory: BaseMemoryAdapter) -> None:
    texts = [f"On this day I did chore number {i} at home" for i in range(30)]
    tid, entries = await chat(memory, texts)
    b = ContextBuilder(  # only the turns found themselves are recalled, without their exchanges
        {"strategy": "hybrid", "reserve_tokens": 0, "recall": {"neighbour_weight": 0.0, "neighbour_tokens": 0}},
        {"memory_adapter": memory},
    )
    # Day 5 is Saturday 6 April; "yesterday" read from the 7th is the 6th.
    first = await b.build(
        tid, current_input="What did I do yesterday?", max_tokens=250, as_of=START + timedelta(days=6, hours=3)
    )
    assert first.recalled is not None
    assert _ids(first.recalled["entries"]) == {entries[5].id}
    later = await b.build(
        tid, current_input="What did I do yesterday?", max_tokens=250, as_of=START + timedelta(days=11, hours=3)
    )
    assert later.recalled is not None
    assert _ids(later.recalled["entries"]) == {entries[10].id}
    # In Auckland 09:00 UTC on the 12th is already the 13th: yesterday is the 12th there (day 11).
    zoned = await b.build(
        tid,
        current_input="What did I do yesterday?",
        max_tokens=250,
        as_of=START + timedelta(days=11, hours=3),
        time_zone="Pacific/Auckland",
    )
    assert zoned.recalled is not None
    assert _ids(zoned.recalled["entries"]) == {entries[11].id}


def _ids(entries: Sequence[Any]) -> set[str]:
    return {e.id for e in entries}


async def test_window_setting_bounds_the_turns_searched_without_an_index(memory: BaseMemoryAdapter) -> None:
    tid, entries = await chat(memory, HOTEL)
    narrow = ContextBuilder(
        {"strategy": "hybrid", "reserve_tokens": 0, "recall": {"window": 10}}, {"memory_adapter": memory}
    )
    context = await narrow.build(tid, current_input="hotel in Lisbon, which room?", max_tokens=400)
    assert context.recalled is not None and entries[0].id not in {e.id for e in context.recalled["entries"]}


async def test_with_a_message_index_the_whole_thread_is_searched_and_a_redacted_turn_is_not_sent(
    memory: BaseMemoryAdapter,
) -> None:
    store = InMemoryEmbeddingAdapter()
    await store.connect()
    embedder = HashingEmbedder(64)
    index = MessageIndex(store=store, embedding=embedder)
    index.attach(memory)
    tid, entries = await chat(memory, [*HOTEL, *(f"more chatter {i} about lunch" for i in range(230))])
    await index.flush()
    b = hybrid(memory, embedding_service=embedder, message_index=index)
    question = "Which hotel did we stay at in Lisbon, what room?"
    context = await b.build(tid, current_input=question, max_tokens=500)
    assert context.recalled is not None and context.recalled["entries"][0].id == entries[0].id  # older than 200
    unwrap(await memory.redact_entry(entries[0].id, {"at": START + timedelta(days=400), "reason": "privacy"}))
    again = await b.build(tid, current_input=question, max_tokens=500)
    assert "room 214" not in (again.memory_context or "").split("Noted")[0]
    assert all("We stayed" not in (e.message.text if e.message else "") for e in again.recalled["entries"])  # type: ignore[index]
    await index.close()


def item(item_id: str, subject: str, attribute: str, value: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": item_id,
        "kind": "fact",
        "subject": subject,
        "attribute": attribute,
        "value": value,
        "trust": "user",
        "scope": {"agent_id": "concierge", "user_id": "ana"},
        "status": extra.pop("status", "active"),
        "recorded_at": START,
        **extra,
    }


class Facts:
    """A fact source holding one fact with the id of an item."""

    def __init__(self, fact_id: str, content: str) -> None:
        self.fact_id = fact_id
        self.content = content

    async def get_facts(self, agent_id: str, *, user_id: str | None = None, limit: int = 100) -> list[Any]:
        return [type("Fact", (), {"id": self.fact_id, "content": self.content})()]


async def test_memory_items_are_recalled_with_the_time_they_held_and_not_repeated(memory: Any) -> None:
    if not hasattr(memory, "add_items"):
        pytest.skip("the store keeps no items")  # pragma: no cover - both fixture stores keep them
    tid, _entries = await chat(memory, FILLER[:10])
    unwrap(
        await memory.add_items(
            [
                item(
                    "mem_porto",
                    "Ana",
                    "home",
                    "a flat in Porto",
                    valid_from=datetime(2022, 1, 1, tzinfo=UTC),
                    valid_to=datetime(2024, 1, 1, tzinfo=UTC),
                    status="superseded",
                ),
                item("mem_lisbon", "Ana", "home", "a house in Lisbon", valid_from=datetime(2024, 1, 1, tzinfo=UTC)),
                item("mem_dog", "Ana", "pet", "a dog named Bolacha"),
                item("mem_bo", "Bo", "home", "a flat in Faro", scope={"agent_id": "concierge", "user_id": "bo"}),
            ]
        )
    )
    b = hybrid(memory, memory_items=memory)
    context = await b.build(tid, current_input="Where has Ana lived?", max_tokens=600, time_zone="Europe/Lisbon")
    assert context.recalled is not None and not context.errors
    recalled = [i.id for i in context.recalled["items"]]
    assert {"mem_porto", "mem_lisbon"} <= set(recalled) and "mem_bo" not in recalled
    assert all(isinstance(i, MemoryItem) for i in context.recalled["items"])
    text = context.memory_context or ""
    assert "From memory:\n" in text
    assert "- Ana (home): a flat in Porto [held 01 Jan 2022 to 01 Jan 2024; no longer holds]" in text
    assert "- Ana (home): a house in Lisbon\n" in text + "\n"
    # A MemoryItems service serves as well as its store.
    served = await hybrid(memory, memory_items=MemoryItems(adapter=memory)).build(
        tid, current_input="Where has Ana lived?", max_tokens=600, time_zone="Europe/Lisbon"
    )
    assert served.recalled is not None and [i.id for i in served.recalled["items"]] == recalled
    # Read as of 2023, the Lisbon house is not known yet.
    past = await b.build(
        tid, current_input="Where has Ana lived?", max_tokens=600, as_of=datetime(2023, 6, 1, tzinfo=UTC)
    )
    assert past.recalled is not None and "mem_lisbon" not in [i.id for i in past.recalled["items"]]
    # An item the facts partition kept is not recalled again.
    with_facts = ContextBuilder(
        {"strategy": "hybrid", "reserve_tokens": 0, "include_facts": True},
        {"memory_adapter": memory, "memory_items": memory, "fact_adapter": Facts("mem_lisbon", "Ana lives in Lisbon")},
    )
    kept = await with_facts.build(tid, current_input="Where has Ana lived?", max_tokens=600)
    assert kept.recalled is not None and "mem_lisbon" not in [i.id for i in kept.recalled["items"]]
    assert "mem_porto" in [i.id for i in kept.recalled["items"]]
    order = kept.memory_context or ""
    assert order.index("Known facts:") < order.index("From memory:")


async def test_a_build_of_the_present_ranks_what_the_recall_index_finds_of_the_items(
    memory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The items of a build of the present come from the recall index (its keyword channel, and
    # the items' vectors searched by meaning), a few hundred at most: not every item the user
    # holds read at each build. An item of another thread of the user stays out, as before.
    tid, _entries = await chat(memory, FILLER[:6])
    other_tid, _ = await chat(memory, FILLER[:2])
    ana_elsewhere = {"agent_id": "concierge", "user_id": "ana", "thread_id": other_tid}
    many = [item(f"mem_{n:03d}", "Ana", f"stamps {n}", f"collects stamps from country {n}") for n in range(250)]
    unwrap(
        await memory.add_items(
            [
                *many,
                item("mem_boat", "Ana", "boat", "a sailing boat called Gaivota, moored in Cascais"),
                item("mem_berth", "Ana", "berth", "the sailing boat is moored at berth 12", scope=ana_elsewhere),
            ]
        )
    )
    reads: list[Any] = []
    read_items = memory.query_items

    async def counted(flt: Any) -> Any:
        reads.append(flt)
        return await read_items(flt)

    monkeypatch.setattr(memory, "query_items", counted)
    vectors = InMemoryEmbeddingAdapter(dimensions=64)
    await vectors.connect()
    b = hybrid(memory, memory_items=memory, embedding_service=HashingEmbedder(64), embedding_adapter=vectors)
    question = "Where is Ana's sailing boat moored?"
    context = await b.build(tid, current_input=question, max_tokens=600)
    assert context.recalled is not None and not context.errors
    recalled = [i.id for i in context.recalled["items"]]
    assert recalled[0] == "mem_boat" and "mem_berth" not in recalled
    assert reads == []  # no item was read by its scope
    # the items the vector search could not find were given vectors, kept for the next build
    kept = unwrap(await vectors.get_by_sources(["mem_boat"]))
    assert [v.metadata.get("index") for v in kept] == ["items"]
    # a build in the past lays the items out as known then: it reads the scope
    past = await b.build(tid, current_input=question, max_tokens=600, as_of=START + timedelta(days=400))
    assert past.recalled is not None
    then = [i.id for i in past.recalled["items"]]
    assert then[0] == "mem_boat" and "mem_berth" not in then and len(reads) == 1


async def test_relevant_uses_the_configured_search_settings(memory: BaseMemoryAdapter) -> None:
    tid, entries = await chat(memory, HOTEL)
    embedder = CountingEmbedder()
    narrow = ContextBuilder(
        {"strategy": "relevant", "reserve_tokens": 0, "recall": {"window": 5}},
        {"memory_adapter": memory, "embedding_service": embedder},
    )
    context = await narrow.build(tid, current_input="Which hotel did we stay at in Lisbon?", max_tokens=400)
    assert context.strategy == "relevant"
    assert len(embedder.texts) == 5 + 1  # the newest 5 entries and the input
    assert entries[0].id not in {e.id for e in context.entries}
    wide = ContextBuilder(
        {"strategy": "relevant", "reserve_tokens": 0},
        {"memory_adapter": memory, "embedding_service": HashingEmbedder(64)},
    )
    found = await wide.build(tid, current_input="Which hotel did we stay at in Lisbon?", max_tokens=400)
    assert found.entries[0].id == entries[0].id  # keywords and vectors together find it first


async def test_room_the_history_cannot_use_goes_to_recall(memory: BaseMemoryAdapter) -> None:
    # The newest reply is larger than the room the history is sure of (its share, a quarter of
    # the room here, with what recall leaves unused) but smaller than the 40% recall and facts
    # leave by their shares: the history keeps nothing, and recall takes the room instead of
    # leaving a third of it empty (the history used to be cut for 40%, then got 25% in assembly).
    older = [f"Day {i}: we walked from the Lisbon hotel to the river and the old tram stop {i}." for i in range(60)]
    newest = " ".join(f"stone {i}" for i in range(120))  # about 360 tokens
    tid, _ = await chat(memory, [*older, "Tell me a long story.", newest])
    context = await hybrid(memory, embedding_service=HashingEmbedder(64)).build(
        tid, current_input="Where did we walk from the Lisbon hotel?", max_tokens=1000
    )
    assert not context.errors and context.recalled is not None
    assert context.entries == []
    assert context.partitions.get("recall", 0) > 900
