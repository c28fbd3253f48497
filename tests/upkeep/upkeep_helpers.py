"""Upkeep tests: real stores (in memory, SQLite, PostgreSQL) and a scripted model over real HTTP.

``world`` gives a connected store, the item and file services on it, and :class:`Model`: an
OpenAI-compatible chat client talking to a :class:`ScriptedServer` whose answers the test scripts
(texts, or functions of the request that read what the model was shown), each request recorded.
"""

from __future__ import annotations

import json
import re
import secrets
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from cogitator_memory import InMemoryAdapter, SQLiteAdapter, frozen_clock
from cogitator_memory.files import MemoryFiles
from cogitator_memory.http import RetryPolicy
from cogitator_memory.items import MemoryItem, MemoryItems
from cogitator_memory.models import OpenAIChatClient, SummarizeFn
from cogitator_memory.testing import postgres_database
from cogitator_memory.testing.scripted_server import ScriptedChatRequest, ScriptedServer, openai_chat_handler

PATH = "/v1/chat/completions"
AGENT = "concierge"
ANA: dict[str, Any] = {"agent_id": AGENT, "user_id": "ana"}
SHARED: dict[str, Any] = {"agent_id": AGENT}
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
ID = re.compile(r'"id": "([^"]+)"')

Answer = Callable[[ScriptedChatRequest], str] | str


@dataclass
class Model:
    """A scripted chat model: queued answers first, then ``default`` (``[]``)."""

    server: ScriptedServer
    client: OpenAIChatClient
    queue: deque[Answer] = field(default_factory=deque)
    default: Answer = "[]"
    seen: list[ScriptedChatRequest] = field(default_factory=list)

    def answer(self, *answers: Answer) -> None:
        self.queue.extend(answers)

    def _reply(self, chat: ScriptedChatRequest) -> str:
        self.seen.append(chat)
        answer = self.queue.popleft() if self.queue else self.default
        return answer if isinstance(answer, str) else answer(chat)

    @property
    def summarize(self) -> SummarizeFn:
        return self.client.as_summarize_fn()

    @property
    def calls(self) -> int:
        return len(self.server.requests_to(PATH))


def shown_ids(chat: ScriptedChatRequest) -> list[str]:
    """The item ids a request showed (its data lines), in order."""
    return ID.findall(chat.last_user_text)


@dataclass
class World:
    memory: Any
    items: MemoryItems
    files: MemoryFiles
    model: Model

    async def add(
        self,
        subject: str,
        value: str,
        *,
        at: datetime = T0,
        scope: dict[str, Any] | None = None,
        trust: str = "system",
        **fields: Any,
    ) -> MemoryItem:
        """One item, written as of ``at`` (system items are active at once)."""
        item: dict[str, Any] = {
            "kind": fields.pop("kind", "fact"),
            "subject": subject,
            "attribute": fields.pop("attribute", None),
            "value": value,
            "trust": trust,
            "scope": scope or ANA,
            **fields,
        }
        with frozen_clock(at):
            return await self.items.add(item)


def _pg_url() -> Iterator[str]:
    with postgres_database("cogmem_upkeep") as url:
        yield url


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    yield from _pg_url()


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    if request.param == "memory":
        async with InMemoryAdapter() as memory:
            yield memory
    elif request.param == "sqlite":
        async with SQLiteAdapter(path=tmp_path / "upkeep.db") as memory:
            yield memory
    else:
        from cogitator_memory.engines.postgres.adapter import PostgresAdapter

        url = request.getfixturevalue("pg_url")
        schema = f"cogmem_u_{secrets.token_hex(6)}"
        async with PostgresAdapter(connection_string=url, schema=schema, pool_size=3, dimensions=8) as memory:
            yield memory


@pytest.fixture
async def model() -> AsyncIterator[Model]:
    with ScriptedServer() as server:
        retry = RetryPolicy(max_retries=0, backoff_base=0, jitter=0)
        async with OpenAIChatClient(
            provider="vllm", base_url=server.url + "/v1", model="upkeep", retry=retry
        ) as client:
            scripted = Model(server, client)
            server.fallback(PATH, openai_chat_handler(scripted._reply))
            yield scripted


@pytest.fixture
async def world(store: Any, model: Model) -> World:
    return World(store, MemoryItems(adapter=store), MemoryFiles(adapter=store), model)


def array(*elements: Any) -> str:
    """A model answer: prose, then the JSON array."""
    return "Here is what I found:\n" + json.dumps(list(elements))
