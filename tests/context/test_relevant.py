"""The relevant strategy, semantic context, and builds that survive failing parts."""

from __future__ import annotations

from pathlib import Path

import pytest
from ctx_helpers import CountingEmbedder, conversation, say

from cogitator_memory import SQLiteAdapter, unwrap
from cogitator_memory.context import ContextBuilder, MessageIndex
from cogitator_memory.embeddings import HashingEmbedder, OpenAIEmbeddingService, RetryPolicy
from cogitator_memory.testing.scripted_server import ScriptedResponse, ScriptedServer
from cogitator_memory.threads.base import BaseMemoryAdapter
from cogitator_memory.tokens import count_tokens
from cogitator_memory.vectors import InMemoryEmbeddingAdapter, SQLiteEmbeddingAdapter

TOPICS = [
    "I bought a red bicycle with thin racing tyres",
    "Nice, racing bicycles are fast",
    "My sister plays the cello in an orchestra",
    "The cello has a warm deep sound",
    "We had pasta with tomato sauce for dinner",
    "Tomato sauce pasta is a classic dinner",
    "The weather forecast says heavy rain tomorrow",
    "Take an umbrella for the rain then",
]


#: The 64-dimension hashing embedder scores unrelated texts up to about 0.3 by chance (a real
#: model's unrelated texts score under 0.1, the retriever's default floor): tests that rank by
#: its cosines keep the vector channel above that noise.
HASHING_NOISE_FLOOR = {"vector_min_cosine": 0.3}


def relevant(memory: BaseMemoryAdapter, service: object, **extra: object) -> ContextBuilder:
    return ContextBuilder(
        {"strategy": "relevant", "max_tokens": 1000, "reserve_tokens": 0, "recall": HASHING_NOISE_FLOOR},
        {"memory_adapter": memory, "embedding_service": service, **extra},
    )


async def test_relevant_ranks_by_similarity_and_keeps_conversation_order(memory: BaseMemoryAdapter) -> None:
    thread = unwrap(await memory.create_thread("agent"))
    entries = await conversation(memory, thread.id, TOPICS)
    embedder = CountingEmbedder()
    b = relevant(memory, embedder)
    question = "my sister plays the cello, it has a warm deep sound"
    room = sum(b._tokens.tokens(e) for e in entries[2:4]) + count_tokens(question) + 4 + 2
    context = await b.build(thread.id, current_input=question, max_tokens=room)
    assert context.strategy == "relevant"
    assert [e.id for e in context.entries] == [entries[2].id, entries[3].id]
    assert context.truncated and len(context.dropped.entries) == 6
    assert [e.seq for e in context.dropped.entries] == sorted(e.seq for e in context.dropped.entries)
    # Each entry was embedded once; a second build embeds only the new input.
    embedded = len(embedder.texts)
    assert embedded == len(TOPICS) + 1
    await b.build(thread.id, current_input="tell me about the red bicycle tyres", max_tokens=room)
    assert len(embedder.texts) == embedded + 1
    again = await b.build(thread.id, current_input="tell me about the red bicycle tyres", max_tokens=room)
    assert len(embedder.texts) == embedded + 1  # the input's vector is remembered too
    assert again.entries[0].id == entries[0].id


async def test_relevant_scores_only_the_newest_200_without_an_index(memory: BaseMemoryAdapter) -> None:
    thread = unwrap(await memory.create_thread("agent"))
    await say(memory, thread.id, "user", "the secret password is swordfish")
    await conversation(memory, thread.id, [f"filler message {i} about nothing" for i in range(220)])
    embedder = CountingEmbedder()
    context = await relevant(memory, embedder).build(thread.id, current_input="what is the secret password swordfish")
    assert len(embedder.texts) == 201  # 200 entries and the input
    assert all("swordfish" not in e.message.text for e in context.entries)  # type: ignore[union-attr]


async def test_relevant_falls_back_to_recent(memory: BaseMemoryAdapter) -> None:
    thread = unwrap(await memory.create_thread("agent"))
    entries = await conversation(memory, thread.id, TOPICS)
    no_input = await relevant(memory, HashingEmbedder(64)).build(thread.id, max_tokens=60)
    assert no_input.strategy == "recent" and no_input.entries[-1].id == entries[-1].id
    no_service = await ContextBuilder({"strategy": "relevant"}, {"memory_adapter": memory}).build(
        thread.id, current_input="cello", max_tokens=60, reserve_tokens=0
    )
    assert no_service.strategy == "recent" and no_service.entries[-1].id == entries[-1].id
    assert not no_input.errors and not no_service.errors and not no_input.warnings
    # the fallback is said: without an embedding service relevance cannot rank
    assert any("needs an embedding service" in w for w in no_service.warnings)
    hybrid = await ContextBuilder(
        {"strategy": "hybrid"}, {"memory_adapter": memory, "embedding_service": HashingEmbedder(64)}
    ).build(thread.id, current_input="cello", max_tokens=100, reserve_tokens=0)
    assert hybrid.strategy == "hybrid" and hybrid.recalled is not None  # hybrid recalls (see test_hybrid.py)
    # and keeps the newest messages as history, a reply with its question
    assert [e.id for e in hybrid.entries[-2:]] == [e.id for e in entries[-2:]]


