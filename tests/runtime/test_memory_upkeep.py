"""The Memory facade between runs and when forgetting: brief, observations in the built context,
consolidation, the cascade (delete_entries, delete_thread, forget_user) and extraction that
drops items whose entries went while the model answered. The model is scripted over real HTTP."""

from __future__ import annotations

import asyncio
import json
import re
import threading
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cogitator_memory.errors import InvalidArgumentError, MemoryStoreError
from cogitator_memory.runtime.config import ConfigError
from cogitator_memory.runtime.memory import Memory
from cogitator_memory.runtime.sync import SyncMemory
from cogitator_memory.testing.scripted_server import (
    RecordedRequest,
    ScriptedChatRequest,
    ScriptedResponse,
    ScriptedServer,
    openai_chat_handler,
)
from cogitator_memory.testing.services import service_url
from cogitator_memory.upkeep import (
    BRIEF_PROMPT,
    DEDUPE_PROMPT,
    OBSERVATION_PROMPT,
    PLAYBOOK_PATH,
    PLAYBOOK_PROMPT,
    brief_block,
    parse_playbook,
)

PATH = "/v1/chat/completions"
NO_VECTORS = {"provider": "none"}
HASHING = {"provider": "hashing", "dimensions": 64}
ANA = {"agent_id": "default", "user_id": "ana"}
REF = re.compile(r'"ref": "((?:turn|item):[^"]+)"')
ID = re.compile(r'"id": "([^"]+)"')


@dataclass
class Scripted:
    """A chat model whose answer depends on the prompt it was sent (brief, observations...)."""

    server: ScriptedServer
    answers: dict[str, Callable[[ScriptedChatRequest], str]]

    def reply(self, chat: ScriptedChatRequest) -> str:
        for prompt, answer in self.answers.items():
            if chat.system.startswith(prompt):
                return answer(chat)
        return "[]"

    def calls(self, prompt: str) -> list[dict[str, Any]]:
        sent = [r.json() for r in self.server.requests_to(PATH)]
        return [s for s in sent if s["messages"][0]["content"].startswith(prompt)]


@pytest.fixture
def model() -> Any:
    with ScriptedServer() as server:
        scripted = Scripted(server, {})
        server.fallback(PATH, openai_chat_handler(scripted.reply))
        yield scripted


def config(model: Scripted, tmp_path: Path, **more: Any) -> dict[str, Any]:
    return {
        "adapter": "sqlite",
        "path": str(tmp_path / f"{uuid.uuid4().hex[:6]}.db"),
        "embedding": NO_VECTORS,
        "model": {"provider": "compatible", "model": "m", "base_url": model.server.url + "/v1", "api_key": "k"},
        "files": {"enabled": True},  # observations and the playbook are memory files (off until configured)
        **more,
    }


@pytest.fixture
async def memory(model: Scripted, tmp_path: Path) -> AsyncIterator[Memory]:
    async with Memory(config(model, tmp_path, observations={"min_items": 2})) as opened:
        yield opened


async def add_item(memory: Memory, subject: str, value: str, **fields: Any) -> Any:
    item = {"kind": "fact", "subject": subject, "value": value, "trust": "system", "scope": ANA, **fields}
    return await memory.items.add(item)


# ----- the brief ---------------------------------------------------------------------------------


async def test_brief_keeps_cards_quoting_what_search_found_and_builds_them_into_the_context(
    memory: Memory, model: Scripted
) -> None:
    await memory.add(
        [{"role": "user", "content": "Ana is allergic to peanuts, so cook without them."}], user_id="ana", thread_id="t"
    )

    def answer(chat: ScriptedChatRequest) -> str:
        ref = REF.findall(chat.last_user_text)[0]
        return json.dumps(
            [
                {"kind": "constraint", "text": "No peanuts.", "quote": "allergic to peanuts", "source": ref},
                {"kind": "knowledge", "text": "Made up.", "quote": "Ana loves peanut butter", "source": ref},
            ]
        )

    model.answers[BRIEF_PROMPT] = answer
    cards = await memory.brief("What should I cook for Ana's peanuts dinner?", user_id="ana")
    assert [(c.kind, c.text, c.quote) for c in cards] == [("constraint", "No peanuts.", "allergic to peanuts")]
    assert cards[0].source.startswith("turn:")
    [sent] = model.calls(BRIEF_PROMPT)
    assert "allergic to peanuts" in sent["messages"][1]["content"]
    built = await memory.build_context("t", user_id="ana", current_input="Dinner?", brief=brief_block(cards))
    assert "No peanuts." in (built.memory_context or "")
    # nothing found (another user), or a blank input: no model call
    assert await memory.brief("peanuts", user_id="bo") == []
    assert await memory.brief("   ", user_id="ana") == []
    assert len(model.calls(BRIEF_PROMPT)) == 1
    with pytest.raises(InvalidArgumentError, match="input"):
        await memory.brief(None, user_id="ana")  # type: ignore[arg-type]


