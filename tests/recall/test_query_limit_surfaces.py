"""The cap on a turn's length through every surface (issue 33, item 5): ``Memory.search`` and
``build_context`` on every engine, the REST server (400, and ``/health`` answered while a turn at
the cap is read) and the MCP server (a tool error)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client

from cogitator_memory.errors import InvalidArgumentError
from cogitator_memory.recall import MAX_QUERY_CHARS
from cogitator_memory.runtime.memory import Memory
from cogitator_memory.server.mcp import create_server
from cogitator_memory.server.rest import create_app
from engine_configs import memory_config

OVER = "where " * (MAX_QUERY_CHARS // 6 + 1)  # one word past the cap
PROSE = "I moved to Lisbon last March and started at Render.com on Flask-Login. Then Bo Silva came by. "
AT_CAP = (PROSE * (MAX_QUERY_CHARS // len(PROSE) + 1))[:MAX_QUERY_CHARS]


def _config(engine: str, tmp_path: Path) -> dict[str, Any]:
    return memory_config(engine, tmp_path, "cap")


@pytest.fixture(params=["memory", "sqlite", "postgres", "redis", "mongodb"])
async def memory(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Memory]:
    config = {**_config(request.param, tmp_path), "embedding": {"provider": "hashing", "dimensions": 64}}
    async with Memory(config) as opened:
        await opened.add(
            [
                {"role": "user", "content": "We stayed at the Hotel Avenida in Lisbon last March."},
                {"role": "assistant", "content": "Noted: Hotel Avenida, Lisbon."},
            ],
            user_id="ana",
            thread_id="t-ana",
        )
        await opened.flush()
        yield opened


async def test_a_search_or_a_build_over_the_cap_is_refused_on_every_engine(memory: Memory) -> None:
    # Memory.search on PostgreSQL took 407 s with 1.3 MB
    started = time.perf_counter()
    with pytest.raises(InvalidArgumentError):
        await memory.search(OVER, user_id="ana")
    with pytest.raises(InvalidArgumentError, match="current_input"):
        await memory.build_context("t-ana", current_input=OVER, max_tokens=2000, user_id="ana")
    assert time.perf_counter() - started < 5.0  # refused before any reading
    hits = await memory.search("where did we stay in Lisbon?", user_id="ana")
    assert hits and "Avenida" in hits[0].text


@pytest.fixture
async def sqlite_memory(tmp_path: Path) -> AsyncIterator[Memory]:
    config = {**_config("sqlite", tmp_path), "embedding": {"provider": "hashing", "dimensions": 64}}
    async with Memory(config) as opened:
        await opened.add([{"role": "user", "content": "We stayed at the Hotel Avenida in Lisbon."}], thread_id="t-1")
        yield opened


async def test_rest_answers_400_over_the_cap_and_health_while_a_turn_at_the_cap_is_read(
    sqlite_memory: Memory,
) -> None:
    # REST /api/context with 420 KB took 65 s, and /health waited 64 s
    app = create_app(sqlite_memory)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
        refused = await client.post(
            "/api/context", json={"thread_id": "t-1", "current_input": OVER, "max_tokens": 2000}
        )
        assert refused.status_code == 400, refused.text
        assert refused.json()["error_class"] == "InvalidArgumentError" and "current_input" in refused.json()["detail"]

        health_took: list[float] = []
        building = True

        async def health() -> None:
            while building:  # /health asked every 10 ms while the context is built
                start = time.perf_counter()
                assert (await client.get("/health")).status_code == 200
                health_took.append(time.perf_counter() - start)
                await asyncio.sleep(0.01)

        async def build() -> httpx.Response:
            nonlocal building
            try:
                return await client.post("/api/context", json=body)
            finally:
                building = False

        body = {"thread_id": "t-1", "current_input": AT_CAP, "max_tokens": 100_000}  # hybrid: embeddings are on
        start = time.perf_counter()
        built, _ = await asyncio.gather(build(), health())
        took = time.perf_counter() - start
        assert built.status_code == 200, built.text[:500]
        assert len(health_took) > took / 0.1
        assert max(health_took) < 0.1, (max(health_took), took)


async def test_mcp_search_memory_over_the_cap_is_a_tool_error(sqlite_memory: Memory) -> None:
    # MCP search_memory with 210 KB took 12.6 s
    async with Client(create_server(sqlite_memory)) as client:
        result = await client.call_tool("search_memory", {"query": OVER})
        assert result.is_error
        assert "characters" in " ".join(getattr(part, "text", "") for part in result.content)
