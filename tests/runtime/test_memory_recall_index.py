"""Memory.search through the recall index on every engine: every thread of the user (not the
newest 20), stemmed words, facts saved with remember and core facts, no reads across users,
forgetting that takes the index with it, and a restart that finds what another process wrote."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from test_memory import _config

from cogitator_memory import SQLiteAdapter
from cogitator_memory.errors import InvalidArgumentError
from cogitator_memory.index.indexer import WATERMARK_KEY
from cogitator_memory.result import unwrap
from cogitator_memory.runtime.memory import Memory

ENGINES = ["memory", "sqlite", "postgres", "redis", "mongodb"]


@pytest.fixture(params=ENGINES)
async def memory(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Memory]:
    # no vectors: rankings that do not wait on the background embedding of a loaded machine
    async with Memory({**_config(request.param, tmp_path), "embedding": {"provider": "none"}}) as opened:
        yield opened


async def test_a_fact_said_in_the_first_of_200_conversations_is_found(memory: Memory) -> None:
    await memory.add([{"role": "user", "content": "By the way, I'm allergic to peanuts."}], user_id="ana")
    for i in range(199):
        await memory.add(
            [
                {"role": "user", "content": f"Let's plan trip number {i} to the mountains."},
                {"role": "assistant", "content": f"Trip {i}: pack boots and water."},
            ],
            user_id="ana",
        )
    await memory.add([{"role": "user", "content": "I'm allergic to cats as well."}], user_id="bo")
    hits = await memory.search("what allergies do I have?", user_id="ana")
    top = [h.text for h in hits[:3]]
    assert any("peanuts" in text for text in top), top
    assert all("cats" not in h.text for h in hits), "Bo's turn is not Ana's"


async def test_a_ranking_deeper_than_a_channel_answers_asks_what_it_can(memory: Memory) -> None:
    # a retriever may rank 10,000 hits a channel (RetrieverSettings.depth); the index's channels
    # return at most MAX_CANDIDATES: the gathering asks for that many instead of failing
    from cogitator_memory.index.records import MAX_CANDIDATES, RecallFilter
    from cogitator_memory.recall.indexed import gather_turns
    from cogitator_memory.recall.query import analyze_query

    await memory.add([{"role": "user", "content": "I'm allergic to peanuts."}], user_id="ana")
    await memory.flush()
    question = "what am I allergic to?"
    flt = RecallFilter(agent_id=memory.agent_id, user_id="ana")
    found = await gather_turns(memory.adapter, question, flt, analyze_query(question), keyword_depth=MAX_CANDIDATES + 1)
    assert [r.text for r in found.records.values()] == ["I'm allergic to peanuts."]


async def test_stemmed_words_find_other_forms(memory: Memory) -> None:
    await memory.add([{"role": "user", "content": "Yesterday I painted the fence blue."}], user_id="ana")
    hits = await memory.search("painting", user_id="ana")
    assert hits and "fence" in hits[0].text


async def test_a_thread_of_another_user_is_refused(memory: Memory) -> None:
    await memory.add([{"role": "user", "content": "My diary: I feel great."}], user_id="bo", thread_id="bo-chat")
    with pytest.raises(InvalidArgumentError, match="another user's thread"):
        await memory.search("diary", user_id="ana", thread_id="bo-chat")
    with pytest.raises(InvalidArgumentError, match="another user's thread"):
        await memory.build_context("bo-chat", user_id="ana")
    assert await memory.search("diary", user_id="ana") == []
    assert [h.thread_id for h in await memory.search("diary", user_id="bo", thread_id="bo-chat")] == ["bo-chat"]


async def test_the_shared_memory_alone_is_searched_with_shared_only(memory: Memory) -> None:
    """``shared_only=True`` finds what belongs to no user (turns of threads without a user, core
    facts of the agent) and nothing of a user's: asked of the index, not left out after it."""
    await memory.add([{"role": "user", "content": "My locker code is 2291."}], user_id="bo", thread_id="bo-chat")
    await memory.add([{"role": "user", "content": "The team locker room opens at 7."}], thread_id="team")
    await (await memory.core_facts(user_id="bo")).set("locker", "Bo keeps locker 12")
    await (await memory.core_facts()).set("locker_rules", "Lockers are emptied on Fridays")
    shared = {h.text for h in await memory.search("locker", shared_only=True)}
    assert any("locker room" in t for t in shared) and any("Fridays" in t for t in shared), shared
    assert not any("2291" in t or "locker 12" in t for t in shared), shared
    every = {h.text for h in await memory.search("locker")}  # no user named: every user's memory
    assert any("2291" in t for t in every), every
    with pytest.raises(InvalidArgumentError, match="another user's thread"):
        await memory.search("locker", shared_only=True, thread_id="bo-chat")
    with pytest.raises(InvalidArgumentError, match="shared_only"):
        await memory.search("locker", shared_only=True, user_id="bo")
    with pytest.raises(InvalidArgumentError, match="shared_only"):
        await memory.search("locker", shared_only="yes")  # type: ignore[arg-type]


