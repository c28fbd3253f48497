"""The MCP server, driven by the official SDK's own client: in process, over stdio (the
``cogitator-memory mcp`` command) and over streamable HTTP (``--http``), bad arguments included."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from cogitator_memory.runtime.memory import Memory
from cogitator_memory.server.mcp import create_server

TOOLS = {"remember", "recall", "forget", "search_memory", "build_context", "memory"}


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

    forgotten = await client.call_tool("forget", {"query": "dog"})
    assert json.loads(_text(forgotten))["forgotten"] == 1

    for name, arguments, words in [
        ("recall", {}, "query"),
        ("recall", {"query": 7}, "query"),
        ("remember", {"fact": "x", "is_core_fact": True}, "core_fact_key"),
        ("search_memory", {"query": "x", "limit": 0}, "limit"),
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
    async with Memory({"adapter": "sqlite", "path": str(tmp_path / "m.db"), "embedding": {"provider": "none"}}) as m:
        yield m


async def test_in_process(memory: Memory) -> None:
    async with Client(create_server(memory, user_id="alex")) as client:
        await _exercise(client)


async def test_search_memory_finds_turns(memory: Memory) -> None:
    await memory.add([{"role": "user", "content": "I planted tomatoes in May."}], user_id="alex", thread_id="g")
    async with Client(create_server(memory, user_id="alex")) as client:
        found = await client.call_tool("search_memory", {"query": "tomatoes"})
        hits = json.loads(_text(found))["results"]
        assert hits[0]["thread_id"] == "g" and "tomatoes" in hits[0]["text"]
        other = await client.call_tool("search_memory", {"query": "tomatoes", "user_id": "sam"})
        assert json.loads(_text(other))["results"] == []


def _config_file(tmp_path: Path) -> Path:
    file = tmp_path / "cogitator.yml"
    file.write_text(f"memory:\n  adapter: sqlite\n  path: {tmp_path / 'served.db'}\n  embedding: {{provider: none}}\n")
    return file


async def test_over_stdio(tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "cogitator_memory", "mcp", "--config", str(_config_file(tmp_path)), "--user", "alex"],
    )
    async with Client(params) as client:
        await _exercise(client)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[str]:
    port = _free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cogitator_memory",
            "mcp",
            "--http",
            "--port",
            str(port),
            "--config",
            str(_config_file(tmp_path)),
            "--user",
            "alex",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                raise AssertionError(f"the server stopped: {process.stderr.read().decode() if process.stderr else ''}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(10)
        if process.stderr:
            process.stderr.close()


async def test_over_streamable_http(http_server: str) -> None:
    async with Client(http_server) as client:
        await _exercise(client)


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


async def test_http_binds_only_loopback(tmp_path: Path) -> None:
    """The MCP transport has no authentication: an open address is refused before anything opens."""
    from cogitator_memory.errors import InvalidArgumentError
    from cogitator_memory.server.mcp import serve

    config = {"adapter": "sqlite", "path": str(tmp_path / "never.db"), "embedding": {"provider": "none"}}
    for host in ("0.0.0.0", "192.168.1.5", "::"):
        with pytest.raises(InvalidArgumentError, match="'host'"):
            await serve(config, transport="http", host=host)
    with pytest.raises(InvalidArgumentError, match="'transport'"):
        await serve(config, transport="carrier-pigeon")  # type: ignore[arg-type]
    assert not (tmp_path / "never.db").exists()
