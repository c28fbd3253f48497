"""The REST app over a real SQLite memory: routes, problem details, the guard (token, cross-site
writes, JSON bodies, body size), paging through a tree, and forgetting through the cascade."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from cogitator_memory import unwrap
from cogitator_memory.runtime.memory import Memory
from cogitator_memory.server.rest import MAX_BODY_BYTES, create_app, is_loopback, serve
from cogitator_memory.server.rest.routes_threads import decode_cursor, encode_cursor

TOKEN = "a-long-enough-test-token"


@pytest.fixture
async def memory(tmp_path: Path) -> AsyncIterator[Memory]:
    config = {
        "adapter": "sqlite",
        "path": str(tmp_path / "memory.db"),
        "embedding": {"provider": "hashing"},
        "files": {"enabled": True},
    }
    async with Memory(config) as opened:
        yield opened


def _client(memory: Memory, **options: Any) -> httpx.AsyncClient:
    app = create_app(memory, **options)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1")


async def _thread_with(memory: Memory, texts: list[str], user: str = "ada") -> tuple[str, list[str]]:
    store = memory.adapter
    thread = unwrap(await store.create_thread("default", {"user_id": user}))
    ids = []
    for i, text in enumerate(texts):
        role = "user" if i % 2 == 0 else "assistant"
        entry = unwrap(await store.add_entry({"thread_id": thread.id, "message": {"role": role, "content": text}}))
        ids.append(entry.id)
    return thread.id, ids


async def test_threads_entries_and_paths(memory: Memory) -> None:
    tid, ids = await _thread_with(memory, ["I live in Lisbon", "Noted: Lisbon", "I like tea", "Tea it is"])
    async with _client(memory) as client:
        listed = (await client.get("/api/threads", params={"user_id": "ada"})).json()
        assert [t["id"] for t in listed["threads"]] == [tid]
        assert (await client.get("/api/threads", params={"user_id": "nobody"})).json()["threads"] == []
        got = (await client.get(f"/api/threads/{tid}")).json()
        assert got["active_leaf_id"] == ids[-1]
        path = (await client.get(f"/api/threads/{tid}/path")).json()["entries"]
        assert [e["id"] for e in path] == ids
        # A branch from the second entry, then the tree holds both branches.
        added = await client.post(
            "/api/entries",
            json={"thread_id": tid, "parent_id": ids[1], "message": {"role": "user", "content": "Actually coffee"}},
        )
        assert added.status_code == 201, added.text
        branch_id = added.json()["id"]
        tree = (await client.get(f"/api/threads/{tid}/entries")).json()
        assert {e["id"] for e in tree["entries"]} == {*ids, branch_id} and tree["next_cursor"] is None
        checkout = await client.post(f"/api/threads/{tid}/checkout", json={"entry_id": ids[-1]})
        assert checkout.json()["active_leaf_id"] == ids[-1]
        fork = await client.post(f"/api/threads/{tid}/fork", json={"at_entry_id": ids[1]})
        assert fork.status_code == 201 and fork.json()["metadata"]["forked_from"]["thread_id"] == tid
        rewound = await client.post(f"/api/threads/{tid}/rewind", json={"to_entry_id": ids[0]})
        assert rewound.status_code == 200 and rewound.json()["thread"]["active_leaf_id"] == ids[0]
        one = (await client.get(f"/api/entries/{ids[2]}")).json()
        assert one["message"]["content"] == "I like tea"


async def test_pages_of_a_tree_join_without_loss_even_within_one_microsecond(memory: Memory) -> None:
    from datetime import UTC, datetime

    from cogitator_memory.clock import frozen_clock

    store = memory.adapter
    thread = unwrap(await store.create_thread("default"))
    written = []
    with frozen_clock(datetime(2026, 1, 1, tzinfo=UTC)):  # every entry has the same time
        for i in range(23):
            entry = unwrap(
                await store.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": f"m{i}"}})
            )
            written.append(entry.id)
    with frozen_clock(datetime(2026, 1, 2, tzinfo=UTC)):
        for i in range(7):
            entry = unwrap(
                await store.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": f"n{i}"}})
            )
            written.append(entry.id)
    async with _client(memory) as client:
        seen: list[str] = []
        cursor = None
        pages = 0
        while True:
            params: dict[str, Any] = {"limit": 5}
            if cursor:
                params["cursor"] = cursor
            page = (await client.get(f"/api/threads/{thread.id}/entries", params=params)).json()
            seen = [e["id"] for e in page["entries"]] + seen
            cursor = page["next_cursor"]
            pages += 1
            if cursor is None:
                break
        assert seen == written and pages == 6
        bad = await client.get(f"/api/threads/{thread.id}/entries", params={"cursor": "not-a-cursor"})
        assert bad.status_code == 400 and bad.json()["argument"] == "cursor"


def test_cursor_round_trip() -> None:
    from datetime import UTC, datetime

    at = datetime(2026, 3, 4, 5, 6, 7, 8, tzinfo=UTC)
    assert decode_cursor(encode_cursor(at, 3)) == (at, 3)


async def test_problems_name_the_failure(memory: Memory) -> None:
    async with _client(memory) as client:
        missing = await client.get("/api/threads/thread_nope")
        assert missing.status_code == 404
        body = missing.json()
        assert missing.headers["content-type"] == "application/problem+json"
        assert body["error_class"] == "NotFoundError" and "thread_nope" in body["detail"]
        bad = await client.post(
            "/api/entries", json={"thread_id": "thread_nope", "message": {"role": "nobody", "content": "x"}}
        )
        assert bad.status_code == 400 and bad.json()["error_class"] == "InvalidArgumentError"
        malformed = await client.post(
            "/api/threads", content=b'{"agent_id": ', headers={"content-type": "application/json"}
        )
        assert malformed.status_code == 400 and malformed.json()["error_class"] == "InvalidArgumentError"
        wrong_type = await client.post("/api/threads", json={"agent_id": ["x"]})
        assert wrong_type.status_code == 400 and "agent_id" in wrong_type.json()["detail"]
        unknown_key = await client.post("/api/threads", json={"agent_id": "a", "surprise": 1})
        assert unknown_key.status_code == 400 and "surprise" in unknown_key.json()["detail"]
        too_many = await client.get("/api/threads", params={"limit": 10_000})
        assert too_many.status_code == 400
        first = (await client.post("/api/threads", json={"agent_id": "a", "thread_id": "thread_one"})).json()
        await client.post("/api/threads", json={"agent_id": "a", "thread_id": "thread_two"})
        root = await client.post(
            "/api/entries", json={"thread_id": first["id"], "message": {"role": "user", "content": "hi"}}
        )
        crossed = await client.post(
            "/api/entries",
            json={
                "thread_id": "thread_two",
                "parent_id": root.json()["id"],
                "message": {"role": "user", "content": "x"},
            },
        )
        assert crossed.status_code == 409 and crossed.json()["error_class"] == "ConflictError"
        dated = await client.post(
            "/api/entries",
            json={
                "thread_id": "thread_two",
                "created_at": "2024-03-12T18:30:00+01:00",
                "message": {"role": "user", "content": "said last spring"},
            },
        )
        assert dated.status_code == 201 and dated.json()["created_at"] == "2024-03-12T17:30:00Z"
        future = await client.post(
            "/api/entries",
            json={
                "thread_id": "thread_two",
                "created_at": "2999-01-01T00:00:00Z",
                "message": {"role": "user", "content": "x"},
            },
        )
        assert future.status_code == 400 and "created_at" in future.json()["detail"]
        assert [e["id"] for e in (await client.get("/api/threads/thread_two/entries")).json()["entries"]] == [
            dated.json()["id"]
        ]
        unwrap(await memory.adapter.delete_entry(dated.json()["id"]))
        # Nothing half-written by the failed calls.
        tree = (await client.get("/api/threads/thread_two/entries")).json()
        assert tree["entries"] == []
        listed = (await client.get("/api/threads")).json()["threads"]
        assert sorted(t["id"] for t in listed) == ["thread_one", "thread_two"]


async def test_path_traversal_in_file_paths_is_refused(memory: Memory) -> None:
    async with _client(memory) as client:
        for path in ("/memories/../etc/passwd", "/etc/passwd", "/memories/%2e%2e/x"):
            answer = await client.get("/api/files/history", params={"path": path})
            assert answer.status_code == 400, (path, answer.text)
            assert answer.json()["error_class"] in ("InvalidArgumentError", "MemoryFileError")


async def test_the_guard(memory: Memory) -> None:
    async with _client(memory, token=TOKEN) as client:
        assert (await client.get("/health")).json() == {"status": "ok"}
        # The page's own files and the API's description hold no memory; everything else asks.
        for path in ("/", "/inspector/inspector.js", "/inspector/user-view.js", "/openapi.json"):
            assert (await client.get(path)).status_code == 200, path
        page = await client.get("/", params={"token": TOKEN})
        assert page.headers["referrer-policy"] == "no-referrer"
        for path in ("/api/threads", "/ready", "/api/search?q=x", "/nowhere"):
            refused = await client.get(path)
            assert refused.status_code == 401, path
            assert refused.json()["error_class"] == "Unauthorized" and refused.headers["www-authenticate"] == "Bearer"
        assert (await client.post("/api/forget", json={"user_id": "ada"})).status_code == 401
        assert (await client.get("/api/threads", params={"token": TOKEN})).status_code == 401  # a header, not a query
        assert (await client.get("/api/threads", headers={"authorization": f"Basic {TOKEN}"})).status_code == 401
        wrong = await client.get("/api/threads", headers={"authorization": "Bearer not-the-token-at-all"})
        assert wrong.status_code == 401 and wrong.headers["www-authenticate"] == "Bearer"
        auth = {"authorization": f"Bearer {TOKEN}"}
        assert (await client.get("/api/threads", headers=auth)).status_code == 200
        # A form post from another site (no preflight) is refused before it reaches a route.
        form = await client.post(
            "/api/forget", content=b"user_id=ada", headers={**auth, "content-type": "application/x-www-form-urlencoded"}
        )
        assert form.status_code == 415
        plain = await client.post(
            "/api/forget", content=b'{"user_id": "ada"}', headers={**auth, "content-type": "text/plain"}
        )
        assert plain.status_code == 415
        cross = await client.post(
            "/api/forget", json={"user_id": "ada"}, headers={**auth, "origin": "https://evil.example"}
        )
        assert cross.status_code == 403 and cross.json()["error_class"] == "Forbidden"
        same = await client.post(
            "/api/forget/preview", json={"user_id": "ada"}, headers={**auth, "origin": "http://127.0.0.1"}
        )
        assert same.status_code == 200
        big = await client.post(
            "/api/threads", content=b"x" * (MAX_BODY_BYTES + 1), headers={**auth, "content-type": "application/json"}
        )
        assert big.status_code == 413 and big.json()["error_class"] == "BodyTooLarge"


async def test_a_body_without_a_length_is_counted(memory: Memory) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(20):
            yield b" " * 1000

    async with _client(memory, max_body_bytes=5000) as client:
        answer = await client.post("/api/threads", content=chunks(), headers={"content-type": "application/json"})
        assert answer.status_code == 413 and answer.json()["error_class"] == "BodyTooLarge"
        threads = (await client.get("/api/threads")).json()["threads"]
        assert threads == []


async def test_bad_settings_are_refused(memory: Memory) -> None:
    from cogitator_memory.errors import InvalidArgumentError

    with pytest.raises(InvalidArgumentError, match="'token'"):
        create_app(memory, token="short")
    with pytest.raises(InvalidArgumentError, match="'max_body_bytes'"):
        create_app(memory, max_body_bytes=0)
    with pytest.raises(InvalidArgumentError, match="'token'"):
        create_app(memory, token="a token with spaces in it")
    # Without authentication only loopback may be bound: refused before anything listens.
    for host in ("0.0.0.0", "192.168.1.5", "127.evil.test"):
        with pytest.raises(InvalidArgumentError, match="'host'"):
            await serve(memory, host=host, no_auth=True)
    with pytest.raises(InvalidArgumentError, match="'token'"):
        await serve(memory, token=TOKEN, no_auth=True)


def test_loopback_is_judged_by_the_addresses_a_host_resolves_to() -> None:
    """A string prefix let ``127.evil.test`` pass (and listen wherever it resolved to); a name
    that resolves only to loopback addresses is loopback however it is spelled."""
    for host in ("127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost", "2130706433", "0177.0.0.1", "127.1"):
        assert is_loopback(host), host
    for host in ("127.evil.test", "127.0.0.1.evil.test", "0.0.0.0", "::", "192.168.1.5", "3232235781", "", " "):
        assert not is_loopback(host), host


async def test_items_files_search_context_and_ready(memory: Memory) -> None:
    tid, ids = await _thread_with(memory, ["My sister Maria lives in Porto", "Good to know", "I drink green tea daily"])
    scope = {"agent_id": "default", "user_id": "ada"}
    item = await memory.items.add(
        {
            "kind": "fact",
            "subject": "ada",
            "attribute": "drink",
            "value": "green tea daily",
            "evidence": [{"entry_id": ids[2], "thread_id": tid, "quote": "green tea daily"}],
            "trust": "user",
            "verified": True,
            "scope": scope,
        }
    )
    assert memory.files is not None
    await memory.files.put({"scope": scope, "author": "user"}, "/memories/notes.md", "first line\n")
    await memory.files.put({"scope": scope, "author": "user"}, "/memories/notes.md", "first line\nsecond line\n")
    async with _client(memory) as client:
        items = (await client.get("/api/items", params=scope)).json()["items"]
        assert [i["id"] for i in items] == [item.id] and items[0]["evidence"][0]["entry_id"] == ids[2]
        history = (
            await client.get("/api/items/history", params={**scope, "subject": "ada", "attribute": "drink"})
        ).json()
        assert [i["id"] for i in history["items"]] == [item.id]
        stale = await client.post("/api/items/stale", json={"ids": [item.id], "because": "wrong"})
        assert stale.json() == {"stale": [item.id]}
        assert (await client.get("/api/items", params=scope)).json()["items"] == []
        everything = (await client.get("/api/items", params={**scope, "status": "all"})).json()["items"]
        assert everything[0]["status"] == "stale" and everything[0]["metadata"]["stale_because"]["reason"] == "wrong"
        files = (await client.get("/api/files", params=scope)).json()["files"]
        assert [f["path"] for f in files] == ["/memories/notes.md"]
        versions = (await client.get("/api/files/history", params={**scope, "path": "/memories/notes.md"})).json()
        assert len(versions["versions"]) == 2 and "+second line" in versions["versions"][1]["diff"]
        hits = (await client.get("/api/search", params={"q": "where does Maria live", "user_id": "ada"})).json()
        assert hits["hits"] and hits["hits"][0]["id"] == ids[0]
        assert (await client.get("/api/search", params={"q": ""})).status_code == 400
        # no user_id: every user's memory (an operator's view); shared_only: what belongs to no user
        everyone = (await client.get("/api/search", params={"q": "where does Maria live"})).json()["hits"]
        assert ids[0] in [h["id"] for h in everyone]
        shared = await client.get("/api/search", params={"q": "where does Maria live", "shared_only": "true"})
        assert shared.status_code == 200 and ids[0] not in [h["id"] for h in shared.json()["hits"]]
        both = await client.get("/api/search", params={"q": "Maria", "shared_only": "true", "user_id": "ada"})
        assert both.status_code == 400 and "shared_only" in both.text
        turns = await client.get(
            "/api/search", params={"q": "where does Maria live", "user_id": "ada", "kinds": "entry"}
        )
        assert turns.status_code == 200 and {h["kind"] for h in turns.json()["hits"]} == {"entry"}
        none = await client.get("/api/search", params={"q": "where does Maria live", "user_id": "ada", "kinds": "file"})
        assert none.status_code == 200 and none.json()["hits"] == []
        bogus = await client.get("/api/search", params={"q": "Maria", "kinds": "bogus"})
        assert bogus.status_code == 400 and "kinds" in bogus.text
        built = await client.post("/api/context", json={"thread_id": tid, "user_id": "ada", "max_tokens": 2000})
        assert built.status_code == 200, built.text
        assert built.json()["entry_ids"] == ids
        ready = (await client.get("/ready")).json()
        assert ready["status"] == "ready" and ready["checks"]["store"] == "ok"


async def test_remember_recall_and_forget_facts_are_the_memory_tools(memory: Memory) -> None:
    """The memory tools over REST: the same calls as Python, MCP and the CLI (what one saves the
    others find), with the tools' refusals."""
    async with _client(memory) as client:
        saved = await client.post("/api/remember", json={"fact": "Ada is vegetarian", "user_id": "ada"})
        assert saved.status_code == 200 and saved.json()["saved"] is True, saved.text
        core = await client.post("/api/remember", json={"fact": "Ada", "core_fact_key": "user_name", "user_id": "ada"})
        assert core.json()["core_fact"] == {"key": "user_name", "value": "Ada"}
        assert (await memory.recall("vegetarian", user_id="ada"))["results"][0]["fact"] == "Ada is vegetarian"
        found = (await client.get("/api/recall", params={"q": "vegetarian", "user_id": "ada"})).json()
        assert [r["fact"] for r in found["results"]] == ["Ada is vegetarian"]
        assert found["core_facts"] == {"user_name": "Ada"}
        other = (await client.get("/api/recall", params={"q": "vegetarian", "user_id": "bob"})).json()
        assert other["results"] == [], "another user's facts stay theirs"
        for n in range(4):
            await memory.remember(f"Ada drinks tea number {n}", user_id="ada")
        broad = await client.post("/api/forget/facts", json={"query": "tea", "user_id": "ada"})
        assert broad.status_code == 200 and broad.json()["forgotten"] == 0 and broad.json()["too_broad"]["matched"] == 4
        gone = await client.post("/api/forget/facts", json={"query": "vegetarian", "user_id": "ada"})
        assert gone.json()["facts"] == ["Ada is vegetarian"]
        assert (await memory.recall("vegetarian", user_id="ada"))["results"] == []
        refused = await client.post("/api/forget/facts", json={"query": "everything", "user_id": "ada"})
        assert refused.status_code == 400 and "query" in refused.text
        unknown = await client.post("/api/remember", json={"fact": "x", "bogus": 1})
        assert unknown.status_code == 400


