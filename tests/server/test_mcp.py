"""The MCP server, driven by the official SDK's own client: in process, over stdio (the
``cogitator-memory mcp`` command) and over streamable HTTP (``--http``), bad arguments included."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from server_helpers import clean_env, free_port, running

from cogitator_memory.runtime.memory import Memory
from cogitator_memory.server.mcp import create_server

TOOLS = {"save_conversation", "remember", "recall", "forget", "search_memory", "build_context", "memory"}


def _text(result: Any) -> str:
    return "".join(getattr(part, "text", "") for part in result.content)


async def _exercise(client: Client) -> None:
    """The same conversation over any transport: every tool, and bad arguments after each."""
    listed = await client.list_tools()
    assert {tool.name for tool in listed.tools} == TOOLS

    saved = await client.call_tool("remember", {"fact": "User's dog is named Luna", "category": "pets"})
    assert not saved.is_error, _text(saved)
    core = await client.call_tool("remember", {"fact": "Alex", "is_core_fact": True, "core_fact_key": "user_name"})
    assert not core.is_error, _text(core)
    recalled = await client.call_tool("recall", {"query": "dog"})
    body = json.loads(_text(recalled))
    assert [r["fact"] for r in body["results"]] == ["User's dog is named Luna"]
    assert body["core_facts"] == {"user_name": "Alex"}

    made = await client.call_tool("memory", {"command": "create", "path": "/memories/a.md", "file_text": "tea"})
    assert not made.is_error, _text(made)
    viewed = await client.call_tool("memory", {"command": "view", "path": "/memories/a.md"})
    assert "tea" in _text(viewed)

    context = await client.call_tool("build_context", {"thread_id": "none-yet", "max_tokens": 2000})
    assert not context.is_error
    messages = json.loads(_text(context))["messages"]
    assert messages[0]["role"] == "system" and "user_name: Alex" in messages[0]["content"]
    assert "/memories/a.md" in messages[0]["content"]  # the memory files, listed

    said = [{"role": "user", "content": "I planted tomatoes in May."}, {"role": "assistant", "content": "Nice!"}]
    saved = json.loads(_text(await client.call_tool("save_conversation", {"messages": said})))
    found = json.loads(_text(await client.call_tool("search_memory", {"query": "tomatoes"})))["results"]
    assert found[0]["thread_id"] == saved["thread_id"] and "tomatoes" in found[0]["text"]
    fact = json.loads(_text(await client.call_tool("search_memory", {"query": "Luna"})))["results"]
    assert [h["kind"] for h in fact] == ["fact"]  # what remember saved, found by search_memory

    forgotten = await client.call_tool("forget", {"query": "dog"})
    assert json.loads(_text(forgotten))["forgotten"] == 1

    for i in range(4):
        await client.call_tool("remember", {"fact": f"User visited museum number {i}"})
    broad = json.loads(_text(await client.call_tool("forget", {"query": "museum"})))
    assert broad["forgotten"] == 0 and "too_broad" in broad  # a broad query lists, deletes nothing
    taken = json.loads(_text(await client.call_tool("forget", {"query": "museum", "all": True})))
    assert taken["forgotten"] == 4

    for name, arguments, words in [
        ("recall", {}, "query"),
        ("recall", {"query": 7}, "query"),
        ("remember", {"fact": "x", "is_core_fact": True}, "core_fact_key"),
        ("search_memory", {"query": "x", "limit": 0}, "limit"),
        ("save_conversation", {"messages": [{"role": "robot", "content": "x"}]}, "role"),
        ("build_context", {"thread_id": "t", "max_tokens": "lots"}, "max_tokens"),
        ("memory", {"command": "view", "path": "/etc/passwd"}, "/memories"),
        ("memory", {"command": "explode"}, "command"),
        ("no_such_tool", {}, "no_such_tool"),
    ]:
        refused = await client.call_tool(name, arguments)
        assert refused.is_error, (name, arguments)
        assert words in _text(refused), (name, _text(refused))
    # the server is still there after every refusal
    again = await client.call_tool("recall", {"query": "anything"})
    assert not again.is_error


@pytest.fixture
async def memory(tmp_path: Path) -> AsyncIterator[Memory]:
    config = {
        "adapter": "sqlite",
        "path": str(tmp_path / "m.db"),
        "embedding": {"provider": "none"},
        "files": {"enabled": True},  # the memory tool is there when memory files are configured
    }
    async with Memory(config) as m:
        yield m


async def test_the_memory_file_tool_is_offered_only_when_files_are_configured(tmp_path: Path) -> None:
    config = {"adapter": "sqlite", "path": str(tmp_path / "d.db"), "embedding": {"provider": "none"}}
    async with Memory(config) as memory, Client(create_server(memory, user_id="alex")) as client:
        listed = {tool.name for tool in (await client.list_tools()).tools}
    assert listed == TOOLS - {"memory"}  # memory files are off until configured (spec)


async def test_in_process(memory: Memory) -> None:
    async with Client(create_server(memory, user_id="alex")) as client:
        await _exercise(client)


async def test_search_memory_finds_turns(memory: Memory) -> None:
    await memory.add([{"role": "user", "content": "I planted tomatoes in May."}], user_id="alex", thread_id="g")
    async with Client(create_server(memory, user_id="alex")) as client:
        found = await client.call_tool("search_memory", {"query": "tomatoes"})
        hits = json.loads(_text(found))["results"]
        assert hits[0]["thread_id"] == "g" and "tomatoes" in hits[0]["text"]
    async with Client(create_server(memory, user_id="alex", any_user=True)) as client:
        other = await client.call_tool("search_memory", {"query": "tomatoes", "user_id": "sam"})
        assert json.loads(_text(other))["results"] == []


async def _two_users(memory: Memory) -> None:
    """Alice's and Bob's conversations and core facts, and a thread of nobody's."""
    await memory.add(
        [{"role": "user", "content": "My tulip bulbs arrive on Friday."}], user_id="alice", thread_id="alice-chat"
    )
    await memory.add(
        [{"role": "user", "content": "My tulip secret: the safe code is 4711."}], user_id="bob", thread_id="bob-chat"
    )
    await memory.add([{"role": "user", "content": "Shared tulip notes for the garden club."}], thread_id="club")
    await memory.remember("Bob Marsh", core_fact_key="user_name", user_id="bob")
    await memory.remember("Alice Wu", core_fact_key="user_name", user_id="alice")


