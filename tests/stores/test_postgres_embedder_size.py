"""PostgreSQL's vector size comes from the configured embedder (issue 35, item 5).

A thread command of the command line opens the store without an embedder: on a fresh schema it
must not fix the vector size (it made a 768-dimension table, and the default local model's 384
then left semantic search off with a warning on every later command). An existing table of
another size than the embedder's is an error at connect naming both sizes and the ways out.
Against the real PostgreSQL server with pgvector, the real command line and the local model.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import psycopg
import pytest
import yaml

from cogitator_memory import Memory, unwrap
from cogitator_memory.cli.commands import main
from cogitator_memory.engines.postgres.adapter import PostgresAdapter
from cogitator_memory.errors import InvalidArgumentError


def _config(path: Path, pg_url: str, schema: str, **memory: object) -> Path:
    path.write_text(
        yaml.safe_dump(
            {"memory": {"adapter": "postgres", "connection_string": pg_url, "options": {"schema": schema}, **memory}}
        )
    )
    return path


def _table(pg_url: str, schema: str) -> str | None:
    with psycopg.connect(pg_url) as conn:
        row = conn.execute(
            "SELECT format_type(a.atttypid, a.atttypmod) FROM pg_attribute a"
            " WHERE a.attrelid = to_regclass(%s) AND a.attname = 'embedding'",
            (f'"{schema}".embeddings',),
        ).fetchone()
    return None if row is None else str(row[0])


def test_a_thread_command_on_a_fresh_schema_leaves_the_size_to_the_embedder(
    pg_url: str, schema: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    config = _config(tmp_path / "cogitator.yml", pg_url, schema)
    assert main(["demo", "--config", str(config)]) == 0
    assert main(["threads", "--config", str(config)]) == 0
    assert "demo" in capsys.readouterr().out
    assert _table(pg_url, schema) is None, "a thread command made the vector table"

    async def remember_and_search() -> list[str]:
        async with Memory(str(config)) as memory:  # the default embedder: the local model
            assert memory.embedding_service.dimensions == 384
            await memory.add([{"role": "user", "content": "I'm allergic to peanuts."}], user_id="ana")
            await memory.flush()
            status = memory.adapter.vector_status()  # type: ignore[attr-defined]
            assert status["available"] and status["dimensions"] == 384, status
            vector = await memory.embedding_service.embed("Which nuts make me ill?")
            near = unwrap(await memory.vectors.search(vector, limit=3, threshold=-1.0, filter={"user_id": "ana"}))
            return [h.content for h in near]

    with caplog.at_level(logging.WARNING, logger="cogitator_memory"):
        contents = asyncio.run(remember_and_search())
    assert contents and "peanuts" in contents[0]
    assert _table(pg_url, schema) == "vector(384)"
    assert not [r for r in caplog.records if "unavailable" in r.getMessage()], caplog.text

    # and a thread command after it adopts the table as it is
    assert main(["threads", "--config", str(config)]) == 0
    assert _table(pg_url, schema) == "vector(384)"


def test_an_embedder_of_another_size_than_the_table_fails_at_connect(pg_url: str, schema: str, tmp_path: Path) -> None:
    async def make_table() -> None:
        async with PostgresAdapter(url=pg_url, schema=schema, dimensions=384):
            pass

    asyncio.run(make_table())
    config = _config(
        tmp_path / "cogitator.yml",
        pg_url,
        schema,
        embedding={"provider": "hashing", "dimensions": 256},
    )  # the default on_error (disable) turns memory off only for a store it cannot reach

    async def connect() -> None:
        memory = Memory(str(config))
        try:
            await memory.connect()
        finally:
            await memory.close()

    with pytest.raises(InvalidArgumentError) as caught:
        asyncio.run(connect())
    message = str(caught.value)
    assert "384 dimensions" in message and "vectors of 256" in message, message
    assert "configure an embedding model of 384" in message and f'DROP TABLE "{schema}".embeddings' in message
    assert getattr(caught.value, "key", None) == "memory.embedding"  # a config to fix, not "memory off"
    assert _table(pg_url, schema) == "vector(384)", "the refused connect changed the table"
