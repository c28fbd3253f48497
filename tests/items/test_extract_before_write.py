"""``MemoryExtractor.extract(before_write=...)``: the call's own hook, run after the extractor's,
through which a caller drops the items whose entries went while the model answered (a real HTTP
model: ScriptedServer speaking OpenAI's chat completions, held open while the entry is deleted)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from cogitator_memory import InMemoryAdapter, unwrap
from cogitator_memory.errors import InvalidArgumentError
from cogitator_memory.http import RetryPolicy
from cogitator_memory.items import MemoryItems, NewMemoryItem
from cogitator_memory.items.extract import MemoryExtractor
from cogitator_memory.models import OpenAIChatClient
from cogitator_memory.testing.scripted_server import (
    RecordedRequest,
    ScriptedResponse,
    ScriptedServer,
    openai_chat_handler,
)
from cogitator_memory.threads.records import MemoryEntry

PATH = "/v1/chat/completions"
ANA = {"agent_id": "concierge", "user_id": "ana"}


def fact(value: str, *quotes: tuple[int, str], attribute: str = "city") -> dict[str, Any]:
    return {
        "kind": "fact",
        "subject": "user",
        "attribute": attribute,
        "value": value,
        "quotes": [{"message": n, "quote": q} for n, q in quotes],
    }


@dataclass
class Setup:
    server: ScriptedServer
    memory: InMemoryAdapter
    items: MemoryItems
    extractor: MemoryExtractor
    thread_id: str

    async def say(self, text: str) -> MemoryEntry:
        entry = {"thread_id": self.thread_id, "message": {"role": "user", "content": text}}
        return unwrap(await self.memory.add_entry(entry))

    async def entries_left(self, items: list[NewMemoryItem]) -> list[NewMemoryItem]:
        """Keep the items whose every quoted entry is still in the store."""
        kept = []
        for item in items:
            found = [unwrap(await self.memory.get_entry(e.entry_id)) for e in item.evidence if e.entry_id]
            if all(entry is not None for entry in found):
                kept.append(item)
        return kept


@pytest.fixture
async def setup() -> AsyncIterator[Setup]:
    with ScriptedServer() as server:
        retry = RetryPolicy(max_retries=0, backoff_base=0, jitter=0)
        async with (
            InMemoryAdapter() as memory,
            OpenAIChatClient(provider="vllm", base_url=server.url + "/v1", model="m", retry=retry) as client,
        ):
            thread = unwrap(await memory.create_thread("concierge", {"user_id": "ana"}))
            items = MemoryItems(adapter=memory)
            extractor = MemoryExtractor(items=items, summarize=client.as_summarize_fn())
            yield Setup(server, memory, items, extractor, thread.id)


def held_answer(answer: str) -> tuple[threading.Event, threading.Event, Any]:
    """A handler that says when the request arrived and answers only once released."""
    arrived, release = threading.Event(), threading.Event()
    chat = openai_chat_handler(answer)

    def handle(request: RecordedRequest) -> ScriptedResponse:
        arrived.set()
        release.wait(10)
        return chat(request)

    return arrived, release, handle


async def test_an_entry_deleted_while_the_model_answers_writes_no_item(setup: Setup) -> None:
    braga = await setup.say("I live in Braga.")
    await setup.say("My dog is called Rex.")
    answer = json.dumps(
        [fact("Braga", (1, "I live in Braga")), fact("Rex", (2, "My dog is called Rex"), attribute="dog")]
    )
    arrived, release, handle = held_answer(answer)
    setup.server.fallback(PATH, handle)
    entries = unwrap(await setup.memory.get_entries(thread_id=setup.thread_id))
    running = asyncio.create_task(setup.extractor.extract(entries, scope=ANA, before_write=setup.entries_left))
    assert await asyncio.to_thread(arrived.wait, 10)
    unwrap(await setup.memory.delete_entry(braga.id))  # while the model answers
    release.set()
    report = await running
    assert [i.value for i in report.items] == ["Rex"]
    assert [i.value for i in await setup.items.query(ANA, statuses="all")] == ["Rex"]
    assert report.windows[0].items_read == 2 and report.windows[0].items_written == 1


async def test_the_calls_hook_runs_after_the_extractors_own(setup: Setup) -> None:
    await setup.say("I live in Braga and my dog is called Rex.")
    setup.server.fallback(
        PATH,
        openai_chat_handler(
            json.dumps(
                [fact("Braga", (1, "I live in Braga")), fact("Rex", (1, "my dog is called Rex"), attribute="dog")]
            )
        ),
    )
    order: list[str] = []

    def own(items: list[NewMemoryItem]) -> list[NewMemoryItem]:
        order.append("own:" + ",".join(i.value for i in items))
        return [i for i in items if i.value != "Rex"]

    def calls(items: list[NewMemoryItem]) -> list[NewMemoryItem]:  # a plain function works too
        order.append("call:" + ",".join(i.value for i in items))
        return [i.model_copy(update={"confidence": 0.5}) for i in items]

    setup.extractor.before_write = own
    entries = unwrap(await setup.memory.get_entries(thread_id=setup.thread_id))
    report = await setup.extractor.extract(entries, scope=ANA, before_write=calls)
    assert order == ["own:Braga,Rex", "call:Braga"]
    assert [(i.value, i.confidence) for i in report.items] == [("Braga", 0.5)]


async def test_a_hook_that_is_not_callable_is_refused_before_the_model_is_asked(setup: Setup) -> None:
    await setup.say("I live in Braga.")
    entries = unwrap(await setup.memory.get_entries(thread_id=setup.thread_id))
    with pytest.raises(InvalidArgumentError) as caught:
        await setup.extractor.extract(entries, scope=ANA, before_write="drop them")  # type: ignore[arg-type]
    assert caught.value.argument == "before_write"
    assert setup.server.requests_to(PATH) == []
