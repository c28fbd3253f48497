"""MessageIndex: background embedding, deletions, redaction, bounds, retries and back-pressure."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from ctx_helpers import CountingEmbedder, conversation, say

from cogitator_memory import unwrap
from cogitator_memory.context import ContextBuilder, MessageIndex
from cogitator_memory.context.message_index import vector_id
from cogitator_memory.embeddings import OpenAIEmbeddingService, RetryPolicy
from cogitator_memory.errors import InvalidArgumentError
from cogitator_memory.testing.scripted_server import ScriptedServer, openai_embeddings_handler
from cogitator_memory.threads.base import BaseMemoryAdapter
from cogitator_memory.vectors import InMemoryEmbeddingAdapter, VectorHit


async def _store(dimensions: int | None = None) -> InMemoryEmbeddingAdapter:
    store = InMemoryEmbeddingAdapter(dimensions=dimensions)
    unwrap(await store.connect())
    return store


async def test_each_new_entry_is_embedded_once_and_goes_with_its_entry(memory: BaseMemoryAdapter) -> None:
    store = await _store()
    embedder = CountingEmbedder()
    index = MessageIndex(store=store, embedding=embedder)
    detach = index.attach(memory)
    thread = unwrap(await memory.create_thread("agent", {"user_id": "ana"}))
    entries = await conversation(memory, thread.id, ["one", "two", "three", "four"])
    unwrap(await memory.add_entry({"thread_id": thread.id, "type": "label", "event": {"label": "x"}}))
    await index.flush()
    assert index.indexed == 4 and embedder.texts == ["one", "two", "three", "four"]
    stored = unwrap(await store.get_by_sources([e.id for e in entries]))
    assert [s.source_id for s in stored] == [e.id for e in entries]
    assert {s.metadata["index"] for s in stored} == {"messages"} and stored[0].metadata["user_id"] == "ana"
    # Indexing an entry again stores nothing new.
    await index.index_entry(entries[0])
    await index.flush()
    assert len(unwrap(await store.get_by_sources([entries[0].id]))) == 1
    # Deleted and redacted entries lose their vectors.
    unwrap(await memory.delete_entry(entries[0].id))
    unwrap(await memory.redact_entry(entries[1].id, {"at": datetime.now(UTC), "reason": "pii"}))
    await index.flush()
    left = unwrap(await store.get_by_sources([e.id for e in entries]))
    assert [s.source_id for s in left] == [entries[2].id, entries[3].id]
    assert unwrap(await store.get_embedding(vector_id(entries[1].id))) is None
    # A cleared thread loses all of them; a deleted one too.
    unwrap(await memory.clear_thread(thread.id))
    await index.flush()
    assert unwrap(await store.get_by_sources([e.id for e in entries])) == []
    other = unwrap(await memory.create_thread("agent"))
    kept = await say(memory, other.id, "user", "keep me")
    await index.flush()
    unwrap(await memory.delete_thread(other.id))
    await index.flush()
    assert unwrap(await store.get_by_sources([kept.id])) == []
    # Detached: nothing more is indexed.
    detach()
    third = unwrap(await memory.create_thread("agent"))
    late = await say(memory, third.id, "user", "not indexed")
    await index.flush()
    assert unwrap(await store.get_by_sources([late.id])) == []
    await index.close()


async def test_entries_written_before_attach_are_indexed_when_a_build_uses_the_thread(
    memory: BaseMemoryAdapter,
) -> None:
    thread = unwrap(await memory.create_thread("agent"))
    entries = await conversation(memory, thread.id, ["red bicycle", "blue car", "green tram"])
    store = await _store()
    embedder = CountingEmbedder()
    index = MessageIndex(store=store, embedding=embedder)
    index.attach(memory)
    builder = ContextBuilder(
        {"strategy": "relevant", "max_tokens": 500},
        {"memory_adapter": memory, "embedding_service": embedder, "message_index": index},
    )
    await builder.build(thread.id, current_input="bicycle")
    await index.flush()
    assert len(unwrap(await store.get_by_sources([e.id for e in entries]))) == 3
    await index.close()


async def test_the_first_search_of_a_thread_finds_entries_written_before_attach(memory: BaseMemoryAdapter) -> None:
    thread = unwrap(await memory.create_thread("agent"))
    old = await conversation(memory, thread.id, ["red bicycle in the garage", "blue car", "green tram"])
    store = await _store()
    embedder = CountingEmbedder()
    index = MessageIndex(store=store, embedding=embedder)
    index.attach(memory)
    new = await say(memory, thread.id, "user", "and a yellow boat")  # seen being added, the others not
    hits = await index.search(thread.id, (await embedder.embed_batch(["red bicycle"]))[0], limit=10)
    assert {h.source_id for h in hits} == {e.id for e in [*old, new]}
    assert hits[0].source_id == old[0].id
    assert all(type(h) is VectorHit for h in hits)  # the builder needs ids and scores only
    embedded = sorted(t for t in embedder.texts if t != "red bicycle")  # each entry once
    assert embedded == sorted(["red bicycle in the garage", "blue car", "green tram", "and a yellow boat"])
    await index.close()


async def test_backfill_embeds_what_another_writer_added(memory: BaseMemoryAdapter, tmp_path: object) -> None:
    store = await _store()
    embedder = CountingEmbedder()
    index = MessageIndex(store=store, embedding=embedder)
    with pytest.raises(InvalidArgumentError, match="attach"):
        await index.backfill("thread")
    index.attach(memory)
    thread = unwrap(await memory.create_thread("agent"))
    first = await conversation(memory, thread.id, ["one", "two"])
    await index.flush()
    assert await index.backfill(thread.id) == 0  # seen from its first entry: nothing missing
    index.detach()  # what follows is written as by another process: no change events
    later = await conversation(memory, thread.id, ["three", "four", "five"])
    index.attach(memory)
    assert unwrap(await store.get_by_sources([e.id for e in later])) == []
    assert await index.backfill(thread.id) == 3
    stored = unwrap(await store.get_by_sources([e.id for e in [*first, *later]]))
    assert len(stored) == 5 and embedder.texts.count("three") == 1
    assert await index.backfill(thread.id) == 0
    with pytest.raises(InvalidArgumentError, match="thread_id"):
        await index.backfill("")
    await index.close()


async def test_a_failed_backfill_is_raised_and_tried_again(memory: BaseMemoryAdapter) -> None:
    class FlakyEmbedder(CountingEmbedder):
        fail = True

        async def _embed_chunk(self, texts: list[str]) -> list[list[float]]:
            if self.fail:
                raise InvalidArgumentError("texts", "refused for the test")
            return await super()._embed_chunk(texts)

    thread = unwrap(await memory.create_thread("agent"))
    entries = await conversation(memory, thread.id, ["alpha", "beta"])
    store = await _store()
    embedder = FlakyEmbedder()
    index = MessageIndex(store=store, embedding=embedder, max_retries=0)
    index.attach(memory)
    with pytest.raises(InvalidArgumentError, match="refused"):
        await index.backfill(thread.id)
    vector = [1.0] + [0.0] * 63
    assert await index.search(thread.id, vector) == []  # logged; the search still answers
    embedder.fail = False
    index.use(thread.id)  # the failed thread is checked again at its next use
    hits = await index.search(thread.id, vector)
    assert {h.source_id for h in hits} == {e.id for e in entries}
    await index.close()


async def test_vectors_kept_bounds_the_index_and_a_used_thread_is_indexed_again(memory: BaseMemoryAdapter) -> None:
    store = await _store()
    embedder = CountingEmbedder()
    index = MessageIndex(store=store, embedding=embedder, vectors_kept=10)
    index.attach(memory)
    first = unwrap(await memory.create_thread("agent"))
    second = unwrap(await memory.create_thread("agent"))
    old = await conversation(memory, first.id, [f"first {i}" for i in range(8)])
    await index.flush()
    new = await conversation(memory, second.id, [f"second {i}" for i in range(8)])
    await index.flush()
    assert unwrap(await store.get_by_sources([e.id for e in old])) == []  # the thread used least lately went
    assert len(unwrap(await store.get_by_sources([e.id for e in new]))) == 8
    builder = ContextBuilder(
        {"strategy": "relevant", "max_tokens": 500},
        {"memory_adapter": memory, "embedding_service": embedder, "message_index": index},
    )
    context = await builder.build(first.id, current_input="first 3")
    assert context.entries and not context.errors
    await index.flush()
    assert len(unwrap(await store.get_by_sources([e.id for e in old]))) == 8
    assert unwrap(await store.get_by_sources([e.id for e in new])) == []
    await index.close()


async def test_embedding_errors_are_retried(memory: BaseMemoryAdapter) -> None:
    store = await _store()
    async with ScriptedServer() as server:
        server.fallback("/v1/embeddings", openai_embeddings_handler(dimensions=8))
        for _ in range(3):
            server.enqueue("/v1/embeddings", status=429, json={"error": "busy"}, headers={"Retry-After": "0"})
        service = OpenAIEmbeddingService(
            base_url=server.url + "/v1", api_key="sk-test", model="m", dimensions=8, retry=RetryPolicy(max_retries=0)
        )
        index = MessageIndex(store=store, embedding=service, retry_delay=0.01, max_retries=4)
        index.attach(memory)
        thread = unwrap(await memory.create_thread("agent"))
        entries = await conversation(memory, thread.id, ["hello there", "general kenobi"])
        await index.flush()
        assert index.indexed == 2 and index.failed == 0
        assert len(unwrap(await store.get_by_sources([e.id for e in entries]))) == 2
        assert len(server.requests_to("/v1/embeddings")) >= 4
        # A provider that keeps failing: the entries are counted as failed, the index goes on.
        for _ in range(5):  # the first try and 4 retries
            server.enqueue("/v1/embeddings", status=503, json={"error": "down"})
        lost = await say(memory, thread.id, "user", "lost message")
        await index.flush()
        assert index.failed == 1 and index.last_error is not None
        assert unwrap(await store.get_by_sources([lost.id])) == []
        found = await say(memory, thread.id, "user", "found message")
        await index.flush()
        assert len(unwrap(await store.get_by_sources([found.id]))) == 1
        await index.close()
        await service.aclose()


async def test_the_queue_is_bounded_and_waits_for_room(memory: BaseMemoryAdapter) -> None:
    store = await _store()

    class SlowEmbedder(CountingEmbedder):
        async def _embed_chunk(self, texts: list[str]) -> list[list[float]]:
            await asyncio.sleep(0.001)
            return await super()._embed_chunk(texts)

    embedder = SlowEmbedder()
    index = MessageIndex(store=store, embedding=embedder, queue_size=4, batch_size=2)
    index.attach(memory)
    thread = unwrap(await memory.create_thread("agent"))
    entries = await conversation(memory, thread.id, [f"message {i}" for i in range(40)])
    assert index._jobs.waiting <= 4
    assert index.pending > 4  # the rest wait for room instead of filling an unbounded queue
    await index.flush()
    assert index.pending == 0 and index.indexed == 40
    assert len(unwrap(await store.get_by_sources([e.id for e in entries]))) == 40
    await index.close()


def test_bad_arguments_are_named() -> None:
    store = InMemoryEmbeddingAdapter()
    embedder = CountingEmbedder()
    with pytest.raises(InvalidArgumentError, match="store"):
        MessageIndex(store=None, embedding=embedder)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="embedding"):
        MessageIndex(store=store, embedding=object())  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="vectors_kept"):
        MessageIndex(store=store, embedding=embedder, vectors_kept=0)
    with pytest.raises(InvalidArgumentError, match="queue_size"):
        MessageIndex(store=store, embedding=embedder, queue_size=0)
    with pytest.raises(InvalidArgumentError, match="memory"):
        MessageIndex(store=store, embedding=embedder).attach(object())  # type: ignore[arg-type]