async def test_deleted_and_redacted_turns_leave_the_index(memory: Memory) -> None:
    first = await memory.add([{"role": "user", "content": "My locker code is zebra-4411."}], user_id="ana")
    second = await memory.add([{"role": "user", "content": "The wifi password is walrus-9922."}], user_id="ana")
    await memory.flush()
    assert await memory.search("zebra locker", user_id="ana")
    await memory.delete_entries([first.entries[0].id])
    await memory.redact_entries([second.entries[0].id])
    assert await memory.search("zebra locker code", user_id="ana") == []
    assert await memory.search("walrus wifi password", user_id="ana") == []
    store: Any = memory.adapter
    flt = {"statuses": ["active", "superseded", "stale"]}
    assert unwrap(await store.count_recall_records(filter=flt)) == 0


async def test_forget_user_empties_their_part_of_the_index(memory: Memory) -> None:
    await memory.add([{"role": "user", "content": "I collect rare stamps."}], user_id="ana")
    await memory.add([{"role": "user", "content": "I collect rare coins."}], user_id="bo")
    await memory.flush()
    await memory.forget_user("ana")
    store: Any = memory.adapter
    assert unwrap(await store.count_recall_records(filter={"user_id": "ana"})) == 0
    assert unwrap(await store.count_recall_records(filter={"user_id": "bo"})) == 1
    assert [h.text for h in await memory.search("collect rare", user_id="bo")] == ["I collect rare coins."]
    assert await memory.search("stamps", user_id="ana") == []


async def test_core_facts_are_found(memory: Memory) -> None:
    await memory.add([{"role": "user", "content": "hello there"}], user_id="ana")
    facts = await memory.core_facts(user_id="ana")
    await facts.set("home_city", "Porto")
    hits = await memory.search("which city is home?", user_id="ana")
    assert any(h.kind == "item" and "Porto" in h.text for h in hits), hits
    assert not any("Porto" in h.text for h in await memory.search("which city is home?", user_id="bo"))


@pytest.mark.parametrize("engine", ["memory", "sqlite", "postgres"])
async def test_facts_saved_with_remember_are_found(engine: str, tmp_path: Path) -> None:
    async with Memory({**_config(engine, tmp_path), "knowledge_graph": True}) as memory:
        await memory.remember("Ana is allergic to peanuts", user_id="ana")
        hits = await memory.search("allergies", user_id="ana")
        assert [h.kind for h in hits] == ["fact"] and hits[0].text == "Ana is allergic to peanuts"
        assert await memory.search("allergies", user_id="bo") == []


@pytest.mark.parametrize("engine", ["memory", "sqlite"])
async def test_kinds_names_the_hits_wanted(engine: str, tmp_path: Path) -> None:
    async with Memory({**_config(engine, tmp_path), "knowledge_graph": True}) as memory:
        await memory.remember("Ana's dog is called Luna", user_id="ana")
        await memory.add([{"role": "user", "content": "I walked my dog Luna in the park."}], user_id="ana")
        both = {h.kind for h in await memory.search("dog Luna", user_id="ana")}
        assert both == {"fact", "entry"}
        facts = await memory.search("dog Luna", user_id="ana", kinds=["fact"])
        assert [(h.kind, h.text) for h in facts] == [("fact", "Ana's dog is called Luna")]
        turns = await memory.search("dog Luna", user_id="ana", kinds=("entry",))
        assert [(h.kind, h.text) for h in turns] == [("entry", "I walked my dog Luna in the park.")]
        for bad in ([], ["bogus"], "fact"):
            with pytest.raises(InvalidArgumentError, match="kinds"):
                await memory.search("dog", user_id="ana", kinds=bad)  # type: ignore[arg-type]


