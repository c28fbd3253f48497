"""The memory file conformance suite on SQLiteAdapter, on a file (WAL) and on ':memory:'."""

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from cogitator_memory import SQLiteAdapter
from cogitator_memory.testing.files import FileConformanceCase, memory_file_adapter_conformance_cases


@pytest.fixture(params=["file", "memory"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SQLiteAdapter]:
    path = str(tmp_path / "nested" / "memory.db") if request.param == "file" else ":memory:"
    async with SQLiteAdapter(path=path) as memory:
        yield memory


def test_the_sqlite_store_keeps_files() -> None:
    assert SQLiteAdapter(path=":memory:").supports("files")


@pytest.mark.parametrize("case", memory_file_adapter_conformance_cases(), ids=str)
async def test_file_conformance(case: FileConformanceCase, store: SQLiteAdapter) -> None:
    await case.run(store)


async def test_reads_use_the_indexes(tmp_path: Path) -> None:
    from cogitator_memory import unwrap
    from cogitator_memory.engines.sqlite.files import heads_sql, versions_sql
    from cogitator_memory.files.records import check_head_filter, check_version_filter

    ana = {"agent_id": "concierge", "user_id": "u3"}
    async with SQLiteAdapter(path=str(tmp_path / "plans.db")) as memory:
        for sequence in range(1, 4):
            batch = [
                {
                    "id": f"file_{n}_{sequence}",
                    "scope": {"agent_id": "concierge", "user_id": f"u{n % 7}"},
                    "path": f"/memories/d{n % 20}/f{n}.md",
                    "sequence": sequence,
                    "content": "x",
                    "place": {"thread_id": "t", "entry_id": f"e{n}_{sequence}"},
                    "created_at": "2026-03-01T09:30:00+00:00",
                }
                for n in range(500)
            ]
            unwrap(await memory.add_file_versions(batch))
        memory.connection.execute("ANALYZE")
        plans = [
            (heads_sql(check_head_filter({"visible_to": ana, "paths": ["/memories/d3/f3.md"]})), "memory_file_heads"),
            (heads_sql(check_head_filter({"visible_to": ana, "prefix": "/memories/d3"})), "memory_file_heads"),
            (versions_sql(check_version_filter({"scope": ana, "paths": ["/memories/d3/f3.md"]})), "by_path"),
            (
                versions_sql(check_version_filter({"within": {"agent_id": "concierge"}, "entry_ids": ["e5_1"]})),
                "by_entry",
            ),
            (versions_sql(check_version_filter({"within": {"agent_id": "concierge", "user_id": "u2"}})), "by_agent"),
            (
                versions_sql(check_version_filter({"scope": ana, "renamed_from": ["/memories/x.md"]})),
                "memory_file_versions_by_",
            ),
        ]
        for (sql, params), index in plans:
            plan = " ".join(row[3] for row in memory.connection.execute(f"EXPLAIN QUERY PLAN {sql}", params))
            assert index in plan and "SCAN memory_file_versions" not in plan, (sql, plan)
        heads = memory.connection.execute("SELECT count(*) FROM memory_file_versions WHERE head = 1").fetchone()
        assert heads == (500,)