async def test_relevant_with_a_message_index_finds_older_entries(memory: BaseMemoryAdapter) -> None:
    thread = unwrap(await memory.create_thread("agent", {"user_id": "ana"}))
    store = InMemoryEmbeddingAdapter()
    await store.connect()
    embedder = CountingEmbedder()
    index = MessageIndex(store=store, embedding=embedder)
    index.attach(memory)
    secret = await say(memory, thread.id, "user", "the secret password is swordfish")
    await conversation(memory, thread.id, [f"filler message {i} about nothing" for i in range(240)])
    await index.flush()
    assert index.indexed == 241 and index.failed == 0
    hits = unwrap(await store.get_by_sources([secret.id]))
    assert hits[0].metadata == {
        "index": "messages",
        "thread_id": thread.id,
        "agent_id": "agent",
        "user_id": "ana",
        "entry_seq": secret.seq,
    }
    before = len(embedder.texts)
    b = relevant(memory, embedder, message_index=index)
    context = await b.build(thread.id, current_input="what is the secret password swordfish", max_tokens=300)
    assert context.entries[0].id == secret.id and context.strategy == "relevant"
    assert len(embedder.texts) == before + 1  # only the input: entry vectors come from the index
    # An entry on another branch is not found.
    unwrap(await memory.rewind(thread.id, secret.id))
    unwrap(await memory.checkout(thread.id, secret.id))
    other = unwrap(await memory.create_thread("agent"))
    await say(memory, other.id, "user", "the secret password is not swordfish here")
    await index.flush()
    mine = await b.build(thread.id, current_input="what is the secret password swordfish", max_tokens=300)
    assert [e.id for e in mine.entries] == [secret.id]
    await index.close()


async def test_semantic_context_is_scoped_and_thresholded(memory: BaseMemoryAdapter) -> None:
    thread = unwrap(await memory.create_thread("agent-1", {"user_id": "ana"}))
    await conversation(memory, thread.id, ["hello", "hi"])
    embedder = HashingEmbedder(64)
    store = InMemoryEmbeddingAdapter()
    await store.connect()
    docs = [
        ("d1", "machine learning is a field of artificial intelligence", {}),
        ("d2", "machine learning is a field of artificial intelligence and statistics", {"agent_id": "agent-1"}),
        ("d3", "machine learning is a field of artificial intelligence for agent two", {"agent_id": "agent-2"}),
        ("d4", "machine learning is a field of artificial intelligence for bob", {"user_id": "bob"}),
        ("d5", "a recipe for tomato soup", {}),
    ]
    for source, text, meta in docs:
        unwrap(
            await store.add_embedding(
                {
                    "source_id": source,
                    "source_type": "doc",
                    "content": text,
                    "vector": await embedder.embed(text),
                    "metadata": meta,
                }
            )
        )
    b = ContextBuilder(
        {"strategy": "recent", "include_semantic_context": True, "max_tokens": 2000},
        {"memory_adapter": memory, "embedding_adapter": store, "embedding_service": embedder},
    )
    context = await b.build(thread.id, current_input="What is machine learning, a field of artificial intelligence?")
    found = {r.source_id for r in context.semantic_results}
    assert found == {"d1", "d2"}
    assert all(r.score >= 0.7 for r in context.semantic_results)
    assert context.memory_context is not None and "Relevant context:\n- machine learning" in context.memory_context
    assert context.metadata.semantic_results_included == 2 and context.partitions["recall"] > 0
    no_input = await b.build(thread.id)
    assert no_input.semantic_results == [] and no_input.memory_context is None


class _FilteringLate(InMemoryEmbeddingAdapter):
    """A store whose ``metadata_not`` is not cheap (as PostgreSQL's is not): the section searches
    without it and drops the turns and items from the hits itself, widening the search."""

    cheap_metadata_not = False