async def test_forget_previews_then_takes_the_user(memory: Memory, tmp_path: Path) -> None:
    secret = "my passport number is X1234567"
    tid, ids = await _thread_with(memory, [secret, "Stored."], user="ada")
    other, _ = await _thread_with(memory, ["Bob's thread stays"], user="bob")
    async with _client(memory) as client:
        none = await client.post("/api/forget/preview", json={})
        assert none.status_code == 400 and "exactly one" in none.json()["detail"]
        plan = (await client.post("/api/forget/preview", json={"user_id": "ada"})).json()
        assert plan["threads"] == [tid]
        assert (await client.get(f"/api/threads/{tid}")).status_code == 200  # a preview changes nothing
        done = (await client.post("/api/forget", json={"user_id": "ada"})).json()
        assert done["counts"]
        assert (await client.get(f"/api/threads/{tid}")).status_code == 404
        assert (await client.get(f"/api/entries/{ids[0]}")).status_code == 404
        assert (await client.get(f"/api/threads/{other}")).status_code == 200


async def test_delete_and_redact_an_entry(memory: Memory) -> None:
    _tid, ids = await _thread_with(memory, ["keep this", "ok", "my pin is 4321", "noted", "bye", "bye"])
    async with _client(memory) as client:
        dry = (await client.delete(f"/api/entries/{ids[4]}", params={"dry_run": "true"})).json()
        assert dry["plan"]["entry_count"] >= 1
        assert (await client.get(f"/api/entries/{ids[4]}")).status_code == 200
        gone = await client.delete(f"/api/entries/{ids[4]}")
        assert gone.status_code == 200 and (await client.get(f"/api/entries/{ids[4]}")).status_code == 404
        redacted = await client.post(f"/api/entries/{ids[2]}/redact", json={"reason": "pin"})
        assert redacted.status_code == 200, redacted.text
        entry = (await client.get(f"/api/entries/{ids[2]}")).json()
        assert "4321" not in str(entry)
        assert (await client.delete("/api/entries/entry_missing")).status_code == 404