async def test_a_restart_indexes_what_another_writer_added(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    async with Memory({"adapter": "sqlite", "path": str(path)}) as memory:
        await memory.add([{"role": "user", "content": "I play the cello."}], user_id="ana", thread_id="t1")
        assert await memory.search("cello", user_id="ana")
    # another writer, straight to the store: no indexer listens
    async with SQLiteAdapter(path=str(path)) as store:
        thread = unwrap(await store.create_thread("default", {"user_id": "ana"}))
        unwrap(
            await store.add_entry(
                {"thread_id": thread.id, "message": {"role": "user", "content": "I also play the banjo."}}
            )
        )
        assert unwrap(await store.get_recall_state(WATERMARK_KEY)) is not None
    async with Memory({"adapter": "sqlite", "path": str(path)}) as memory:
        # found by its words and, once the restart embedded it, by its meaning: first (the
        # cello turn, near by meaning, comes after it)
        hits = await memory.search("banjo", user_id="ana")
        assert hits[0].text == "I also play the banjo." and hits[0].score > hits[-1].score
        assert (await memory.search("cello", user_id="ana"))[0].text == "I play the cello."
        assert memory.message_index is not None and memory.vectors is not None
        stored = unwrap(await memory.vectors.get_by_sources([hits[0].id]))
        assert len(stored) == 1  # the turn the other writer added has its vector now


async def test_a_new_conversation_gets_what_the_user_said_in_another(memory: Memory) -> None:
    await memory.add([{"role": "user", "content": "I'm allergic to peanuts."}], user_id="ana", thread_id="old")
    for i in range(30):
        await memory.add([{"role": "user", "content": f"Weather chat number {i}."}], user_id="ana")
    await memory.add([{"role": "user", "content": "I'm allergic to shellfish."}], user_id="bo", thread_id="bo-old")
    await memory.add([{"role": "user", "content": "Hi again!"}], user_id="ana", thread_id="new")
    built = await memory.build_context("new", user_id="ana", current_input="Any snack ideas, given my allergies?")
    context = built.memory_context or ""
    assert "From other conversations:" in context
    assert "peanuts" in context and "shellfish" not in context
    line = next(line for line in context.splitlines() if "peanuts" in line)
    assert line.startswith("[") and "] user: I'm allergic to peanuts." in line  # dated


async def test_an_items_vector_is_made_once_and_kept_in_the_store(tmp_path: Path) -> None:
    from cogitator_memory.embeddings.hashing import HashingEmbedder
    from cogitator_memory.recall.item_vectors import ITEMS_INDEX

    class Counting(HashingEmbedder):
        embedded: list[str] = []  # noqa: RUF012 - shared on purpose: both Memory objects count here

        async def embed_batch(self, texts: Any) -> Any:
            Counting.embedded.extend(texts)
            return await super().embed_batch(texts)

    config = {"adapter": "sqlite", "path": str(tmp_path / "memory.db")}
    item = {
        "kind": "fact",
        "subject": "Ana",
        "attribute": "city",
        "value": "Porto",
        "trust": "system",
        "scope": {"agent_id": "default", "user_id": "ana"},
    }
    async with Memory(config, embedding_service=Counting(dimensions=64)) as memory:
        await memory.items.add(item)
        hits = await memory.search("where does Ana live? city", user_id="ana")
        assert any(h.kind == "item" and "Porto" in h.text for h in hits)
        assert Counting.embedded.count("Ana city Porto") == 1
        kept = unwrap(await memory.vectors.get_by_sources([hits[0].id]))
        assert [e.metadata["index"] for e in kept] == [ITEMS_INDEX]
    async with Memory(config, embedding_service=Counting(dimensions=64)) as memory:
        await memory.search("where does Ana live? city", user_id="ana")
        assert Counting.embedded.count("Ana city Porto") == 1, "read back after a restart, not embedded again"


async def test_a_dead_embedding_service_searches_by_keywords_and_indexes_the_turns_later(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Real HTTP to a port nothing listens on: search warns and goes on; the turns written
    meanwhile are embedded at the next use of their thread, not dropped."""
    import socket

    from cogitator_memory.embeddings.hashing import HashingEmbedder
    from cogitator_memory.embeddings.openai import OpenAIEmbeddingService
    from cogitator_memory.http import RetryPolicy

    with socket.socket() as probe:  # a free port, closed again: connections to it are refused
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    dead = OpenAIEmbeddingService(
        api_key="k", base_url=f"http://127.0.0.1:{port}/v1", dimensions=8, retry=RetryPolicy(max_retries=0)
    )
    config = {"adapter": "sqlite", "path": str(tmp_path / "memory.db")}
    async with Memory(config, embedding_service=dead) as memory:
        assert memory.message_index is not None
        memory.message_index.max_retries = 0
        await memory.add([{"role": "user", "content": "I'm allergic to peanuts."}], user_id="ana", thread_id="t1")
        with caplog.at_level("WARNING", logger="cogitator_memory"):
            hits = await memory.search("allergies", user_id="ana")
        assert [h.text for h in hits] == ["I'm allergic to peanuts."]
        assert any("embedding service failed" in r.getMessage() for r in caplog.records)
        assert memory.message_index.failed >= 1
        assert "t1" not in memory.message_index._checked, "the thread is checked again at its next use"
        memory.message_index.embedding = HashingEmbedder(dimensions=8)  # the service is back
        assert memory.message_index.retry_failed(after=0.0) == 1
        await memory.message_index.flush()
        await asyncio.sleep(0)
        stored = unwrap(await memory.vectors.get_by_sources([hits[0].id]))
        assert len(stored) == 1, "the turn written while the service was down is embedded now"


async def test_a_value_that_no_longer_holds_ranks_below_the_current_one(memory: Memory) -> None:
    from datetime import UTC, datetime

    said = await memory.add([{"role": "user", "content": "I live in Lisbon."}], user_id="ana", thread_id="t1")
    scope = {"agent_id": memory.agent_id, "user_id": "ana"}
    base = {"kind": "fact", "subject": "Ana", "attribute": "city", "trust": "system", "scope": scope}
    lisbon = said.entries[0]
    await memory.items.add(
        {
            **base,
            "value": "Lisbon",
            "valid_from": datetime(2024, 1, 1, tzinfo=UTC),
            "evidence": [{"quote": "I live in Lisbon", "entry_id": lisbon.id, "thread_id": "t1"}],
        }
    )
    await memory.items.add({**base, "value": "Porto", "valid_from": datetime(2026, 1, 1, tzinfo=UTC)})
    hits = await memory.search("where does Ana live now? city Lisbon Porto", user_id="ana")
    order = [(h.kind, h.text) for h in hits]
    assert order.index(("item", "Ana city Porto")) < order.index(("item", "Ana city Lisbon")), order
    assert order.index(("item", "Ana city Porto")) < order.index(("entry", "I live in Lisbon.")), order
    old = next(h for h in hits if h.text == "Ana city Lisbon")
    assert old.valid_to == datetime(2026, 1, 1, tzinfo=UTC) and old.dump()["valid_to"].startswith("2026-01-01")
    assert next(h for h in hits if h.text == "Ana city Porto").valid_to is None


@pytest.mark.parametrize("engine", ["memory", "sqlite", "postgres", "redis", "mongodb"])
async def test_a_question_about_one_of_two_people_ranks_what_that_person_said_first(
    engine: str, tmp_path: Path
) -> None:
    # a chat between two named people: the index keeps each turn's speaker, so the retriever
    # reads who a question asks about (the same words said by the other rank below)
    config = {**_config(engine, tmp_path), "embedding": {"provider": "none"}}
    owen = "We adopted a rescue dog last week, his name is Biscuit."
    casey = "We adopted a rescue dog too, her name is Pepper."
    async with Memory(config) as memory:
        said = [
            {"role": "user", "name": "Owen", "content": owen},
            {"role": "user", "name": "Casey", "content": casey},
        ]
        await memory.add(said, user_id="room", thread_id="chat")
        for asked, first in (("Casey", casey), ("Owen", owen)):
            hits = await memory.search(f"What is the name of the rescue dog {asked} adopted?", user_id="room")
            assert [h.text for h in hits][:2] == [first, owen if first == casey else casey], asked


@pytest.mark.parametrize("engine", ["memory", "sqlite"])
async def test_many_items_do_not_crowd_a_turn_out_of_the_keyword_channel(engine: str, tmp_path: Path) -> None:
    # turns and the other kinds are asked of the keyword channel apart: 450 short items holding
    # the word outrank the one long turn by BM25, and it is found all the same
    async with Memory({**_config(engine, tmp_path), "embedding": {"provider": "none"}}) as memory:
        said = "On the boat trip we saw a walrus resting on the ice, " + "and the guide told stories " * 12
        await memory.add([{"role": "user", "content": said}], user_id="ana")
        scope = {"agent_id": memory.agent_id, "user_id": "ana"}
        await memory.items.add_many(
            [
                {
                    "kind": "fact",
                    "subject": f"walrus {i}",
                    "value": f"walrus number {i}",
                    "trust": "system",
                    "scope": scope,
                }
                for i in range(450)
            ]
        )
        hits = await memory.search("walrus", user_id="ana", limit=20)
        assert sum(h.kind == "item" for h in hits) >= 10
        assert any(h.kind == "entry" and "boat trip" in h.text for h in hits), [h.text for h in hits]


async def test_an_index_that_fails_leaves_the_threads_own_recall(tmp_path: Path) -> None:
    # the thread's older turns and the user's other conversations are searched side by side:
    # the index failing under the second and under the items (its postings gone) is a relevance
    # error of each, and the thread's turns are still recalled
    path = tmp_path / "memory.db"
    config = {"adapter": "sqlite", "path": str(path), "embedding": {"provider": "none"}}
    async with Memory(config) as memory:
        await memory.add([{"role": "user", "content": "My sister Zelda lives in Porto."}], user_id="ana", thread_id="t")
        for i in range(40):
            chat = f"Weather chat number {i} about clouds and rain over the hills today."
            await memory.add([{"role": "user", "content": chat}], user_id="ana", thread_id="t")
        await memory.add([{"role": "user", "content": "Zelda once visited Oslo."}], user_id="ana", thread_id="other")
        with sqlite3.connect(path) as conn:
            conn.execute("DROP TABLE recall_terms")
        built = await memory.build_context("t", user_id="ana", current_input="Where does Zelda live?", max_tokens=300)
    relevance = [e for e in built.errors if e.source == "relevance"]
    assert len(relevance) == 2 and all("recall_terms" in e.message for e in relevance)
    context = built.memory_context or ""
    assert "Earlier in this conversation:" in context and "Zelda lives in Porto" in context
    assert "Oslo" not in context


@pytest.mark.parametrize("engine", ENGINES)
async def test_turns_found_by_meaning_first_are_read_while_the_keywords_are_asked(
    engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the nearest turns' records are read while a slow keyword channel answers: the same hits
    from cogitator_memory.runtime import search as searching

    config = {**_config(engine, tmp_path), "embedding": {"provider": "hashing", "dimensions": 64}}
    async with Memory(config) as memory:
        for i in range(12):
            await memory.add(
                [
                    {"role": "user", "content": f"Trip {i}: we hiked the ridge near Braga and saw wolves."},
                    {"role": "assistant", "content": f"Noted trip {i}, the ridge walk with the wolves."},
                ],
                user_id="ana",
            )
        question = "when did we see wolves on the ridge?"
        plain = await memory.search(question, user_id="ana")
        read: list[int] = []
        turn_records = searching.turn_records

        async def counted(store: Any, ids: Any, flt: Any) -> Any:
            read.append(len(ids))
            return await turn_records(store, ids, flt)

        asked = searching._keyword_channels

        async def slow(*args: Any) -> Any:
            await asyncio.sleep(0.3)
            return await asked(*args)

        monkeypatch.setattr(searching, "turn_records", counted)
        monkeypatch.setattr(searching, "_keyword_channels", slow)
        early = await memory.search(question, user_id="ana")
    assert read and read[0] > 0  # read while the keywords were asked
    assert [(h.id, h.score) for h in early] == [(h.id, h.score) for h in plain] and plain
