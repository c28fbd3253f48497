"""The REST app's answers to requests at the edges: a per-call context strategy, a thread that
does not exist, tampered cursors, text that is not valid Unicode, thread ids holding ``/``, and a
thread whose stored rows were damaged (each a 4xx or a clear problem, never a 500)."""

from __future__ import annotations

import base64
import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from cogitator_memory import unwrap
from cogitator_memory.runtime.memory import Memory
from cogitator_memory.server.rest import create_app

TOKEN = "a-long-enough-test-token"


def _config(tmp_path: Path) -> dict[str, Any]:
    return {"adapter": "sqlite", "path": str(tmp_path / "memory.db"), "embedding": {"provider": "hashing"}}


@pytest.fixture
async def memory(tmp_path: Path) -> AsyncIterator[Memory]:
    async with Memory(_config(tmp_path)) as opened:
        yield opened


def _client(memory: Memory) -> httpx.AsyncClient:
    app = create_app(memory, token=TOKEN)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    headers = {"authorization": f"Bearer {TOKEN}"}
    return httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1", headers=headers)


async def _thread(memory: Memory, thread_id: str | None = None, texts: tuple[str, ...] = ()) -> tuple[str, list[str]]:
    store = memory.adapter
    thread = unwrap(await store.create_thread("default", {"user_id": "ada"}, thread_id))
    ids = []
    for i, text in enumerate(texts):
        role = "user" if i % 2 == 0 else "assistant"
        entry = unwrap(await store.add_entry({"thread_id": thread.id, "message": {"role": role, "content": text}}))
        ids.append(entry.id)
    return thread.id, ids


def _cursor(stamp: str, seen: int) -> str:
    return base64.urlsafe_b64encode(json.dumps([stamp, seen]).encode()).decode().rstrip("=")


async def test_context_takes_the_documented_strategy_per_call(memory: Memory) -> None:
    tid, ids = await _thread(memory, None, ("I live in Lisbon", "Noted", "I like tea", "Tea it is"))
    async with _client(memory) as client:
        for strategy in ("recent", "relevant", "hybrid"):
            built = await client.post(
                "/api/context",
                json={"thread_id": tid, "max_tokens": 2000, "strategy": strategy, "current_input": "where do I live"},
            )
            assert built.status_code == 200, built.text
            assert built.json()["strategy"] == strategy
            kept = built.json()["entry_ids"]
            assert kept == ids if strategy == "recent" else (kept and set(kept) <= set(ids))
        unknown = await client.post("/api/context", json={"thread_id": tid, "strategy": "psychic"})
        assert unknown.status_code == 400 and "strategy" in unknown.json()["detail"]
    # The Python API takes it too, for one call only: the builder's own strategy is unchanged.
    default = memory.context_builder.config.strategy if memory.context_builder else None
    built = await memory.build_context(tid, max_tokens=2000, current_input="tea", strategy="recent")
    assert built.strategy == "recent"
    again = await memory.build_context(tid, max_tokens=2000, current_input="tea")
    assert again.strategy == default


async def test_context_of_an_unknown_thread_is_404(memory: Memory) -> None:
    async with _client(memory) as client:
        missing = await client.post("/api/context", json={"thread_id": "thread_nope", "max_tokens": 500})
        assert missing.status_code == 404, missing.text
        assert missing.json()["error_class"] == "NotFoundError" and "thread_nope" in missing.json()["detail"]


async def test_a_cursor_near_year_9999_is_a_bad_cursor(memory: Memory) -> None:
    tid, _ = await _thread(memory, None, ("one", "two"))
    async with _client(memory) as client:
        for stamp in ("9999-12-31T23:59:59.999999+00:00", "9999-12-31T23:59:59.999999-23:59"):
            page = await client.get(f"/api/threads/{tid}/entries", params={"cursor": _cursor(stamp, 1)})
            assert page.status_code == 400, page.text
            assert page.json()["argument"] == "cursor"
            listed = await client.get("/api/threads", params={"cursor": _cursor(stamp, 1)})
            assert listed.status_code == 400 and "cursor" in listed.json()["detail"]


async def test_a_lone_surrogate_in_context_text_is_refused_naming_it(memory: Memory) -> None:
    tid, _ = await _thread(memory, None, ("hello",))
    await memory.remember("likes tea", core_fact_key="drink", user_id="ada")
    async with _client(memory) as client:
        for field in ("system_prompt", "current_input"):
            # json.dumps writes a lone surrogate as the escape \ud800, as a client would send it
            raw = json.dumps({"thread_id": tid, "user_id": "ada", "max_tokens": 500, field: "a \ud800 b"})
            answer = await client.post("/api/context", content=raw, headers={"content-type": "application/json"})
            assert answer.status_code == 400, answer.text
            assert answer.json()["argument"] == field


async def test_a_thread_id_with_slashes_is_read_through_every_route(memory: Memory) -> None:
    tid, ids = await _thread(memory, "team/ada/chat", ("I live in Lisbon", "Noted"))
    async with _client(memory) as client:
        for path in (f"/api/threads/{tid}", "/api/threads/team%2Fada%2Fchat"):
            got = await client.get(path)
            assert got.status_code == 200, got.text
            assert got.json()["id"] == tid
        entries = (await client.get(f"/api/threads/{tid}/entries")).json()["entries"]
        assert [e["id"] for e in entries] == ids
        path = (await client.get(f"/api/threads/{tid}/path")).json()["entries"]
        assert [e["id"] for e in path] == ids
        forked = await client.post(f"/api/threads/{tid}/fork", json={"at_entry_id": ids[0], "new_thread_id": "a/b"})
        assert forked.status_code == 201, forked.text
        assert (await client.get("/api/threads/a/b")).json()["id"] == "a/b"
        checked = await client.post(f"/api/threads/{tid}/checkout", json={"entry_id": ids[0]})
        assert checked.status_code == 200 and checked.json()["active_leaf_id"] == ids[0]
        built = await client.post("/api/context", json={"thread_id": tid, "max_tokens": 500})
        assert built.status_code == 200 and built.json()["entry_ids"] == ids[:1]
        assert (await client.get(f"/api/threads/{tid}/nothing-here")).status_code == 404


@pytest.mark.parametrize(
    "damage",
    [
        "UPDATE entries SET body = '{}'",
        "UPDATE entries SET body = '[1]'",
        "UPDATE threads SET metadata = '[1]'",
        'UPDATE threads SET metadata = json(\'{"memory_user_ids": ["ada", ""], "user_id": "ada"}\')',
        "UPDATE threads SET updated_at = 999999999999999999",
        "UPDATE entries SET body = json_set(body, '$.message.role', 'nobody')",
        "DELETE FROM recall_terms",
    ],
)
async def test_search_on_a_damaged_thread_is_a_clear_problem(tmp_path: Path, damage: str) -> None:
    async with Memory(_config(tmp_path)) as memory:
        tid, _ = await _thread(memory, "t1", ("I live in Lisbon", "Noted"))
    with sqlite3.connect(tmp_path / "memory.db") as db:
        db.execute(damage)
    async with Memory(_config(tmp_path)) as memory, _client(memory) as client:
        for params in ({"q": "Lisbon", "thread_id": tid}, {"q": "Lisbon", "user_id": "ada"}):
            answer = await client.get("/api/search", params=params)
            assert answer.status_code != 500, answer.text
            if answer.status_code != 200:
                body = answer.json()
                assert answer.headers["content-type"] == "application/problem+json"
                assert body["error_class"] and body["detail"]