def _threads_of(result: Any) -> set[str]:
    return {hit.get("thread_id") for hit in json.loads(_text(result))["results"]} - {None}


async def test_a_server_for_a_user_serves_only_that_user(memory: Memory) -> None:
    """Started for Alice, the server refuses Bob's user id and Bob's thread id in every tool
    that takes them, and answers Alice's own."""
    await _two_users(memory)
    async with Client(create_server(memory, user_id="alice")) as client:
        for name, arguments, words in [
            ("search_memory", {"query": "tulip", "user_id": "bob"}, "'user_id'"),
            ("search_memory", {"query": "tulip", "thread_id": "bob-chat"}, "'thread_id'"),
            ("search_memory", {"query": "tulip", "thread_id": "bob-chat", "user_id": "bob"}, "'user_id'"),
            ("build_context", {"thread_id": "bob-chat"}, "'thread_id'"),
            ("build_context", {"thread_id": "bob-chat", "user_id": "bob"}, "'user_id'"),
            ("build_context", {"thread_id": "alice-chat", "user_id": "bob"}, "'user_id'"),
        ]:
            refused = await client.call_tool(name, arguments)
            assert refused.is_error, (name, arguments, _text(refused))
            assert words in _text(refused) and "4711" not in _text(refused) and "Bob Marsh" not in _text(refused)
        mine = _threads_of(await client.call_tool("search_memory", {"query": "tulip"}))
        assert "alice-chat" in mine and "bob-chat" not in mine
        named = await client.call_tool(
            "search_memory", {"query": "tulip", "user_id": "alice", "thread_id": "alice-chat"}
        )
        assert _threads_of(named) == {"alice-chat"}
        shared = await client.call_tool("search_memory", {"query": "tulip", "thread_id": "club"})
        assert _threads_of(shared) == {"club"}  # a thread of nobody's may be read
        built = await client.call_tool("build_context", {"thread_id": "alice-chat", "max_tokens": 2000})
        text = _text(built)
        assert not built.is_error and "tulip bulbs" in text and "Alice Wu" in text
        assert "4711" not in text and "Bob Marsh" not in text