# ----- observations ------------------------------------------------------------------------------


async def test_refreshed_observations_reach_the_built_context_of_a_turn_naming_the_entity(
    memory: Memory, model: Scripted
) -> None:
    first = await add_item(memory, "Marta", "lives in Porto", attribute="city")
    second = await add_item(memory, "Marta", "works at the port", attribute="job")
    await add_item(memory, "Bo", "lives in Faro", attribute="city")  # one fact: below min_items

    def answer(chat: ScriptedChatRequest) -> str:
        ids = ID.findall(chat.last_user_text)
        return json.dumps([{"statement": "Marta's life is centred on Porto's harbour.", "items": ids}])

    model.answers[OBSERVATION_PROMPT] = answer
    report = await memory.refresh_observations(user_id="ana")
    assert report.calls == 1 and len(report.written) == 1
    assert set(ID.findall(model.calls(OBSERVATION_PROMPT)[0]["messages"][1]["content"])) == {first.id, second.id}
    again = await memory.refresh_observations(user_id="ana")  # nothing changed: no call
    assert again.calls == 0
    await memory.add([{"role": "user", "content": "hello"}], user_id="ana", thread_id="t")
    built = await memory.build_context("t", user_id="ana", current_input="How is Marta doing?")
    assert "About Marta:\n- Marta's life is centred on Porto's harbour." in (built.memory_context or "")
    other = await memory.build_context("t", user_id="ana", current_input="How is the weather?")
    assert "About Marta" not in (other.memory_context or "")
    assert await memory.observations.read({"agent_id": "default", "user_id": "bo"}) == []  # type: ignore[union-attr]


# ----- consolidation -----------------------------------------------------------------------------


async def test_consolidate_marks_repeats_stale_and_folds_lessons_as_the_config_says(
    model: Scripted, tmp_path: Path
) -> None:
    cfg = config(model, tmp_path, consolidation={"playbook": "apply", "max_changes": 5})
    async with Memory(cfg) as memory:
        old = await add_item(memory, "Ana", "likes green tea")
        new = await add_item(memory, "Ana", "enjoys green tea")
        lesson = await add_item(memory, "booking", "Confirm dates before booking.", kind="lesson")

        model.answers[DEDUPE_PROMPT] = lambda chat: json.dumps(
            [{"keep": new.id, "drop": [old.id], "reason": "duplicate"}]
        )
        model.answers[PLAYBOOK_PROMPT] = lambda chat: json.dumps(
            [{"op": "add", "rule": "Confirm dates before booking.", "lessons": [lesson.id]}]
        )
        report = await memory.consolidate(user_id="ana")
        assert report.dedupe is not None and [(m.item_id, m.kept_id) for m in report.dedupe.stale] == [(old.id, new.id)]
        assert report.fold is not None and report.fold.path == PLAYBOOK_PATH
        assert [i.id for i in await memory.items.query(ANA, statuses=["stale"])] == [old.id]
        playbook = await memory.consolidator.read_playbook(ANA)  # type: ignore[union-attr]
        assert playbook is not None
        assert [r.text for r in parse_playbook(playbook.content).rules] == ["Confirm dates before booking."]
        with pytest.raises(InvalidArgumentError, match="since"):
            await memory.consolidate(user_id="ana", since="yesterday")  # type: ignore[arg-type]

    off = config(model, tmp_path, consolidation={"dedupe": False, "fold_lessons": False})
    async with Memory(off) as memory:
        calls = len(model.server.requests_to(PATH))
        assert await memory.consolidate(user_id="ana") == type(report)()
        assert len(model.server.requests_to(PATH)) == calls


async def test_upkeep_without_a_model_or_without_files_says_what_is_missing(tmp_path: Path) -> None:
    async with Memory({"adapter": "memory", "embedding": NO_VECTORS, "files": {"enabled": True}}) as memory:
        for call in (memory.brief("hi"), memory.refresh_observations(), memory.consolidate()):
            with pytest.raises(MemoryStoreError, match="'model' section"):
                await call
    async with Memory({"adapter": "memory", "embedding": NO_VECTORS}) as memory:  # files off by default
        assert memory.files is None and memory.observations is None and memory.context_builder is not None
        assert memory.context_builder.deps.observations is None
        with pytest.raises(MemoryStoreError, match="files are off"):
            await memory.refresh_observations()
    with pytest.raises(ConfigError) as caught:
        Memory({"adapter": "memory", "files": {"enabled": False}, "observations": {"max_entities": 1}})
    assert caught.value.key == "memory.observations"


