"""The recall-index conformance suite on the embedded stores: in-memory, and SQLite on a file and on ':memory:'."""

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from cogitator_memory import InMemoryAdapter, SQLiteAdapter
from cogitator_memory.testing.recall_index import RecallIndexConformanceCase, recall_index_conformance_cases


@pytest.fixture(params=["memory", "sqlite-file", "sqlite-memory"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    if request.param == "memory":
        async with InMemoryAdapter() as memory:
            yield memory
        return
    path = str(tmp_path / "recall.db") if request.param == "sqlite-file" else ":memory:"
    async with SQLiteAdapter(path=path) as sqlite:
        yield sqlite


@pytest.mark.parametrize("case", recall_index_conformance_cases(), ids=str)
async def test_recall_index_conformance(case: RecallIndexConformanceCase, store: Any) -> None:
    await case.run(store)


def _trace_keyword_searches(monkeypatch: pytest.MonkeyPatch, statements: list[str]) -> None:
    """Put the SQL of SQLite's keyword searches in ``statements``, on whichever connection they
    run (the store's read connection, off the event loop, for a file in WAL mode)."""
    from cogitator_memory.engines.sqlite import recall as sqlite_recall

    search = sqlite_recall._keyword

    def traced(db: Any, *args: Any) -> Any:
        db.set_trace_callback(statements.append)
        try:
            return search(db, *args)
        finally:
            db.set_trace_callback(None)

    monkeypatch.setattr(sqlite_recall, "_keyword", traced)


async def test_sqlite_keyword_searches_join_their_postings_to_small_indexes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a keyword search joins its postings to an index of what it reads of the records (scope,
    # kind, status, length), not to their rows; and a search of items keeps the postings of the
    # records that are not turns, through their partial index, before that (migration m014)
    from datetime import UTC, datetime

    from cogitator_memory import unwrap

    said = datetime(2026, 1, 1, tzinfo=UTC)
    rows = [
        {"kind": kind, "source_id": f"{kind}{n}", "text": f"peanut note {n}", "said_at": said, "agent_id": "a"}
        for kind, count in (("turn", 200), ("item", 3))
        for n in range(count)
    ]
    async with SQLiteAdapter(path=str(tmp_path / "recall.db")) as store:
        unwrap(await store.index_recall_records(rows))
        statements: list[str] = []
        _trace_keyword_searches(monkeypatch, statements)
        found = unwrap(await store.recall_keyword("peanut", filter={"kinds": ["item", "core_fact"]}))
        turns = unwrap(await store.recall_keyword("peanut", filter={"kinds": ["turn"]}, limit=500))
        monkeypatch.undo()
        assert sorted(c.record.source_id for c in found) == ["item0", "item1", "item2"]
        assert len(turns) == 200 and len(unwrap(await store.recall_keyword("peanut", limit=500))) == 203
        items_sql, turns_sql = [s for s in statements if "recall_terms" in s]
        for sql in (items_sql, turns_sql):
            plan = " | ".join(str(row[-1]) for row in store.connection.execute(f"EXPLAIN QUERY PLAN {sql}"))
            assert "SEARCH r USING COVERING INDEX recall_scoring" in plan, plan
            assert ("recall_not_turns" in plan) == (sql is items_sql), plan


@pytest.mark.parametrize("path", ["file", ":memory:"])
async def test_sqlite_keyword_searches_run_off_the_event_loop_on_a_file(
    path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # on a WAL file the keyword search runs on the store's read connection in a thread of its
    # own (the loop goes on meanwhile), and sees every commit of the store's connection at once;
    # in memory (no second connection can see it) it runs on the loop; closing ends the thread
    import threading
    from datetime import UTC, datetime

    from cogitator_memory import unwrap
    from cogitator_memory.engines.sqlite import recall as sqlite_recall

    ran_in: list[str] = []
    threads: list[threading.Thread] = []
    search = sqlite_recall._keyword

    def noted(db: Any, *args: Any) -> Any:
        ran_in.append(threading.current_thread().name)
        threads.append(threading.current_thread())
        return search(db, *args)

    monkeypatch.setattr(sqlite_recall, "_keyword", noted)
    said = datetime(2026, 1, 1, tzinfo=UTC)
    store = SQLiteAdapter(path=str(tmp_path / "recall.db") if path == "file" else path)
    async with store:
        for n in range(3):  # each write seen by the very next search
            unwrap(
                await store.index_recall_records(
                    [{"kind": "turn", "source_id": f"t{n}", "text": "peanut note", "said_at": said}]
                )
            )
            assert len(unwrap(await store.recall_keyword("peanut"))) == n + 1
        unwrap(await store.delete_recall_records(["turn:t0"]))
        assert [c.record.source_id for c in unwrap(await store.recall_keyword("peanut"))] == ["t1", "t2"]
        loop_thread = threading.current_thread().name
        if path == "file":
            assert ran_in and all(name.startswith("cogmem-sqlite-read") for name in ran_in), ran_in
        else:
            assert set(ran_in) == {loop_thread}, ran_in
    assert not any(t.is_alive() for t in threads if t is not threading.main_thread()), "closing ends the thread"
    closed = await store.recall_keyword("peanut")
    assert not closed.success and "connect" in str(closed.error)


async def test_sqlite_probes_the_records_that_are_not_turns_when_they_are_many(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a search of items lists the records that are not turns first while they are few; past
    # LISTED_OTHERS it probes their partial index for each posting instead (a list of 200,000
    # items and facts was read at every search), and finds the same records either way
    from datetime import UTC, datetime

    from cogitator_memory import unwrap
    from cogitator_memory.engines.sqlite import recall as sqlite_recall

    said = datetime(2026, 1, 1, tzinfo=UTC)
    rows = [
        {"kind": kind, "source_id": f"{kind}{n}", "text": f"peanut note {n}", "said_at": said, "agent_id": "a"}
        for kind, count in (("turn", 30), ("item", 6), ("graph_fact", 4))
        for n in range(count)
    ]
    flt = {"kinds": ["item", "graph_fact"], "agent_id": "a"}
    async with SQLiteAdapter(path=str(tmp_path / "recall.db")) as store:
        unwrap(await store.index_recall_records(rows))
        plans: dict[int, str] = {}
        found: dict[int, list[tuple[str, float]]] = {}
        statements: list[str] = []
        _trace_keyword_searches(monkeypatch, statements)
        for listed in (10, 9):  # 10 records are not turns: listed, then one too many to list
            monkeypatch.setattr(sqlite_recall, "LISTED_OTHERS", listed)
            statements.clear()
            hits = unwrap(await store.recall_keyword("peanut note", filter=flt, limit=50))
            found[listed] = [(c.record.source_id, round(c.score, 9)) for c in hits]
            [sql] = [s for s in statements if "recall_terms" in s]
            plans[listed] = " | ".join(str(r[-1]) for r in store.connection.execute(f"EXPLAIN QUERY PLAN {sql}"))
        assert len(found[10]) == 10 and found[9] == found[10]
        assert {s for s, _ in found[9]} == {f"item{n}" for n in range(6)} | {f"graph_fact{n}" for n in range(4)}
        assert "LIST SUBQUERY" in plans[10] and "recall_not_turns" in plans[10], plans[10]
        assert "LIST SUBQUERY" not in plans[9], plans[9]
        assert (
            "CORRELATED SCALAR SUBQUERY" in plans[9] and "SEARCH x USING INDEX recall_not_turns (rid=?" in plans[9]
        ), plans[9]


async def test_sqlite_reads_a_common_terms_newest_postings_backwards_along_its_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a term past the postings budget: its newest postings are read from the end of the
    # postings' key (term, rid), no sort of them all, and then joined as any search's
    from datetime import UTC, datetime

    from cogitator_memory import unwrap

    said = datetime(2026, 1, 1, tzinfo=UTC)
    rows = [{"kind": "turn", "source_id": f"t{n:03d}", "text": "peanut", "said_at": said} for n in range(60)]
    async with SQLiteAdapter(path=str(tmp_path / "recall.db")) as store:
        store.postings_budget = 50
        unwrap(await store.index_recall_records(rows))
        statements: list[str] = []
        _trace_keyword_searches(monkeypatch, statements)
        found = unwrap(await store.recall_keyword("peanut", limit=5))
        assert [c.record.source_id for c in found] == ["t010", "t011", "t012", "t013", "t014"]
        [sql] = [s for s in statements if "recall_terms" in s]
        rows = list(store.connection.execute(f"EXPLAIN QUERY PLAN {sql}"))
        [postings] = [node for node, _parent, _, detail in rows if detail == "MATERIALIZE t"]
        under = [detail for _node, parent, _, detail in rows if parent == postings]
        assert under == ["SEARCH recall_terms USING PRIMARY KEY (term=?)"], rows
        assert any(detail.startswith("SEARCH r USING COVERING INDEX recall_scoring") for *_, detail in rows), rows


async def test_a_sqlite_file_at_version_13_gains_the_search_indexes(tmp_path: Path) -> None:
    import sqlite3
    from contextlib import closing
    from datetime import UTC, datetime

    from cogitator_memory import unwrap
    from cogitator_memory.engines.sqlite.schema import MIGRATIONS, SCHEMA_VERSION, migrate

    path = tmp_path / "old.db"
    with closing(sqlite3.connect(path, isolation_level=None)) as db:
        migrate(db, MIGRATIONS[:13])
    said = datetime(2026, 1, 1, tzinfo=UTC)
    async with SQLiteAdapter(path=str(path)) as store:
        unwrap(
            await store.index_recall_records([{"kind": "item", "source_id": "i", "text": "peanut", "said_at": said}])
        )
        found = unwrap(await store.recall_keyword("peanut", filter={"kinds": ["item"]}))
        assert [c.record.source_id for c in found] == ["i"]
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        [(sql,)] = db.execute("SELECT sql FROM sqlite_master WHERE name = 'recall_not_turns'").fetchall()
        assert "WHERE kind <> 'turn'" in sql
        assert db.execute("SELECT count(*) FROM sqlite_master WHERE name = 'recall_scoring'").fetchone() == (1,)
