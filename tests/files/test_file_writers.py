"""Writers of memory files in several processes at once, on SQLite (one file) and PostgreSQL (one
schema): no version is added twice or lost, a refused change leaves nothing, a renamed directory
moves whole, and no file ends up under another file however the writers interleave.

Each writer is ``file_writer.py`` in a process of its own; all start at the same instant.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import secrets
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from cogitator_memory import PostgresAdapter, SQLiteAdapter, unwrap
from cogitator_memory.files import MemoryFiles
from cogitator_memory.files.paths import is_under
from cogitator_memory.testing import postgres_database

WRITER = Path(__file__).with_name("file_writer.py")
ACCESS: dict[str, Any] = {"scope": {"agent_id": "concierge", "user_id": "ana"}}
RACED = "Another writer changed the memory around {path} at the same time. View it again and try again."


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    with postgres_database("cogmem_fw") as url:
        yield url


@pytest.fixture(params=["sqlite", "postgres"])
async def target(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[tuple[dict[str, Any], Any]]:
    """Where the writers write (as they are told) and a store of the test's own on the same data."""
    if request.param == "sqlite":
        path = str(tmp_path / "shared.db")
        async with SQLiteAdapter(path=path) as store:
            yield {"engine": "sqlite", "path": path}, store
        return
    url = request.getfixturevalue("pg_url")
    schema = f"cogmem_fw_{secrets.token_hex(5)}"
    async with PostgresAdapter(url=url, schema=schema, dimensions=8) as store:  # migrates before the writers come
        yield {"engine": "postgres", "url": url, "schema": schema}, store


#: The time between two commands of a writer: every writer starts its k-th command at the same instant.
INTERVAL = 0.15