@pytest.mark.parametrize("kind", ["memory", "sqlite", "filtering late"])
async def test_semantic_context_looks_past_the_vectors_memory_keeps_of_turns_and_items(
    memory: BaseMemoryAdapter, kind: str, tmp_path: Path
) -> None:
    """Turn and item vectors share the store with documents; however many of them sit nearer the
    input than a document, the document is still found (and they are not semantic context). A
    store that leaves them out cheaply is asked to: SQLite reads none of their codes."""
    thread = unwrap(await memory.create_thread("agent-1", {"user_id": "ana"}))
    await conversation(memory, thread.id, ["hello", "hi"])
    embedder = HashingEmbedder(64)
    store: InMemoryEmbeddingAdapter | SQLiteEmbeddingAdapter
    if kind == "sqlite":
        store = SQLiteEmbeddingAdapter(path=tmp_path / "v.db")
    else:
        store = _FilteringLate() if kind == "filtering late" else InMemoryEmbeddingAdapter()
    await store.connect()
    text = "machine learning is a field of artificial intelligence"
    vector = await embedder.embed(text)
    rows = [
        {
            "source_id": f"e{i}",
            "source_type": "message",
            "content": text,
            "vector": vector,
            "metadata": {"index": "messages" if i % 2 else "items"},
        }
        for i in range(300)
    ]
    unwrap(await store.add_embeddings(rows))
    near = await embedder.embed(text + " and statistics")
    doc = {
        "source_id": "doc",
        "source_type": "doc",
        "content": text + " and statistics",
        "vector": near,
        "metadata": {},
    }
    unwrap(await store.add_embedding(doc))
    b = ContextBuilder(
        {"strategy": "recent", "include_semantic_context": True, "max_tokens": 2000},
        {"memory_adapter": memory, "embedding_adapter": store, "embedding_service": embedder},
    )
    context = await b.build(thread.id, current_input=text)
    assert [r.source_id for r in context.semantic_results] == ["doc"]
    if isinstance(store, SQLiteEmbeddingAdapter):
        assert store.code_cache.chunks_read == 1, "only the part of vectors of no index is read"
    await store.disconnect()


async def test_a_disconnected_store_is_reported_not_raised(tmp_path: Path) -> None:
    memory = SQLiteAdapter(path=tmp_path / "t.db")
    await memory.connect()
    thread = unwrap(await memory.create_thread("agent"))
    await conversation(memory, thread.id, ["hello", "hi"])
    await memory.disconnect()
    context = await ContextBuilder({"strategy": "recent", "max_tokens": 500}, {"memory_adapter": memory}).build(
        thread.id, system_prompt="You help."
    )
    assert [e.source for e in context.errors] == ["history"]
    assert "not connected" in context.errors[0].message
    assert [m.role for m in context.messages] == ["system"]


async def test_an_embedding_api_answering_429_leaves_relevance_and_semantics_out(memory: BaseMemoryAdapter) -> None:
    thread = unwrap(await memory.create_thread("agent"))
    entries = await conversation(memory, thread.id, TOPICS)
    store = InMemoryEmbeddingAdapter()
    await store.connect()
    async with ScriptedServer() as server:
        server.fallback(
            "/v1/embeddings",
            lambda _r: ScriptedResponse(status=429, json={"error": "slow down"}, headers={"Retry-After": "0"}),
        )
        service = OpenAIEmbeddingService(
            base_url=server.url + "/v1",
            api_key="sk-test",
            model="m",
            dimensions=8,
            retry=RetryPolicy(max_retries=1, backoff_base=0),
        )
        b = ContextBuilder(
            {"strategy": "relevant", "include_semantic_context": True, "max_tokens": 100, "reserve_tokens": 0},
            {"memory_adapter": memory, "embedding_service": service, "embedding_adapter": store},
        )
        context = await b.build(thread.id, current_input="cello")
        await service.aclose()
    assert sorted(e.source for e in context.errors) == ["relevance", "semantic"]
    assert "429" in context.errors[0].message
    assert context.strategy == "recent" and context.entries[-1].id == entries[-1].id


async def test_a_vector_size_mismatch_falls_back_to_recent(memory: BaseMemoryAdapter) -> None:
    thread = unwrap(await memory.create_thread("agent"))
    entries = await conversation(memory, thread.id, TOPICS)
    store = InMemoryEmbeddingAdapter()
    await store.connect()
    index = MessageIndex(store=store, embedding=HashingEmbedder(32))
    index.attach(memory)
    await say(memory, thread.id, "user", "indexed with 32 dimensions")
    await index.flush()
    b = ContextBuilder(
        {"strategy": "relevant", "include_semantic_context": True, "max_tokens": 100, "reserve_tokens": 0},
        {
            "memory_adapter": memory,
            "embedding_service": HashingEmbedder(64),
            "embedding_adapter": store,
            "message_index": index,
        },
    )
    context = await b.build(thread.id, current_input="cello")
    assert sorted(e.source for e in context.errors) == ["relevance", "semantic"]
    assert "dimensions" in context.errors[0].message
    assert context.strategy == "recent" and context.entries
    assert entries[0].id not in {e.id for e in context.entries}
    await index.close()


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_relevant_on_each_embedding_store(kind: str, tmp_path: Path) -> None:
    async with SQLiteAdapter(path=tmp_path / "both.db") as memory:
        store = InMemoryEmbeddingAdapter() if kind == "memory" else SQLiteEmbeddingAdapter(store=memory)
        await store.connect()
        index = MessageIndex(store=store, embedding=HashingEmbedder(64))
        index.attach(memory)
        thread = unwrap(await memory.create_thread("agent"))
        entries = await conversation(memory, thread.id, TOPICS)
        await index.flush()
        context = await relevant(memory, HashingEmbedder(64), message_index=index).build(
            thread.id, current_input="heavy rain umbrella", max_tokens=40
        )
        assert {e.id for e in context.entries} & {entries[6].id, entries[7].id}
        await index.close()
        await store.disconnect()