async def test_without_a_token_only_loopback_names_are_answered(memory: Memory) -> None:
    """DNS rebinding: a page of evil.example whose name now points at 127.0.0.1 sends
    ``Host: evil.example`` and is same-origin with itself; without a token it is refused."""
    app = create_app(memory)
    for host in ("evil.example", "evil.example:8766", "192.168.1.5"):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=f"http://{host}") as client:
            read = await client.get("/api/threads")
            assert read.status_code == 403 and read.json()["error_class"] == "Forbidden", host
            gone = await client.post("/api/forget", json={"user_id": "ada"}, headers={"origin": f"http://{host}"})
            assert gone.status_code == 403
    for host in ("127.0.0.1:8766", "localhost", "[::1]:8766"):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=f"http://{host}") as client:
            assert (await client.get("/api/threads")).status_code == 200, host
    # With a token, or hosts named, other names are answered.
    named = create_app(memory, allowed_hosts=["memory.internal"])
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=named), base_url="http://memory.internal") as c:
        assert (await c.get("/api/threads")).status_code == 200
    async with _client(memory, token=TOKEN) as client:
        client.base_url = httpx.URL("http://memory.example.org")
        assert (await client.get("/api/threads", headers={"authorization": f"Bearer {TOKEN}"})).status_code == 200


