"""``MemoryFileTool``: the memory tool of one caller sends the SHA-256 of the version it last
read with every change, so a change made on a file another writer changed since is refused and
writes nothing; on the in-process store and a SQLite file."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from cogitator_memory import InMemoryAdapter, MemoryFiles, MemoryFileTool, SQLiteAdapter
from cogitator_memory.errors import InvalidArgumentError
from cogitator_memory.files.paths import sha256_of
from cogitator_memory.files.records import MemoryFileVersion

SCOPE = {"agent_id": "jarvis", "user_id": "ana"}
PATH = "/memories/trip.md"


@pytest.fixture(params=["memory", "sqlite"])
async def files(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[MemoryFiles]:
    store: Any = InMemoryAdapter() if request.param == "memory" else SQLiteAdapter(path=str(tmp_path / "f.db"))
    async with store:
        yield MemoryFiles(adapter=store)


async def _versions(files: MemoryFiles, path: str = PATH) -> int:
    return len(await files.history({"scope": SCOPE}, path))


async def test_a_change_on_a_file_changed_since_it_was_read_is_refused(files: MemoryFiles) -> None:
    a, b = MemoryFileTool(files, {"scope": SCOPE}), MemoryFileTool(files, {"scope": SCOPE})
    made = await a.run({"command": "create", "path": PATH, "file_text": "likes: tea\ncity: Porto\n"})
    assert not made.is_error and a.last_read(PATH) == sha256_of("likes: tea\ncity: Porto\n")
    assert b.last_read(PATH) is None
    assert "Porto" in (await b.run({"command": "view", "path": PATH})).content
    assert not (await b.run({"command": "str_replace", "path": PATH, "old_str": "Porto", "new_str": "Braga"})).is_error
    before = await _versions(files)
    for command in (
        {"command": "str_replace", "path": PATH, "old_str": "tea", "new_str": "coffee"},
        {"command": "insert", "path": PATH, "insert_line": 0, "insert_text": "# Trip"},
        {"command": "delete", "path": PATH},
        {"command": "rename", "old_path": PATH, "new_path": "/memories/old.md"},
    ):
        refused = await a.run(command)
        assert refused.is_error and refused.content == (
            f"Error: The file {PATH} changed since it was read. View it again and try again."
        ), command
    assert await _versions(files) == before  # nothing written
    assert "city: Braga" in (await a.run({"command": "view", "path": PATH})).content
    assert not (await a.run({"command": "str_replace", "path": PATH, "old_str": "tea", "new_str": "coffee"})).is_error
    assert a.last_read(PATH) == sha256_of("likes: coffee\ncity: Braga\n")  # what it wrote
    stale = await b.run({"command": "insert", "path": PATH, "insert_line": 0, "insert_text": "# Trip"})
    assert stale.is_error and "changed since it was read" in stale.content


async def test_a_file_never_read_is_changed_on_what_stands(files: MemoryFiles) -> None:
    a, b = MemoryFileTool(files, {"scope": SCOPE}), MemoryFileTool(files, {"scope": SCOPE})
    await a.run({"command": "create", "path": PATH, "file_text": "one\n"})
    inserted = await b.run({"command": "insert", "path": PATH, "insert_line": 1, "insert_text": "two"})
    assert not inserted.is_error, inserted.content
    assert b.last_read(PATH) == sha256_of("one\ntwo\n")
    assert not (await a.run({"command": "view", "path": "/memories"})).is_error  # a listing shows no text
    assert a.last_read(PATH) == sha256_of("one\n")


async def test_a_rename_moves_what_was_read_and_a_delete_forgets_it(files: MemoryFiles) -> None:
    a = MemoryFileTool(files, {"scope": SCOPE})
    await a.run({"command": "create", "path": PATH, "file_text": "tea\n"})
    moved = await a.run({"command": "rename", "old_path": PATH, "new_path": "/memories/trips/2026.md"})
    assert not moved.is_error, moved.content
    assert a.last_read(PATH) is None and a.last_read("/memories/trips/2026.md") == sha256_of("tea\n")
    other = MemoryFileTool(files, {"scope": SCOPE})
    await other.run({"command": "str_replace", "path": "/memories/trips/2026.md", "old_str": "tea", "new_str": "mate"})
    refused = await a.run({"command": "delete", "path": "/memories/trips/2026.md"})
    assert refused.is_error and "changed since it was read" in refused.content
    await a.run({"command": "view", "path": "/memories/trips/2026.md"})
    assert not (await a.run({"command": "delete", "path": "/memories/trips/2026.md"})).is_error
    assert a.last_read("/memories/trips/2026.md") is None
    # a directory's rename and delete carry no checksum (a directory has none)
    await a.run({"command": "create", "path": "/memories/d/x.md", "file_text": "x"})
    assert not (await a.run({"command": "rename", "old_path": "/memories/d", "new_path": "/memories/e"})).is_error
    assert a.last_read("/memories/e/x.md") == sha256_of("x") and a.last_read("/memories/d/x.md") is None
    assert not (await a.run({"command": "delete", "path": "/memories/e"})).is_error


async def test_the_inputs_own_checksum_wins_and_the_access_observer_still_hears(files: MemoryFiles) -> None:
    heard: list[MemoryFileVersion] = []
    a = MemoryFileTool(files, {"scope": SCOPE, "observe": heard.append})
    await a.run({"command": "create", "path": PATH, "file_text": "tea\n"})
    wrong = await a.run(
        {"command": "str_replace", "path": PATH, "old_str": "tea", "new_str": "coffee", "expected_sha256": "0" * 64}
    )
    assert wrong.is_error and "changed since it was read" in wrong.content
    right = await a.run(json.dumps({"command": "insert", "path": PATH, "insert_line": 0, "insert_text": "# Drinks"}))
    assert not right.is_error, right.content
    assert [v.path for v in heard] == [PATH, PATH] and heard[-1].sha256 == a.last_read(PATH)


async def test_it_answers_as_run_memory_tool_does(files: MemoryFiles) -> None:
    a = MemoryFileTool(files, {"scope": SCOPE})
    assert (await a.run("{not json")).content == "Error: The tool input is not valid JSON"
    assert (await a.run([1, 2])).is_error
    reserved = await a.run({"command": "create", "path": "/memories/observations/ana.md", "file_text": "x"})
    assert reserved.is_error and "kept by memory itself" in reserved.content
    outside = await a.run({"command": "str_replace", "path": "/etc/passwd", "old_str": "a", "new_str": "b"})
    assert outside.is_error and "/memories" in outside.content
    assert await a.index() == ""
    await a.run({"command": "create", "path": PATH, "file_text": "tea\n"})
    assert PATH in await a.index()
    with pytest.raises(InvalidArgumentError, match="files"):
        MemoryFileTool(object(), {"scope": SCOPE})  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="access"):
        MemoryFileTool(files, {"scope": {}})