# ----- extraction and entries that go while the model answers ----------------------------------------


@pytest.mark.parametrize("how", ["deleted", "redacted"])
async def test_extraction_drops_items_whose_entries_went_while_the_model_answered(tmp_path: Path, how: str) -> None:
    answer = json.dumps(
        [
            {
                "kind": "fact",
                "subject": "user",
                "attribute": "city",
                "value": "Braga",
                "quotes": [{"message": 1, "quote": "I live in Braga"}],
            },
            {
                "kind": "fact",
                "subject": "dog",
                "attribute": "name",
                "value": "Rex",
                "quotes": [{"message": 2, "quote": "My dog is called Rex"}],
            },
            {  # stands on both: keeps the quote of the entry still there
                "kind": "fact",
                "subject": "user",
                "attribute": "home",
                "value": "Braga, with Rex",
                "quotes": [{"message": 1, "quote": "I live in Braga"}, {"message": 2, "quote": "My dog is called Rex"}],
            },
        ]
    )
    arrived, release = threading.Event(), threading.Event()
    chat = openai_chat_handler(answer)

    def held(request: RecordedRequest) -> ScriptedResponse:
        arrived.set()
        release.wait(10)
        return chat(request)

    with ScriptedServer() as server:
        server.fallback(PATH, held)
        scripted = Scripted(server, {})
        async with Memory(config(scripted, tmp_path, extraction={"mode": "active"})) as memory:
            adding = asyncio.create_task(
                memory.add(
                    [
                        {"role": "user", "content": "I live in Braga."},
                        {"role": "user", "content": "My dog is called Rex."},
                    ],
                    user_id="ana",
                    thread_id="t",
                )
            )
            assert await asyncio.to_thread(arrived.wait, 10)
            braga = next(
                m
                for m in (await memory.adapter.get_entries(thread_id="t")).data or []
                if "Braga" in str(m.message.content)
            )  # type: ignore[union-attr]
            if how == "deleted":
                counts = await memory.delete_entries([braga.id])
                assert counts.entries.deleted == 1
            else:
                assert memory.cascade is not None
                await memory.cascade.redact_entries([braga.id], {"at": braga.created_at, "reason": "asked"})
            release.set()
            await adding
            found = await memory.items.query(ANA, statuses="all")
        assert sorted(i.value for i in found) == ["Braga, with Rex", "Rex"]
        rex_entry = {e.entry_id for i in found if i.value == "Rex" for e in i.evidence}
        assert all({e.entry_id for e in i.evidence} == rex_entry for i in found)
        assert braga.id not in rex_entry


# ----- forgetting through the cascade ------------------------------------------------------------


def _store(engine: str, tmp_path: Path) -> dict[str, Any]:
    tag = uuid.uuid4().hex[:8]
    if engine == "sqlite":
        return {"adapter": "sqlite", "path": str(tmp_path / "f.db")}
    if engine == "postgres":
        return {
            "adapter": "postgres",
            "connection_string": service_url("COGMEM_TEST_POSTGRES_URL"),
            "options": {"schema": f"rtf_{tag}"},
        }
    return {"adapter": engine}


@pytest.mark.parametrize("engine", ["memory", "sqlite", "postgres"])
async def test_forget_user_takes_their_threads_facts_files_items_and_vectors(engine: str, tmp_path: Path) -> None:
    async with Memory({**_store(engine, tmp_path), "embedding": HASHING, "files": {"enabled": True}}) as memory:
        for user in ("ana", "bo"):
            await memory.add(
                [{"role": "user", "content": f"{user} lives by the sea in Porto."}], user_id=user, thread_id=f"t-{user}"
            )
            await memory.remember(user.title(), core_fact_key="user_name", user_id=user)
            await memory.memory_file_tool(
                {"command": "create", "path": "/memories/notes.md", "file_text": f"{user} likes tea"}, user_id=user
            )
            await memory.items.add(
                {
                    "kind": "fact",
                    "subject": user,
                    "value": "likes tea",
                    "trust": "system",
                    "scope": {"agent_id": "default", "user_id": user},
                }
            )
        await memory.flush()
        assert await memory.facts(user_id="ana") == {"user_name": "Ana"}

        counts = await memory.forget_user("ana")

        assert counts.threads == 1 and counts.entries.deleted >= 1 and counts.vectors >= 1
        assert (await memory.adapter.get_thread("t-ana")).data is None
        assert await memory.facts(user_id="ana") == {}
        assert await memory.items.query({"agent_id": "default", "user_id": "ana"}, statuses="all") == []
        gone = await memory.memory_file_tool({"command": "view", "path": "/memories/notes.md"}, user_id="ana")
        assert gone.is_error
        assert await memory.search("sea Porto", user_id="ana") == []
        # Bo is untouched
        assert await memory.facts(user_id="bo") == {"user_name": "Bo"}
        assert [h.thread_id for h in await memory.search("sea Porto", user_id="bo")][:1] == ["t-bo"]
        kept = await memory.memory_file_tool({"command": "view", "path": "/memories/notes.md"}, user_id="bo")
        assert "bo likes tea" in kept.content
        with pytest.raises(InvalidArgumentError, match="user_id"):
            await memory.forget_user("")


