"""``cogitator-memory forget``: the dry run lists what would go and changes nothing; the run takes
it with what stands on it, and the forgotten text is not left in the file."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from cogitator_memory import SQLiteAdapter, unwrap
from cogitator_memory.cli import main
from cogitator_memory.items.service import MemoryItems

T = TypeVar("T")


@pytest.fixture(autouse=True)
def _no_db_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COGITATOR_MEMORY_DB", raising=False)


def on_store(path: Path, work: Callable[[SQLiteAdapter], Awaitable[T]]) -> T:
    async def run() -> T:
        async with SQLiteAdapter(path=str(path)) as store:
            return await work(store)

    return asyncio.run(run())


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _seed(path: Path) -> dict[str, str]:
    async def work(store: SQLiteAdapter) -> dict[str, str]:
        unwrap(await store.create_thread("cli", {"user_id": "ana"}, "thread_ana"))
        unwrap(await store.create_thread("cli", {"user_id": "bo"}, "thread_bo"))
        said = unwrap(
            await store.add_entry(
                {"thread_id": "thread_ana", "message": {"role": "user", "content": "my code is CLISECRET9 " * 20}}
            )
        )
        reply = unwrap(
            await store.add_entry({"thread_id": "thread_ana", "message": {"role": "assistant", "content": "ok"}})
        )
        unwrap(await store.add_entry({"thread_id": "thread_bo", "message": {"role": "user", "content": "hi from bo"}}))
        item = await MemoryItems(adapter=store).add(
            {
                "kind": "fact",
                "subject": "user",
                "attribute": "code",
                "value": "CLISECRET9",
                "evidence": [{"entry_id": said.id, "thread_id": "thread_ana", "quote": "CLISECRET9"}],
                "trust": "user",
                "scope": {"agent_id": "cli", "user_id": "ana"},
            }
        )
        return {"said": said.id, "reply": reply.id, "item": item.id}

    return on_store(path, work)


def test_dry_run_lists_and_changes_nothing(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    ids = _seed(db)
    code, out, err = cli(capsys, "forget", "entries", ids["said"], "--db", str(db), "--dry-run", "--json")
    assert (code, err) == (0, "")
    plan = json.loads(out)
    assert {k: plan[k] for k in ("dry_run", "threads", "entries", "skipped")} == {
        "dry_run": True,
        "threads": [],
        "entries": {"thread_ana": sorted([ids["said"], ids["reply"]])},
        "skipped": [],
    }
    assert [(r["id"], r["action"]) for r in plan["items"] + plan["facts"]] == [(ids["item"], "delete")]
    code, out, _ = cli(capsys, "forget", "user", "ana", "--db", str(db), "--dry-run")
    assert code == 0 and "thread thread_ana (whole)" in out and "Nothing was changed." in out and "thread_bo" not in out

    async def left(store: SQLiteAdapter) -> tuple[Any, Any]:
        return unwrap(await store.get_entries("thread_ana")), unwrap(await store.get_items([ids["item"]]))

    entries, items = on_store(db, left)
    assert len(entries) == 2 and len(items) == 1


def test_forget_user_takes_the_thread_and_what_stands_on_it(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    ids = _seed(db)
    code, out, err = cli(capsys, "forget", "user", "ana", "--agent", "cli", "--db", str(db), "--json")
    assert (code, err) == (0, "")
    counts = json.loads(out)
    assert counts["threads"] == 1 and counts["items"]["purged"] == 1 and counts["dry_run"] is False

    async def left(store: SQLiteAdapter) -> tuple[Any, Any, Any]:
        return (
            unwrap(await store.get_thread("thread_ana")),
            unwrap(await store.get_thread("thread_bo")),
            unwrap(await store.get_items([ids["item"]])),
        )

    ana, bo, items = on_store(db, left)
    assert ana is None and bo is not None and items == []
    data = db.read_bytes() + (
        db.with_name(db.name + "-wal").read_bytes() if db.with_name(db.name + "-wal").exists() else b""
    )
    assert b"CLISECRET9" not in data and b"hi from bo" in data


def test_forget_entries_redacts_and_names_bad_ids(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    ids = _seed(db)
    code, out, _ = cli(capsys, "forget", "entries", ids["said"], "--redact", "--reason", "asked", "--db", str(db))
    assert code == 0 and "redacted: 2" in out and "items purged: 1" in out
    code, _, err = cli(capsys, "forget", "entries", "entry_missing", "--db", str(db))
    assert code == 1 and "entry not found: entry_missing" in err and err.count("\n") == 1
    code, _, err = cli(capsys, "forget", "thread", "thread_missing", "--db", str(db), "--dry-run")
    assert code == 1 and "thread not found: thread_missing" in err
    code, _, err = cli(capsys, "forget", "--db", str(db))
    assert code == 2 and "forget" in err