async def test_a_server_without_a_user_serves_only_the_shared_memory(memory: Memory) -> None:
    await _two_users(memory)
    async with Client(create_server(memory)) as client:
        found = await client.call_tool("search_memory", {"query": "tulip"})
        assert _threads_of(found) == {"club"}  # the users' threads are left out
        refused = await client.call_tool("search_memory", {"query": "tulip", "thread_id": "bob-chat"})
        assert refused.is_error and "'thread_id'" in _text(refused)
        refused = await client.call_tool("search_memory", {"query": "tulip", "user_id": "bob"})
        assert refused.is_error and "'user_id'" in _text(refused)
        refused = await client.call_tool("build_context", {"thread_id": "alice-chat"})
        assert refused.is_error and "'thread_id'" in _text(refused)


async def test_any_user_is_switched_on_at_start(memory: Memory) -> None:
    await _two_users(memory)
    async with Client(create_server(memory, user_id="alice", any_user=True)) as client:
        bobs = _threads_of(await client.call_tool("search_memory", {"query": "tulip", "user_id": "bob"}))
        assert "bob-chat" in bobs and "alice-chat" not in bobs
        built = await client.call_tool("build_context", {"thread_id": "bob-chat", "user_id": "bob"})
        assert not built.is_error and "4711" in _text(built)


def _config_file(tmp_path: Path) -> Path:
    file = tmp_path / "cogitator.yml"
    file.write_text(
        f"memory:\n  adapter: sqlite\n  path: {tmp_path / 'served.db'}\n  embedding: {{provider: none}}\n"
        "  files: {enabled: true}\n"
    )
    return file


async def test_over_stdio(tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "cogitator_memory", "mcp", "--config", str(_config_file(tmp_path)), "--user", "alex"],
    )
    async with Client(params) as client:
        await _exercise(client)


TOKEN = "an-mcp-test-token-0123456789"