async def test_delete_thread_takes_the_items_that_stood_on_it(tmp_path: Path) -> None:
    async with Memory({"adapter": "sqlite", "path": str(tmp_path / "d.db"), "embedding": NO_VECTORS}) as memory:
        added = await memory.add([{"role": "user", "content": "I live in Braga."}], user_id="ana", thread_id="t")
        await memory.add([{"role": "user", "content": "Another chat."}], user_id="ana", thread_id="t2")
        quote = {"quote": "I live in Braga", "entry_id": added.entries[0].id, "thread_id": "t"}
        await memory.items.add(
            {
                "kind": "fact",
                "subject": "user",
                "attribute": "city",
                "value": "Braga",
                "trust": "user",
                "verified": True,
                "evidence": [quote],
                "scope": ANA,
            }
        )
        counts = await memory.delete_thread("t")
        assert counts.threads == 1 and counts.items.purged == 1
        assert (await memory.adapter.get_thread("t")).data is None and len(await memory.history("t2")) == 1
        assert await memory.items.query(ANA, statuses="all") == []
        with pytest.raises(InvalidArgumentError, match="thread_id"):
            await memory.delete_thread("")


def test_the_sync_twins_forget_too(tmp_path: Path) -> None:
    with SyncMemory({"adapter": "memory", "embedding": NO_VECTORS}) as memory:
        memory.add([{"role": "user", "content": "hi"}], user_id="ana", thread_id="t")
        assert memory.forget_user("ana").threads == 1
        with pytest.raises(MemoryStoreError, match="thread not found"):
            memory.history("t")
        assert memory.delete_thread("nope").threads == 0


async def test_a_disabled_memory_refuses_to_forget() -> None:
    config = {
        "adapter": "redis",
        "connection_string": "redis://127.0.0.1:1/0",
        "options": {"connect_timeout": 0.3},
        "on_error": "disable",
        "embedding": NO_VECTORS,
    }
    with pytest.warns(RuntimeWarning):
        memory = await Memory.open(config)
    try:
        with pytest.raises(MemoryStoreError, match="disabled"):
            await memory.forget_user("ana")
    finally:
        await memory.close()


async def test_redact_entries_and_rewind_go_through_the_cascade(tmp_path: Path) -> None:
    async with Memory({"adapter": "sqlite", "path": str(tmp_path / "r.db"), "embedding": NO_VECTORS}) as memory:
        added = await memory.add(
            [
                {"role": "user", "content": "My passport number is X123."},
                {"role": "assistant", "content": "Noted."},
                {"role": "user", "content": "I moved to Faro."},
            ],
            user_id="ana",
            thread_id="t",
        )
        passport, noted, moved = added.entries
        quote = {"quote": "I moved to Faro", "entry_id": moved.id, "thread_id": "t"}
        faro = await memory.items.add(
            {
                "kind": "fact",
                "subject": "user",
                "attribute": "city",
                "value": "Faro",
                "trust": "user",
                "verified": True,
                "evidence": [quote],
                "scope": ANA,
            }
        )
        counts = await memory.redact_entries([passport.id], reason="the user asked")
        assert counts.entries.redacted == 2  # the message and its reply
        history = [str(m.content) for m in await memory.history("t")]
        assert history == ["[redacted]", "[redacted]", "I moved to Faro."]
        with pytest.raises(InvalidArgumentError, match="reason"):
            await memory.redact_entries([passport.id], reason=3)  # type: ignore[arg-type]

        rewound = await memory.rewind("t", noted.id)
        assert rewound.items.stale == 1
        assert [i.id for i in await memory.items.query(ANA, statuses=["stale"])] == [faro.id]
        assert len(await memory.history("t")) == 2
        with pytest.raises(InvalidArgumentError, match="to_entry_id"):
            await memory.rewind("t", "")
