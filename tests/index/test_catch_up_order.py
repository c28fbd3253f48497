"""A catch-up writes the threads' records the oldest update first, so that the index's write
order follows the conversations, as live indexing does: a keyword search of a word held past
the postings budget reads the records indexed last, which must be the newest conversations'
after a full reindex too, and a reindex stopped half way goes on after the last thread done."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from cogitator_memory import InMemoryAdapter, SQLiteAdapter, frozen_clock, unwrap
from cogitator_memory.index.indexer import REINDEX_KEY, RecallIndexer, parse_mark, walk_mark

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    made = InMemoryAdapter() if request.param == "memory" else SQLiteAdapter(path=str(tmp_path / "order.db"))
    async with made as opened:
        yield opened


async def _threads(store: Any, count: int) -> list[str]:
    """``count`` threads of user ana, the n-th written (and so updated) n days after the first,
    each with two turns holding "zebra"."""
    ids = []
    for n in range(count):
        with frozen_clock(T0 + timedelta(days=n)):
            thread = unwrap(await store.create_thread("agent", {"user_id": "ana"}))
            for i in range(2):
                message = {"role": "user", "content": f"zebra note {n} {i}"}
                unwrap(await store.add_entry({"thread_id": thread.id, "message": message}))
        ids.append(thread.id)
    return ids


async def test_a_full_reindex_writes_the_newest_conversations_last(store: Any) -> None:
    ids = await _threads(store, 6)
    report = await RecallIndexer(store).catch_up(full=True)
    assert report.threads_checked == 6 and report.records_written == 12
    store.postings_budget = 4  # "zebra" is held by 12 records: the 4 indexed last are read
    found = unwrap(await store.recall_keyword("zebra", filter={"user_id": "ana", "kinds": ["turn"]}, limit=4))
    assert {c.record.thread_id for c in found} == set(ids[-2:]), "the two newest threads' turns"
    assert unwrap(await store.get_recall_state(REINDEX_KEY)) == "", "a finished reindex keeps no place"


async def test_a_stopped_reindex_goes_on_after_the_last_thread_done(
    store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = await _threads(store, 5)
    threads = {t: unwrap(await store.get_thread(t)) for t in ids}
    # stopped after the first three (oldest first): the place kept names the third
    unwrap(await store.set_recall_state(REINDEX_KEY, walk_mark(threads[ids[2]].updated_at, ids[2])))
    seen: list[str] = []
    real = RecallIndexer.resync_thread

    async def counted(self: RecallIndexer, thread: Any, *, force: bool = False) -> int:
        seen.append(thread.id)
        return await real(self, thread, force=force)

    monkeypatch.setattr(RecallIndexer, "resync_thread", counted)
    report = await RecallIndexer(store).catch_up(full=True)
    assert seen == ids[3:], "the two left, oldest first"
    assert report.threads_checked == 2


def test_a_place_kept_by_an_earlier_version_starts_over() -> None:
    assert parse_mark(None) is None and parse_mark("") is None
    assert parse_mark("eyJwYWdlIjogMn0=") is None, "a thread page cursor of an earlier version"
    assert parse_mark("2026-03-01T09:00:00|t1") is None, "a time without its zone"
    when = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
    assert parse_mark(walk_mark(when, "t|1")) == (when, "t|1"), "an id holding the separator"