async def race(
    where: dict[str, Any], *commands: list[dict[str, Any]], pause: float = 0.01
) -> list[list[dict[str, str]]]:
    """Run each list of commands in a process of its own, the k-th commands of all of them
    starting at the same instant; their outcomes."""
    start_at = time.time() + 5.0
    procs = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            str(WRITER),
            json.dumps(
                {
                    **where,
                    "access": ACCESS,
                    "commands": batch,
                    "start_at": start_at,
                    "interval": INTERVAL,
                    "pause": pause,
                }
            ),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        for batch in commands
    ]
    outputs = await asyncio.gather(*(p.communicate() for p in procs))
    for proc, (_, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err.decode()
    return [json.loads(out) for out, _ in outputs]


def assert_history_whole(versions: list[Any]) -> None:
    """Each scope and path numbers its versions 1, 2, 3... with nothing missing or repeated."""
    chains: dict[tuple[str, str], list[int]] = {}
    for version in versions:
        chains.setdefault((version.scope_key, version.path), []).append(version.sequence)
    for where, sequences in chains.items():
        assert sorted(sequences) == list(range(1, len(sequences) + 1)), (where, sorted(sequences))


def assert_no_file_under_a_file(paths: list[str]) -> None:
    for path in paths:
        for other in paths:
            assert not is_under(path, other), f"{path} stands under the file {other}"


async def test_writers_of_one_file_lose_nothing(target: tuple[dict[str, Any], Any]) -> None:
    where, store = target
    files = MemoryFiles(adapter=store)
    await files.run(ACCESS, {"command": "create", "path": "/memories/log.md", "file_text": "start\n"})
    writers = [
        [
            {"command": "insert", "path": "/memories/log.md", "insert_line": 0, "insert_text": f"w{w} line {n}"}
            for n in range(12)
        ]
        for w in range(4)
    ]
    outcomes = await race(where, *writers)
    written: list[str] = []
    for w, outcome in enumerate(outcomes):
        for n, result in enumerate(outcome):
            if "ok" in result:
                assert result["ok"] == "The file /memories/log.md has been edited."
                written.append(f"w{w} line {n}")
            else:
                assert result["refused"] == RACED.format(path="/memories/log.md"), result
    assert len(written) >= 12, f"most inserts land: {len(written)} of 48"
    final = await files.read(ACCESS, "/memories/log.md")
    assert final is not None
    lines = final.content.splitlines()
    assert sorted(lines) == sorted([*written, "start"]), "every insert that answered ok is there, once"
    history = await files.history(ACCESS, "/memories/log.md")
    assert [v.sequence for v in history] == list(range(1, len(written) + 2))
    by_sequence = sorted(history, key=lambda v: v.sequence)
    for before, after in itertools.pairwise(by_sequence):
        assert after.previous_id == before.id, "each version was made from the one before it"


async def test_no_file_ends_up_under_a_file(target: tuple[dict[str, Any], Any]) -> None:
    where, store = target
    files = MemoryFiles(adapter=store)
    rounds = range(15)
    as_files = [{"command": "create", "path": f"/memories/r{n}", "file_text": "a file"} for n in rounds]
    as_dirs = [{"command": "create", "path": f"/memories/r{n}/inner.md", "file_text": "under"} for n in rounds]
    deeper = [{"command": "create", "path": f"/memories/r{n}/x/y.md", "file_text": "deeper"} for n in rounds]
    outcomes = await race(where, as_files, as_dirs, deeper)
    for outcome in outcomes:
        for result in outcome:
            if "refused" in result:
                message = result["refused"]
                assert message.startswith("Another writer changed the memory around") or message.startswith(
                    "Error: "
                ), message
    raced = [r for outcome in outcomes for r in outcome if r.get("refused", "").startswith("Another writer")]
    assert raced, "the writers met: some change was taken back"
    listed = [f.path for f in await files.list(ACCESS)]
    assert_no_file_under_a_file(listed)
    for n in rounds:
        made_file = "ok" in outcomes[0][n]
        made_dir = "ok" in outcomes[1][n] or "ok" in outcomes[2][n]
        assert not (made_file and made_dir), f"round {n}: a file and files under it both answered ok"
        assert made_file == (f"/memories/r{n}" in listed), f"round {n}: the file stands exactly when it answered ok"
    assert_history_whole(unwrap(await store.query_file_versions({"within": {"agent_id": "concierge"}})))


async def test_a_renamed_directory_moves_whole_while_its_files_change(target: tuple[dict[str, Any], Any]) -> None:
    where, store = target
    files = MemoryFiles(adapter=store)
    rounds = range(10)
    for n in rounds:
        for name in ("a.md", "b.md", "c.md"):
            await files.put(ACCESS, f"/memories/d{n}/{name}", f"{name} of {n}\n")
    renames = [{"command": "rename", "old_path": f"/memories/d{n}", "new_path": f"/memories/e{n}"} for n in rounds]
    edits = [
        {"command": "str_replace", "path": f"/memories/d{n}/b.md", "old_str": f"b.md of {n}", "new_str": f"edited {n}"}
        for n in rounds
    ]
    outcomes = await race(where, renames, edits)
    listed = {f.path: f.content for f in await files.list(ACCESS)}
    for n in rounds:
        moved = "ok" in outcomes[0][n]
        edited = "ok" in outcomes[1][n]
        home = f"/memories/e{n}" if moved else f"/memories/d{n}"
        assert sorted(p for p in listed if p.startswith(home + "/")) == [
            f"{home}/{x}" for x in ("a.md", "b.md", "c.md")
        ]
        assert not any(p.startswith(f"/memories/{'d' if moved else 'e'}{n}/") for p in listed), "whole or nothing"
        assert (listed[f"{home}/b.md"] == f"edited {n}\n") == edited, f"round {n}: an edit that answered ok is kept"
        if not edited:
            refused = outcomes[1][n]["refused"]
            assert refused in (
                f"Error: The path /memories/d{n}/b.md does not exist. Please provide a valid path.",
                RACED.format(path=f"/memories/d{n}/b.md"),
            ), refused
    assert_history_whole(unwrap(await store.query_file_versions({"within": {"agent_id": "concierge"}})))