@asynccontextmanager
async def _http_client(url: str, token: str | None) -> AsyncIterator[Client]:
    """The SDK's client over streamable HTTP, sending ``token`` as a bearer token."""
    headers = {"authorization": f"Bearer {token}"} if token else None
    async with (
        create_mcp_http_client(headers=headers) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


@contextmanager
def _mcp_http(tmp_path: Path, *extra: str, **env: str) -> Iterator[tuple[str, list[str]]]:
    """``mcp --http --user alex`` on a free port: its URL and the two lines it printed."""
    port = free_port()
    args = ["mcp", "--http", "--port", str(port), "--config", str(_config_file(tmp_path)), "--user", "alex", *extra]
    with running(args, clean_env(tmp_path, **env), tmp_path, port) as lines:
        yield f"http://127.0.0.1:{port}/mcp", lines


async def test_over_streamable_http(tmp_path: Path) -> None:
    with _mcp_http(tmp_path, COGITATOR_MEMORY_TOKEN=TOKEN) as (url, lines):
        assert lines[0] == f"serving the memory at {url} (Ctrl-C stops); clients send 'Authorization: Bearer {TOKEN}'"
        async with _http_client(url, TOKEN) as client:
            await _exercise(client)


_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


async def test_http_asks_every_request_for_the_token(tmp_path: Path) -> None:
    """Made at start when none is given: printed, kept in a file of mode 0600, asked of every
    request (401 without it or with another), and the file goes when the server stops."""
    with _mcp_http(tmp_path) as (url, lines):
        token = lines[0].rsplit("Bearer ", 1)[1].rstrip("'")
        file = tmp_path / "home" / "run" / f"mcp-{url.split(':')[2].split('/')[0]}.token"
        assert str(file) in lines[1] and file.read_text().strip() == token and len(token) >= 32
        assert stat.S_IMODE(file.stat().st_mode) == 0o600
        accept = {"accept": "application/json, text/event-stream"}
        async with httpx.AsyncClient() as http:
            for headers in ({}, {"authorization": "Bearer " + "x" * 43}, {"authorization": token}):
                refused = await http.post(url, json=_INITIALIZE, headers={**accept, **headers})
                assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer", headers
            assert (await http.get(url, headers=accept)).status_code == 401
            assert (await http.delete(url)).status_code == 401
        async with _http_client(url, token) as client:
            found = await client.call_tool("search_memory", {"query": "anything"})
            assert not found.is_error, _text(found)
            refused_user = await client.call_tool("search_memory", {"query": "anything", "user_id": "bob"})
            assert refused_user.is_error and "'user_id'" in _text(refused_user)
    assert not file.exists()


async def test_no_auth_serves_loopback_without_a_token_and_warns(tmp_path: Path) -> None:
    with _mcp_http(tmp_path, "--no-auth") as (url, lines):
        assert lines[0] == f"serving the memory at {url} (Ctrl-C stops)"
        assert lines[1].startswith("warning: authentication is off (--no-auth)")
        async with _http_client(url, None) as client:
            answered = await client.call_tool("recall", {"query": "anything"})
            assert not answered.is_error
        # Still no answer to a page of another site rebound to this machine (DNS rebinding).
        async with httpx.AsyncClient() as http:
            rebound = await http.post(
                url,
                json=_INITIALIZE,
                headers={"accept": "application/json, text/event-stream", "host": "evil.example"},
            )
            assert rebound.status_code in (403, 421), rebound.text


def test_a_bad_config_stops_the_command_before_it_serves(tmp_path: Path) -> None:
    file = tmp_path / "bad.yml"
    file.write_text("memory:\n  adapter: sqlite\n  knowledgeGraf: true\n")
    done = subprocess.run(
        [sys.executable, "-m", "cogitator_memory", "mcp", "--config", str(file)],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1
    assert "memory.knowledgeGraf" in done.stderr and "line 3" in done.stderr
    assert done.stdout == ""


async def test_http_without_auth_binds_only_loopback(tmp_path: Path) -> None:
    """Without a token an address other than loopback is refused before anything opens; a host
    is judged by what it resolves to (``127.evil.test`` is not loopback)."""
    from cogitator_memory.errors import InvalidArgumentError
    from cogitator_memory.server.mcp import serve

    config = {"adapter": "sqlite", "path": str(tmp_path / "never.db"), "embedding": {"provider": "none"}}
    for host in ("0.0.0.0", "192.168.1.5", "::", "127.evil.test"):
        with pytest.raises(InvalidArgumentError, match="'host'"):
            await serve(config, transport="http", host=host, no_auth=True)
    with pytest.raises(InvalidArgumentError, match="'token'"):
        await serve(config, transport="http", token="short")
    with pytest.raises(InvalidArgumentError, match="'transport'"):
        await serve(config, transport="carrier-pigeon")  # type: ignore[arg-type]
    assert not (tmp_path / "never.db").exists()


async def test_the_command_pins_its_user_unless_told_any_user(tmp_path: Path) -> None:
    """``mcp --user alice`` over stdio refuses a call for Bob; ``--any-user`` lets it through."""
    config = _config_file(tmp_path)
    async with Memory(config) as memory:
        await _two_users(memory)
    for extra, refused in (([], True), (["--any-user"], False)):
        args = ["-m", "cogitator_memory", "mcp", "--config", str(config), "--user", "alice", *extra]
        async with Client(StdioServerParameters(command=sys.executable, args=args)) as client:
            answer = await client.call_tool(
                "search_memory", {"query": "tulip", "thread_id": "bob-chat", "user_id": "bob"}
            )
            assert answer.is_error == refused, _text(answer)
            assert ("4711" in _text(answer)) != refused