async def test_entries_and_context_messages_say_what_the_cli_shows(memory: Memory) -> None:
    """Events, tool calls and tool results carry ``shown``, the words of the CLI's tree."""
    store = memory.adapter
    thread = unwrap(await store.create_thread("default", {"user_id": "ada"}))
    ask = unwrap(
        await store.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": "Rain in Rome?"}})
    )
    call = unwrap(
        await store.add_entry(
            {
                "thread_id": thread.id,
                "message": {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [{"id": "c1", "name": "get_weather", "arguments": {"city": "Rome"}}],
                },
            }
        )
    )
    label = unwrap(
        await store.add_entry(
            {"thread_id": thread.id, "type": "label", "event": {"label": "plan v1", "target_id": ask.id}}
        )
    )
    async with _client(memory) as client:
        path = (await client.get(f"/api/threads/{thread.id}/path")).json()["entries"]
        shown = {e["id"]: e["shown"] for e in path}
        assert shown[ask.id] == "Rain in Rome?"
        assert shown[call.id] == '→ get_weather(city="Rome")'
        assert shown[label.id] == "label: plan v1"
        page = (await client.get(f"/api/threads/{thread.id}/entries")).json()["entries"]
        assert {e["id"]: e["shown"] for e in page} == shown
        one = (await client.get(f"/api/entries/{label.id}")).json()
        assert one["shown"] == "label: plan v1" and one["event"]["label"] == "plan v1"
        built = (await client.post("/api/context", json={"thread_id": thread.id, "user_id": "ada"})).json()
        texts = [m["shown"] for m in built["messages"]]
        assert '→ get_weather(city="Rome")' in texts and "Rain in Rome?" in texts
