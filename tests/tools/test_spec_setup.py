"""The spec's programmatic setup, as it is written (smart-memory.md, "Programmatic Setup"): a
thread store and a ``SQLiteGraphAdapter`` of the same file, a ``CoreFactsStore``, and
``create_memory_tools(graph_adapter=...)``; the same on PostgreSQL with ``PostgresGraphAdapter``.
``graph=``, the earlier name, is still taken."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from cogitator_memory import (
    CoreFactsStore,
    PostgresAdapter,
    PostgresGraphAdapter,
    SQLiteAdapter,
    SQLiteGraphAdapter,
    unwrap,
)
from cogitator_memory.errors import InvalidArgumentError, StoreUnavailableError
from cogitator_memory.testing import service_url
from cogitator_memory.tools import call_tool, create_memory_tools


async def test_the_spec_setup_on_sqlite(tmp_path: Path) -> None:
    path = str(tmp_path / "memory.db")
    memory = SQLiteAdapter(path=path)
    unwrap(await memory.connect())
    graph = SQLiteGraphAdapter(path=path)
    await graph.initialize()
    await graph.initialize()  # again: nothing
    core_facts = CoreFactsStore(adapter=memory)
    await core_facts.initialize()
    try:
        tools = create_memory_tools(graph_adapter=graph, core_facts=core_facts, agent_id="jarvis")
        assert [t.name for t in tools] == ["remember", "recall", "forget"]
        saved = await call_tool(tools, "remember", {"fact": "User's dog is named Luna", "category": "pets"})
        await call_tool(tools, "remember", {"fact": "Alex", "is_core_fact": True, "core_fact_key": "user_name"})
        found = await call_tool(tools, "recall", {"query": "dog"})
        assert [r["fact"] for r in found["results"]] == ["User's dog is named Luna"]
        assert found["core_facts"] == {"user_name": "Alex"}
        # one file: the thread store's connection reads what the graph store wrote
        assert unwrap(await memory.get_node(saved["id"])).name == "User's dog is named Luna"
    finally:
        await core_facts.close()
        await graph.close()
        await graph.close()  # again: nothing
        unwrap(await memory.disconnect())
    assert isinstance(graph, SQLiteAdapter) and graph.supports("graph")


async def test_the_spec_setup_on_postgres() -> None:
    import psycopg

    url = service_url("COGMEM_TEST_POSTGRES_URL")
    schema = f"cogmem_spec_{secrets.token_hex(5)}"
    try:
        async with PostgresAdapter(connection_string=url, schema=schema, dimensions=8) as memory:
            graph = PostgresGraphAdapter(connection_string=url, schema=schema, dimensions=8)
            await graph.initialize()
            try:
                tools = create_memory_tools(graph_adapter=graph, agent_id="jarvis")
                saved = await call_tool(tools, "remember", {"fact": "User lives in Porto"})
                assert (await call_tool(tools, "recall", {"query": "porto"}))["results"][0]["id"] == saved["id"]
                assert unwrap(await memory.get_node(saved["id"])).name == "User lives in Porto"
            finally:
                await graph.close()
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


async def test_initialize_raises_what_stops_the_store(tmp_path: Path) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    with pytest.raises(StoreUnavailableError):
        await SQLiteGraphAdapter(path=str(blocked / "memory.db")).initialize()
    with pytest.raises(StoreUnavailableError):
        await PostgresGraphAdapter(
            connection_string="postgresql://nobody@127.0.0.1:1/none", connect_timeout=1
        ).initialize()


async def test_graph_is_the_earlier_name_of_graph_adapter(tmp_path: Path) -> None:
    async with SQLiteGraphAdapter(path=str(tmp_path / "m.db")) as graph:
        old = create_memory_tools(graph=graph, agent_id="jarvis")
        new = create_memory_tools(graph_adapter=graph, agent_id="jarvis")
        both = create_memory_tools(graph=graph, graph_adapter=graph, agent_id="jarvis")
        await call_tool(old, "remember", {"fact": "User plays the cello"})
        for tools in (new, both):
            assert [r["fact"] for r in (await call_tool(tools, "recall", {"query": "cello"}))["results"]] == [
                "User plays the cello"
            ]
        async with SQLiteAdapter(path=str(tmp_path / "other.db")) as other:
            with pytest.raises(InvalidArgumentError, match="graph"):
                create_memory_tools(graph=other, graph_adapter=graph, agent_id="jarvis")
        with pytest.raises(InvalidArgumentError, match="graph_adapter"):
            create_memory_tools(agent_id="jarvis")
        with pytest.raises(InvalidArgumentError, match="graph_adapter"):
            create_memory_tools(graph_adapter=object(), agent_id="jarvis")  # type: ignore[arg-type]
