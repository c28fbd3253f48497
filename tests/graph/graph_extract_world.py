"""Shared plumbing of the graph extraction tests: real stores (in process, SQLite, PostgreSQL) and a
scripted model over real HTTP (ScriptedServer speaking OpenAI's chat completions)."""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from cogitator_memory import InMemoryAdapter, SQLiteAdapter, unwrap
from cogitator_memory.graph.base import GraphStoreMixin
from cogitator_memory.http import RetryPolicy
from cogitator_memory.models import BaseChatClient, OpenAIChatClient
from cogitator_memory.testing import service_url
from cogitator_memory.testing.scripted_server import ScriptedChatRequest, ScriptedServer, openai_chat_handler
from cogitator_memory.threads.records import MemoryEntry

PATH = "/v1/chat/completions"
STORES = ["memory", "sqlite", "postgres"]
BLOCK = re.compile(r'<message number="(\d+)" from="(\w+)"([^>]*)>\n(.*?)\n</message>', re.S)


def shown(chat: ScriptedChatRequest) -> dict[int, str]:
    """Message number -> text of the window a request carried (its first user turn)."""
    return {int(m.group(1)): m.group(4) for m in BLOCK.finditer(chat.messages[0][1])}


def entity(name: str, kind: str, *quotes: tuple[int, str], **extra: Any) -> dict[str, Any]:
    return {"entity": name, "type": kind, "quotes": [{"message": n, "quote": q} for n, q in quotes], **extra}


def relation(kind: str, source: str, target: str, *quotes: tuple[int, str], **extra: Any) -> dict[str, Any]:
    return {
        "relation": kind,
        "source": source,
        "target": target,
        "quotes": [{"message": n, "quote": q} for n, q in quotes],
        **extra,
    }


def array(*elements: dict[str, Any]) -> str:
    return json.dumps(list(elements))


@asynccontextmanager
async def open_store(kind: str, tmp_path: Path) -> AsyncIterator[Any]:
    """A fresh connected store of ``kind`` (PostgreSQL: a schema of its own, dropped after)."""
    if kind == "memory":
        async with InMemoryAdapter() as memory:
            yield memory
    elif kind == "sqlite":
        async with SQLiteAdapter(path=str(tmp_path / "memory.db")) as sqlite:
            yield sqlite
    else:
        import psycopg

        from cogitator_memory.engines.postgres.adapter import PostgresAdapter

        url = service_url("COGMEM_TEST_POSTGRES_URL")
        schema = f"cogmem_gx_{secrets.token_hex(6)}"
        try:
            async with PostgresAdapter(connection_string=url, schema=schema, pool_size=2, dimensions=8) as pg:
                yield pg
        finally:
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


class Model:
    """A scripted model reached over HTTP: ``answer(fn_or_text)`` sets what it says."""

    def __init__(self, server: ScriptedServer, client: BaseChatClient) -> None:
        self.server = server
        self.client = client

    def answer(self, model: Callable[[ScriptedChatRequest], str] | str) -> None:
        self.server.fallback(PATH, openai_chat_handler(model))

    def requests(self) -> list[dict[str, Any]]:
        return [r.json() for r in self.server.requests_to(PATH)]


@asynccontextmanager
async def scripted_model() -> AsyncIterator[Model]:
    with ScriptedServer() as server:
        retry = RetryPolicy(max_retries=0, backoff_base=0, jitter=0)
        async with OpenAIChatClient(
            provider="vllm", base_url=server.url + "/v1", model="extractor", retry=retry
        ) as client:
            yield Model(server, client)


async def say(store: Any, thread_id: str, text: str, role: str = "user") -> MemoryEntry:
    entry: MemoryEntry = unwrap(
        await store.add_entry({"thread_id": thread_id, "message": {"role": role, "content": text}})
    )
    return entry


async def graph_of(store: GraphStoreMixin, agent: str) -> tuple[dict[str, Any], list[tuple[str, str, str]]]:
    """The agent's nodes by name, and its edges as (source name, type, target name), sorted."""
    nodes = unwrap(await store.query_nodes({"agent_id": agent}))
    names = {n.id: n.name for n in nodes}
    edges = unwrap(await store.query_edges({"agent_id": agent}))
    return {n.name: n for n in nodes}, sorted((names[e.source_id], e.type, names[e.target_id]) for e in edges)
