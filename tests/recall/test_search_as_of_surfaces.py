"""When a search is asked: ``as_of`` and ``time_zone`` read the time a query names ("last
month") from then, the same through every surface (``Memory.search``, the MCP tool
``search_memory``, REST ``GET /api/search``, CLI ``search``), and a bad one is refused the same
way on each."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client

from cogitator_memory.cli import main
from cogitator_memory.errors import InvalidArgumentError
from cogitator_memory.runtime.memory import Memory
from cogitator_memory.server.mcp import create_server
from cogitator_memory.server.rest import create_app

QUESTION = "What did we plan for the cabin last month?"
MARCH = "We booked the cabin by the lake."
MAY = "The cabin plan again: the cabin trip plan moved to the coast."


def _config(path: Path) -> dict[str, Any]:
    return {"adapter": "sqlite", "path": str(path), "embedding": {"provider": "none"}}


@pytest.fixture
async def memory(tmp_path: Path) -> AsyncIterator[Memory]:
    async with Memory(_config(tmp_path / "m.db")) as opened:
        await opened.add(
            [{"role": "user", "content": MARCH}], user_id="ana", created_at=datetime(2024, 3, 12, 18, 0, tzinfo=UTC)
        )
        await opened.add(
            [{"role": "user", "content": MAY}], user_id="ana", created_at=datetime(2024, 5, 20, 9, 0, tzinfo=UTC)
        )
        yield opened


async def test_python_reads_the_time_a_query_names_from_as_of(memory: Memory) -> None:
    # the May turn holds the question's words more; "last month" picks the turn said then
    april = await memory.search(QUESTION, user_id="ana", as_of=datetime(2024, 4, 10, tzinfo=UTC))
    june = await memory.search(QUESTION, user_id="ana", as_of=datetime(2024, 6, 10, tzinfo=UTC))
    now = await memory.search(QUESTION, user_id="ana")  # last month of today: nothing said then
    assert [h.text for h in april][:1] == [MARCH]
    assert [h.text for h in june][:1] == [MAY]
    assert [h.text for h in now][:1] == [MAY]
    naive = await memory.search(QUESTION, user_id="ana", as_of=datetime(2024, 4, 10))  # UTC
    assert [h.text for h in naive][:1] == [MARCH]
    for bad in ({"as_of": "2024-04-10"}, {"time_zone": "Mars/Olympus"}, {"time_zone": ""}):
        with pytest.raises(InvalidArgumentError) as refused:
            await memory.search(QUESTION, user_id="ana", **bad)
        assert refused.value.argument == next(iter(bad))


async def test_the_time_zone_says_which_day_a_date_is(memory: Memory) -> None:
    """23:30 UTC on 31 March is already 1 April in Auckland: "on 1 April" finds the turn said
    then when read in Auckland (given, or the config's ``context_builder.time_zone``), not in UTC."""
    late = "Packed the kayak into the van."
    await memory.add([{"role": "user", "content": late}], user_id="ana", created_at=datetime(2024, 3, 31, 23, 30))
    asked = "What did I do on 1 April 2024?"
    auckland = await memory.search(asked, user_id="ana", time_zone="Pacific/Auckland")
    utc = await memory.search(asked, user_id="ana", time_zone="UTC")
    assert [h.text for h in auckland][:1] == [late]
    assert late not in [h.text for h in utc]


async def test_the_config_time_zone_is_the_default(tmp_path: Path) -> None:
    late = "Packed the kayak into the van."
    config = {**_config(tmp_path / "z.db"), "context_builder": {"time_zone": "Pacific/Auckland"}}
    async with Memory(config) as memory:
        await memory.add([{"role": "user", "content": late}], user_id="ana", created_at=datetime(2024, 3, 31, 23, 30))
        found = await memory.search("What did I do on 1 April 2024?", user_id="ana")
    assert [h.text for h in found][:1] == [late]


def _texts(result: Any) -> str:
    return "".join(getattr(part, "text", "") for part in result.content)


async def test_mcp_takes_as_of_and_time_zone(memory: Memory) -> None:
    async with Client(create_server(memory, user_id="ana")) as client:
        april = json.loads(_texts(await client.call_tool("search_memory", {"query": QUESTION, "as_of": "2024-04-10"})))
        june = json.loads(
            _texts(await client.call_tool("search_memory", {"query": QUESTION, "as_of": "2024-06-10T00:00:00"}))
        )
        assert [h["text"] for h in april["results"]][:1] == [MARCH]
        assert [h["text"] for h in june["results"]][:1] == [MAY]
        bad = await client.call_tool("search_memory", {"query": QUESTION, "time_zone": "Mars/Olympus"})
        assert bad.is_error and "time_zone" in _texts(bad)


async def test_rest_takes_as_of_and_time_zone(memory: Memory) -> None:
    app = create_app(memory)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
        april = await client.get(
            "/api/search", params={"q": QUESTION, "user_id": "ana", "as_of": "2024-04-10T00:00:00Z"}
        )
        june = await client.get(
            "/api/search", params={"q": QUESTION, "user_id": "ana", "as_of": "2024-06-10T00:00:00Z"}
        )
        assert [h["text"] for h in april.json()["hits"]][:1] == [MARCH]
        assert [h["text"] for h in june.json()["hits"]][:1] == [MAY]
        bad = await client.get("/api/search", params={"q": QUESTION, "time_zone": "Mars/Olympus"})
        assert bad.status_code == 400 and "time_zone" in bad.json()["detail"]


def test_cli_takes_as_of_and_time_zone(memory: Memory, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "m.db")
    results = {}
    for when in ("2024-04-10", "2024-06-10T00:00"):
        code = main(["search", QUESTION, "--db", db, "--user", "ana", "--as-of", when, "--json"])
        out, err = capsys.readouterr()
        assert code == 0, err
        results[when] = [h["text"] for h in json.loads(out)["results"]][:1]
    assert results == {"2024-04-10": [MARCH], "2024-06-10T00:00": [MAY]}
    for flag, value in (("--as-of", "next spring"), ("--time-zone", "Mars/Olympus")):
        code = main(["search", QUESTION, "--db", db, "--user", "ana", flag, value])
        _out, err = capsys.readouterr()
        assert code != 0 and ("as-of" in err or "time_zone" in err), err


async def test_rest_context_takes_the_arguments_of_build_context(memory: Memory) -> None:
    """``POST /api/context`` takes what ``Memory.build_context`` and the MCP tool take: a build
    asked as of April recalls the March turn for "last month", as of June the May one."""
    thread = (await memory.add([{"role": "user", "content": "Hello again."}], user_id="ana")).thread_id
    app = create_app(memory)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
        texts = {}
        for when in ("2024-04-10T00:00:00Z", "2024-06-10T00:00:00Z"):
            built = await client.post(
                "/api/context",
                json={
                    "thread_id": thread,
                    "user_id": "ana",
                    "current_input": QUESTION,
                    "max_tokens": 2000,
                    "as_of": when,
                    "time_zone": "Europe/Lisbon",
                    "pinned": ["Answer briefly."],
                    "reserve_tokens": 100,
                },
            )
            assert built.status_code == 200, built.text
            texts[when] = built.json()["memory_context"] or ""
            assert "Answer briefly." in built.json()["messages"][0]["content"]
        first = {when: text.split("From other conversations:\n")[1].splitlines()[0] for when, text in texts.items()}
        # "last month" read from each time; the turns dated in Lisbon (09:00 UTC is 10:00 there in May)
        assert first["2024-04-10T00:00:00Z"] == f"[Tue 12 Mar 2024 18:00] user: {MARCH}"
        assert first["2024-06-10T00:00:00Z"] == f"[Mon 20 May 2024 10:00] user: {MAY}"
        bad = await client.post("/api/context", json={"thread_id": thread, "time_zone": "Mars/Olympus"})
        assert bad.status_code == 400 and "time_zone" in bad.json()["detail"]
