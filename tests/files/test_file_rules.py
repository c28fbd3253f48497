"""MemoryFiles' rules beyond the tool's texts: limits and traversal, read-only and reserved paths,
locking by SHA-256, scopes and places, put, history, index, redaction, the tool definitions, and
how a change meets another writer (made again on what stands, taken back when files end up under
files), with a store that lets a second writer in at the worst moment."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import pytest

from cogitator_memory import InMemoryAdapter, clock
from cogitator_memory.errors import InvalidArgumentError
from cogitator_memory.files import (
    MAX_CHANGE_BYTES,
    MAX_FILE_BYTES,
    REDACTED_TEXT,
    FileAccess,
    MemoryFileError,
    MemoryFiles,
    MemoryFileVersion,
    memory_function_tool,
    native_memory_tool,
    place_on_branch,
    run_memory_tool,
)
from cogitator_memory.files.paths import sha256_of
from cogitator_memory.files.service import UNSET
from cogitator_memory.result import MemoryResult, unwrap

AGENT = "concierge"
ANA: dict[str, Any] = {"scope": {"agent_id": AGENT, "user_id": "ana"}}
BO: dict[str, Any] = {"scope": {"agent_id": AGENT, "user_id": "bo"}}
SHARED: dict[str, Any] = {"scope": {"agent_id": AGENT}}


@pytest.fixture
async def memory() -> AsyncIterator[InMemoryAdapter]:
    async with InMemoryAdapter() as store:
        yield store


@pytest.fixture
def files(memory: InMemoryAdapter) -> MemoryFiles:
    return MemoryFiles(adapter=memory)


async def refused(files: MemoryFiles, access: Any, **command: Any) -> str:
    with pytest.raises(MemoryFileError) as caught:
        await files.run(access, command)
    return str(caught.value)


async def create(files: MemoryFiles, path: str, text: str, access: Any = ANA) -> str:
    return await files.run(access, {"command": "create", "path": path, "file_text": text})


# --- paths ----------------------------------------------------------------------------------

ESCAPES = [
    "/memories/../etc/passwd",
    "/memories/notes/../../etc/passwd",
    "/memories/..",
    "/memories/./a.md",
    "/memories/%2e%2e/etc/passwd",
    "/memories/%2E%2E%2Fetc",
    "/memories/%252e%252e/etc",
    "/memories/a%2fb.md",
    "/memories/a%5c..%5cb",
    "/memories/a\\..\\b",
    "/memories/\uff0e\uff0e/etc",  # fullwidth full stops
    "/memories/\u2025/etc",  # two dot leader
    "/memories/a\u2215..\u2215b",  # division slash
    "/memories/a\uff0fb",  # fullwidth solidus
    "/memories/...",
    "/\uff4demories/a.md",  # a fullwidth m: NFKC makes it /memories, so it is a disguise
]


@pytest.mark.parametrize("path", ESCAPES)
async def test_traversal_never_leaves_memories(files: MemoryFiles, memory: InMemoryAdapter, path: str) -> None:
    for command in (
        {"command": "create", "path": path, "file_text": "x"},
        {"command": "view", "path": path},
        {"command": "rename", "old_path": "/memories/a.md", "new_path": path},
    ):
        with pytest.raises(MemoryFileError) as caught:
            await files.run(ANA, command)
        assert (
            str(caught.value)
            == f"Path {path.encode('unicode_escape').decode() if not path.isprintable() else path} would escape /memories directory"
        )
    assert unwrap(await memory.query_file_versions({"within": {"agent_id": AGENT}})) == []


@pytest.mark.parametrize("path", ["/etc/passwd", "memories/a.md", "/memoriesX/a", "/Memories/a", "~/memories", "/"])
async def test_paths_outside_memories(files: MemoryFiles, path: str) -> None:
    assert await refused(files, ANA, command="create", path=path, file_text="x") == (
        f"Path must start with /memories, got: {path}"
    )


async def test_names_control_characters_and_nul(files: MemoryFiles) -> None:
    assert await refused(files, ANA, command="create", path="/memories/a\nb.md", file_text="x") == (
        "Error: The path /memories/a\\nb.md holds a control character; names cannot hold them"
    )
    assert await refused(files, ANA, command="create", path="/memories/a\x00b", file_text="x") == (
        "Error: The path /memories/a\\x00b holds a NUL character"
    )
    long_name = "n" * 256
    assert await refused(files, ANA, command="create", path=f"/memories/{long_name}", file_text="x") == (
        f"Error: The path /memories/{long_name} has a name longer than 255 characters"
    )
    assert (
        await create(files, f"/memories/{'n' * 255}", "fits") == f"File created successfully at: /memories/{'n' * 255}"
    )
    assert await refused(files, ANA, command="create", path="/memories//x.md", file_text="x") == (
        "Error: The path /memories//x.md has an empty name in it"
    )
    assert await refused(files, ANA, command="create", path="/memories/x.md", file_text="a\x00b") == (
        "Error: Parameter `file_text` holds a NUL character, which memory files cannot hold"
    )


async def test_unicode_names_are_one_file_whatever_the_normal_form(files: MemoryFiles) -> None:
    await create(files, "/memories/caf\u00e9.md", "composed")
    assert await refused(files, ANA, command="create", path="/memories/cafe\u0301.md", file_text="decomposed") == (
        "Error: File /memories/cafe\u0301.md already exists".replace("cafe\u0301", "caf\u00e9")
    )
    assert [f.path for f in await files.list(ANA)] == ["/memories/caf\u00e9.md"]


async def test_file_and_change_sizes(files: MemoryFiles, memory: InMemoryAdapter) -> None:
    full = "x" * MAX_FILE_BYTES
    await create(files, "/memories/full.md", full)
    over = await refused(files, ANA, command="create", path="/memories/over.md", file_text=full + "x")
    assert over == (
        f"Error: /memories/over.md would hold {MAX_FILE_BYTES + 1} bytes, and a memory file holds at most "
        f"{MAX_FILE_BYTES} bytes (1 MiB). Split it into smaller files."
    )
    grown = await refused(files, ANA, command="str_replace", path="/memories/full.md", old_str="xxxxx", new_str="yy")
    assert grown.startswith("No replacement was performed. Multiple occurrences")
    await files.put(ANA, "/memories/full.md", "head\n" + "x" * (MAX_FILE_BYTES - 6))
    message = await refused(files, ANA, command="insert", path="/memories/full.md", insert_line=0, insert_text="more")
    assert message.startswith(f"Error: /memories/full.md would hold {MAX_FILE_BYTES + 5} bytes")
    assert "é" * 2 and len(("é" * (MAX_FILE_BYTES // 2 + 1)).encode()) > MAX_FILE_BYTES
    two_byte = await refused(
        files, ANA, command="create", path="/memories/e.md", file_text="é" * (MAX_FILE_BYTES // 2 + 1)
    )
    assert "bytes" in two_byte, "the limit counts bytes of UTF-8, not characters"
    for n in range(9):
        await create(files, f"/memories/big/{n}.md", "z" * MAX_FILE_BYTES)
    before = unwrap(await memory.query_file_versions({"within": {"agent_id": AGENT}}))
    moved = await refused(files, ANA, command="rename", old_path="/memories/big", new_path="/memories/huge")
    assert moved == (
        f"Error: The change would write {9 * MAX_FILE_BYTES} bytes, and one change writes at most "
        f"{MAX_CHANGE_BYTES} bytes (8 MiB). Move fewer files at a time."
    )
    assert unwrap(await memory.query_file_versions({"within": {"agent_id": AGENT}})) == before, "nothing moved"


async def test_a_file_of_more_than_999999_lines_is_not_shown(files: MemoryFiles) -> None:
    await create(files, "/memories/lines.md", "\n" * 999_999)
    assert await refused(files, ANA, command="view", path="/memories/lines.md") == (
        "File /memories/lines.md exceeds maximum line limit of 999,999 lines."
    )
    await files.put(ANA, "/memories/lines.md", "\n" * 999_998)
    assert (await files.run(ANA, {"command": "view", "path": "/memories/lines.md"})).endswith("999999\t")


# --- read-only and reserved -------------------------------------------------------------------


async def test_read_only_refuses_every_change_and_still_views(files: MemoryFiles) -> None:
    await create(files, "/memories/a.md", "a")
    reader = {**ANA, "read_only": True}
    for command, path in (
        ({"command": "create", "path": "/memories/b.md", "file_text": "b"}, "/memories/b.md"),
        ({"command": "str_replace", "path": "/memories/a.md", "old_str": "a", "new_str": "b"}, "/memories/a.md"),
        ({"command": "insert", "path": "/memories/a.md", "insert_line": 0, "insert_text": "b"}, "/memories/a.md"),
        ({"command": "delete", "path": "/memories/a.md"}, "/memories/a.md"),
        ({"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/c.md"}, "/memories/a.md"),
    ):
        with pytest.raises(MemoryFileError) as caught:
            await files.run(reader, command)
        assert str(caught.value) == f"Error: Memory is read-only here, so {path} cannot be changed."
    with pytest.raises(MemoryFileError):
        await files.put(reader, "/memories/a.md", "z")
    assert (await files.run(reader, {"command": "view", "path": "/memories/a.md"})).endswith("     1\ta")


async def test_reserved_paths_are_viewed_but_not_changed(files: MemoryFiles) -> None:
    await create(files, "/memories/playbook.md", "rules", access=SHARED)
    await create(files, "/memories/observations/ana.md", "Ana", access=SHARED)
    await create(files, "/memories/notes.md", "n")
    keeper = {**ANA, "reserved": ["/memories/playbook.md", "/memories/observations/"]}
    cases = [
        (
            {"command": "str_replace", "path": "/memories/playbook.md", "old_str": "rules", "new_str": "x"},
            "/memories/playbook.md",
        ),
        (
            {"command": "create", "path": "/memories/observations/bo.md", "file_text": "x"},
            "/memories/observations/bo.md",
        ),
        ({"command": "delete", "path": "/memories/observations"}, "/memories/observations/ana.md"),
        (
            {"command": "rename", "old_path": "/memories/notes.md", "new_path": "/memories/playbook.md/x"},
            "/memories/playbook.md/x",
        ),
        (
            {"command": "rename", "old_path": "/memories/notes.md", "new_path": "/memories/observations/n.md"},
            "/memories/observations/n.md",
        ),
        (
            {"command": "rename", "old_path": "/memories/playbook.md", "new_path": "/memories/p.md"},
            "/memories/playbook.md",
        ),
    ]
    for command, path in cases:
        with pytest.raises(MemoryFileError) as caught:
            await files.run(keeper, command)
        assert str(caught.value) == f"{path} is kept by memory itself and is read-only here.", command
    assert (await files.run(keeper, {"command": "view", "path": "/memories/playbook.md"})).endswith("     1\trules")
    assert "observations/" in await files.run(keeper, {"command": "view", "path": "/memories"})
    await files.run(keeper, {"command": "str_replace", "path": "/memories/notes.md", "old_str": "n", "new_str": "m"})


# --- locking and observing --------------------------------------------------------------------


async def test_expected_sha256_and_observe(files: MemoryFiles) -> None:
    heard: list[MemoryFileVersion] = []
    access = {**ANA, "observe": heard.append}
    await files.run(access, {"command": "create", "path": "/memories/plan.md", "file_text": "a\nb\n"})
    first = heard[-1]
    assert (first.sequence, first.sha256) == (1, sha256_of("a\nb\n"))
    await files.run(access, {"command": "view", "path": "/memories/plan.md"})
    assert heard[-1].id == first.id, "a view tells of the version shown"
    await files.run(ANA, {"command": "str_replace", "path": "/memories/plan.md", "old_str": "a", "new_str": "A"})
    stale = {
        "command": "str_replace",
        "path": "/memories/plan.md",
        "old_str": "b",
        "new_str": "B",
        "expected_sha256": first.sha256,
    }
    assert await refused(files, access, **stale) == (
        "Error: The file /memories/plan.md changed since it was read. View it again and try again."
    )
    for command in (
        {"command": "insert", "path": "/memories/plan.md", "insert_line": 0, "insert_text": "x"},
        {"command": "delete", "path": "/memories/plan.md"},
        {"command": "rename", "old_path": "/memories/plan.md", "new_path": "/memories/p.md"},
    ):
        assert (await refused(files, access, **command, expected_sha256=first.sha256)).endswith(
            "View it again and try again."
        )
    await files.run(access, {"command": "view", "path": "/memories/plan.md"})
    fresh = heard[-1]
    await files.run(access, {**stale, "expected_sha256": fresh.sha256})
    assert (heard[-1].sequence, heard[-1].content) == (3, "A\nB\n")

    async def slow_listener(version: MemoryFileVersion) -> None:
        heard.append(version)

    await files.run(
        {**ANA, "observe": slow_listener},
        {"command": "rename", "old_path": "/memories/plan.md", "new_path": "/memories/p.md"},
    )
    assert (heard[-1].path, heard[-1].renamed_from) == ("/memories/p.md", "/memories/plan.md"), (
        "a rename tells of the moved file"
    )


# --- scopes and places -------------------------------------------------------------------------


async def test_scopes_narrowest_first_and_writes_stand_in_front(files: MemoryFiles, memory: InMemoryAdapter) -> None:
    await create(files, "/memories/house.md", "Quiet hours at 22h.", access=SHARED)
    assert [f.content for f in await files.list(ANA)] == ["Quiet hours at 22h."], "a user sees the shared file"
    await files.run(ANA, {"command": "str_replace", "path": "/memories/house.md", "old_str": "22h", "new_str": "23h"})
    assert [f.content for f in await files.list(ANA)] == ["Quiet hours at 23h."]
    assert [f.content for f in await files.list(BO)] == ["Quiet hours at 22h."], "Ana's change is hers"
    assert [f.content for f in await files.list(SHARED)] == ["Quiet hours at 22h."]
    ana_version = (await files.list(ANA))[0].version
    assert (ana_version.scope.user_id, ana_version.sequence) == ("ana", 1)
    await files.run(BO, {"command": "delete", "path": "/memories/house.md"})
    assert await files.list(BO) == [], "Bo's deletion hides the shared file from Bo"
    assert [f.content for f in await files.list(SHARED)] == ["Quiet hours at 22h."]
    assert await files.run(BO, {"command": "create", "path": "/memories/house.md", "file_text": "mine"})
    assert [(v.sequence, v.content) for v in await files.history(BO, "/memories/house.md")] == [
        (1, "Quiet hours at 22h."),
        (1, None),
        (2, "mine"),
    ]
    # Writing shared files while reading a user's: a change goes where the version changed is.
    editor = {"scope": {"agent_id": AGENT}, "visible_to": {"agent_id": AGENT, "user_id": "ana"}}
    await files.run(
        editor, {"command": "insert", "path": "/memories/house.md", "insert_line": 0, "insert_text": "# House"}
    )
    assert (await files.list(ANA))[0].version.scope.user_id == "ana", "never shared wider than it was"
    await create(files, "/memories/rules.md", "r", access=editor)
    assert [f.path for f in await files.list(BO)] == ["/memories/house.md", "/memories/rules.md"]
    with pytest.raises(InvalidArgumentError, match=r"access\.visible_to"):
        await files.list(
            {"scope": {"agent_id": AGENT, "user_id": "ana"}, "visible_to": {"agent_id": AGENT, "user_id": "bo"}}
        )
    with pytest.raises(InvalidArgumentError, match=r"access\.scope\.agent_id"):
        await files.list({"scope": {"user_id": "ana"}})
    with pytest.raises(InvalidArgumentError, match=r"access\.author"):
        await files.list({**ANA, "author": "robot"})


async def test_a_version_written_on_a_branch_is_seen_on_that_branch_only(
    files: MemoryFiles, memory: InMemoryAdapter
) -> None:
    thread = unwrap(await memory.create_thread(AGENT, {"user_id": "ana"}))
    first = unwrap(await memory.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": "hi"}}))
    place = await place_on_branch(memory, thread.id)
    await create(files, "/memories/trip.md", "Lisbon", access={**ANA, "place": place})
    second = unwrap(await memory.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": "Porto!"}}))
    on_a = {**ANA, "place": await place_on_branch(memory, thread.id)}
    await files.run(
        on_a, {"command": "str_replace", "path": "/memories/trip.md", "old_str": "Lisbon", "new_str": "Porto"}
    )
    assert [f.content for f in await files.list(on_a)] == ["Porto"]
    unwrap(await memory.rewind(thread.id, first.id))
    unwrap(await memory.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": "Faro"}}))
    on_b = {**ANA, "place": await place_on_branch(memory, thread.id)}
    assert second.id not in on_b["place"].branch
    assert [f.content for f in await files.list(on_b)] == ["Lisbon"], "branch B does not see what branch A wrote"
    assert [f.content for f in await files.list(ANA)] == ["Porto"], "without a place, the newest stands"
    assert [f.content for f in await files.list({**ANA, "place": {"thread_id": "thread_other"}})] == ["Porto"]
    await files.run(
        on_b, {"command": "str_replace", "path": "/memories/trip.md", "old_str": "Lisbon", "new_str": "Faro"}
    )
    history = await files.history(ANA, "/memories/trip.md")
    assert [(v.sequence, v.content, v.place.entry_id if v.place else None) for v in history][-1][:2] == (3, "Faro")
    assert [v.content for v in await files.history(on_b, "/memories/trip.md")] == ["Lisbon", "Faro"]
    assert [f.content for f in await files.list(on_a)] == ["Porto"], "branch A still sees its own"


# --- put, read, history, index -----------------------------------------------------------------


async def test_put_with_and_without_expected_sha256(files: MemoryFiles) -> None:
    code = {**ANA, "author": "memory"}
    made = await files.put(code, "/memories/profile.md", "v1", expected_sha256=None)
    assert (made.sequence, made.author, made.content) == (1, "memory", "v1")
    with pytest.raises(MemoryFileError, match="already exists"):
        await files.put(code, "/memories/profile.md", "v1b", expected_sha256=None)
    with pytest.raises(MemoryFileError, match="changed since it was read"):
        await files.put(code, "/memories/profile.md", "v2", expected_sha256=sha256_of("something else"))
    second = await files.put(code, "/memories/profile.md", "v2", expected_sha256=made.sha256)
    assert (second.sequence, second.previous_id) == (2, made.id)
    same = await files.put(code, "/memories/profile.md", "v2")
    assert same.id == second.id, "the same text writes nothing"
    third = await files.put(code, "/memories/profile.md", "v3", UNSET)
    assert third.sequence == 3
    with pytest.raises(MemoryFileError, match="does not exist"):
        await files.put(code, "/memories/none.md", "x", expected_sha256=made.sha256)
    with pytest.raises(MemoryFileError, match="would escape"):
        await files.put(code, "/memories/../x", "x")
    found = await files.read(ANA, "/memories/profile.md")
    assert found is not None and (found.content, found.sha256, found.size) == ("v3", sha256_of("v3"), 2)
    assert await files.read(ANA, "/memories/none.md") is None


async def test_index_lists_what_a_run_sees(files: MemoryFiles) -> None:
    assert await files.index(ANA) == ""
    await create(files, "/memories/user.md", "Allergic to peanuts.")
    await create(files, "/memories/trips/lisbon.md", "x" * 2048)
    await create(files, "/memories/.scratch.md", "hidden")
    await create(files, "/memories/bo.md", "Bo's", access=BO)
    assert await files.index(ANA) == (
        "Memory files (read them with the memory tool's view command):\n"
        "2K\t/memories/trips/lisbon.md\n"
        "20B\t/memories/user.md"
    )


# --- redaction ---------------------------------------------------------------------------------


async def test_redact_reaches_renames_both_ways_and_every_scope_when_asked(
    files: MemoryFiles, memory: InMemoryAdapter
) -> None:
    await create(files, "/memories/passport.md", "P123")
    await files.run(
        ANA, {"command": "str_replace", "path": "/memories/passport.md", "old_str": "P123", "new_str": "P124"}
    )
    await files.run(ANA, {"command": "rename", "old_path": "/memories/passport.md", "new_path": "/memories/docs/id.md"})
    await files.run(ANA, {"command": "rename", "old_path": "/memories/docs", "new_path": "/memories/papers"})
    await create(files, "/memories/keep.md", "keep")
    await create(files, "/memories/papers/id.md", "Bo's P999", access=BO)
    done = await files.redact(ANA, ["/memories/docs/id.md"], "erasure request")
    assert sorted((v.path, v.sequence) for v in done) == [
        ("/memories/docs/id.md", 1),
        ("/memories/papers/id.md", 1),
        ("/memories/passport.md", 1),
        ("/memories/passport.md", 2),
    ]
    assert all(v.content == REDACTED_TEXT and v.redacted and v.redacted.reason == "erasure request" for v in done)
    every = unwrap(await memory.query_file_versions({"visible_to": ANA["scope"]}))
    texts = {v.content for v in every if not v.is_deletion}
    assert texts == {REDACTED_TEXT, "keep"}
    assert [f.content for f in await files.list(ANA)] == ["keep", REDACTED_TEXT]
    assert [f.content for f in await files.list(BO)] == ["Bo's P999"], "another user's scope is not reached"
    again = await files.redact(ANA, ["/memories/papers"], every_scope=True)
    assert [(v.scope.user_id, v.content) for v in again] == [("bo", REDACTED_TEXT)], "every scope of the agent"
    with pytest.raises(InvalidArgumentError, match=r"paths\[0\]"):
        await files.redact(ANA, ["/etc/passwd"])


# --- the tool ------------------------------------------------------------------------------------


async def test_tool_definitions_and_answers(files: MemoryFiles) -> None:
    assert native_memory_tool() == {"type": "memory_20250818", "name": "memory"}
    assert native_memory_tool(cache_control={"type": "ephemeral"})["cache_control"] == {"type": "ephemeral"}
    openai = memory_function_tool()
    assert openai["type"] == "function" and openai["function"]["name"] == "memory"
    schema = openai["function"]["parameters"]
    assert schema["properties"]["command"]["enum"] == ["view", "create", "str_replace", "insert", "delete", "rename"]
    assert schema["required"] == ["command"]
    assert set(memory_function_tool(format="anthropic")) == {"name", "description", "input_schema"}
    assert set(memory_function_tool(name="notes", format="json_schema")) == {"name", "description", "parameters"}
    with pytest.raises(InvalidArgumentError, match="format"):
        memory_function_tool(format="xml")  # type: ignore[arg-type]
    answer = await run_memory_tool(
        files, ANA, json.dumps({"command": "create", "path": "/memories/a.md", "file_text": "a"})
    )
    assert (answer.content, answer.is_error) == ("File created successfully at: /memories/a.md", False)
    answer = await run_memory_tool(files, ANA, {"command": "view", "path": "/memories/b.md"})
    assert (answer.content, answer.is_error) == (
        "The path /memories/b.md does not exist. Please provide a valid path.",
        True,
    )
    assert (await run_memory_tool(files, ANA, "{not json")).is_error
    assert (
        await run_memory_tool(files, FileAccess(scope={"agent_id": AGENT}), {"command": "view", "path": "/memories"})
    ).content.endswith("\t/memories")


# --- another writer at the worst moment ---------------------------------------------------------


async def raw_write(store: InMemoryAdapter, path: str, text: str | None, scope: dict[str, Any] = ANA["scope"]) -> None:
    """What another process's change adds once its own checks passed: the next version of a path,
    straight into the store (so it lands after this process's checks)."""
    heads = unwrap(await store.find_file_heads({"scope": scope, "paths": [path], "content": False}))
    version: dict[str, Any] = {
        "id": f"file_other{len(unwrap(await store.query_file_versions({'within': {'agent_id': AGENT}}))):06d}",
        "scope": scope,
        "path": path,
        "sequence": heads[0].sequence + 1 if heads else 1,
        "created_at": clock.now(),
    }
    if text is not None:
        version["content"] = text
    unwrap(await store.add_file_versions([version]))


Hook = Callable[[Sequence[MemoryFileVersion]], Awaitable[None]]


class Meddling:
    """A store that runs ``before`` ahead of the next ``times`` writes and ``after`` once one is kept."""

    def __init__(
        self, store: InMemoryAdapter, *, before: Hook | None = None, after: Hook | None = None, times: int = 1
    ) -> None:
        self.store, self.before, self.after, self.times = store, before, after, times
        self.provider = store.provider

    async def add_file_versions(self, versions: Sequence[Any]) -> MemoryResult[list[MemoryFileVersion]]:
        meddle = self.times > 0
        self.times -= 1
        if meddle and self.before is not None:
            await self.before(versions)
        result = await self.store.add_file_versions(versions)
        if meddle and result.success and self.after is not None:
            await self.after(versions)
        return result

    async def find_file_heads(self, flt: Any) -> MemoryResult[list[MemoryFileVersion]]:
        return await self.store.find_file_heads(flt)

    async def query_file_versions(self, flt: Any) -> MemoryResult[list[MemoryFileVersion]]:
        return await self.store.query_file_versions(flt)

    async def redact_file_versions(self, ids: Any, redaction: Any) -> MemoryResult[list[MemoryFileVersion]]:
        return await self.store.redact_file_versions(ids, redaction)


async def test_a_change_refused_by_the_store_is_made_again_on_what_stands(memory: InMemoryAdapter) -> None:
    plain = MemoryFiles(adapter=memory)
    await create(plain, "/memories/list.md", "milk\neggs\n")

    async def other_writer(_: Sequence[MemoryFileVersion]) -> None:
        await plain.run(
            ANA, {"command": "insert", "path": "/memories/list.md", "insert_line": 2, "insert_text": "bread"}
        )

    files = MemoryFiles(adapter=Meddling(memory, before=other_writer))  # type: ignore[arg-type]
    await files.run(
        ANA, {"command": "str_replace", "path": "/memories/list.md", "old_str": "milk", "new_str": "oat milk"}
    )
    assert [(v.sequence, v.content) for v in await plain.history(ANA, "/memories/list.md")] == [
        (1, "milk\neggs\n"),
        (2, "milk\neggs\nbread\n"),
        (3, "oat milk\neggs\nbread\n"),
    ], "the other writer's line is kept and the edit made on top"
    racing = MemoryFiles(adapter=Meddling(memory, before=other_writer, times=3))  # type: ignore[arg-type]
    assert await refused(
        racing, ANA, command="str_replace", path="/memories/list.md", old_str="eggs", new_str="EGGS"
    ) == ("Another writer changed the memory around /memories/list.md at the same time. View it again and try again.")
    sha = await plain.read(ANA, "/memories/list.md")
    assert sha is not None and "EGGS" not in sha.content
    locked = MemoryFiles(adapter=Meddling(memory, before=other_writer))  # type: ignore[arg-type]
    message = await refused(
        locked,
        ANA,
        command="str_replace",
        path="/memories/list.md",
        old_str="eggs",
        new_str="EGGS",
        expected_sha256=sha.sha256,
    )
    assert message == "Error: The file /memories/list.md changed since it was read. View it again and try again."


class _WriterBetweenReads(MemoryFiles):
    """A files service another writer beats to a new file: it writes the file between this
    service's first read (no file) and its second (what stands at and above the path)."""

    def __init__(self, memory: InMemoryAdapter, text: str) -> None:
        super().__init__(adapter=memory)
        self.memory, self.text, self.left = memory, text, 1

    async def _check_new_file(self, access: Any, path: str) -> Any:
        if self.left:
            self.left -= 1
            await raw_write(self.memory, path, self.text)
        return await super()._check_new_file(access, path)


async def test_a_new_file_another_writer_made_meanwhile_is_not_written_over(memory: InMemoryAdapter) -> None:
    """create, and put expecting no file, refuse when another writer made the file after their
    first read: they are not written over it as the file's next version (a lost update)."""
    plain = MemoryFiles(adapter=memory)
    files = _WriterBetweenReads(memory, "theirs")
    message = await refused(files, ANA, command="create", path="/memories/a.md", file_text="mine")
    assert "already exists" in message
    assert [v.content for v in await plain.history(ANA, "/memories/a.md")] == ["theirs"]
    files = _WriterBetweenReads(memory, "theirs too")
    with pytest.raises(MemoryFileError, match="already exists"):
        await files.put(ANA, "/memories/b.md", "mine", None)
    assert [v.content for v in await plain.history(ANA, "/memories/b.md")] == ["theirs too"]
    files = _WriterBetweenReads(memory, "theirs, and mine is the same")
    await files.put(ANA, "/memories/c.md", "mine")  # no expectation: the text goes over what stands
    assert [v.content for v in await plain.history(ANA, "/memories/c.md")] == ["theirs, and mine is the same", "mine"]


async def test_a_file_created_over_a_file_another_writer_made_is_taken_back(memory: InMemoryAdapter) -> None:
    plain = MemoryFiles(adapter=memory)

    async def other_writer(_: Sequence[MemoryFileVersion]) -> None:
        await raw_write(memory, "/memories/trip/day1.md", "Lisbon")

    files = MemoryFiles(adapter=Meddling(memory, after=other_writer))  # type: ignore[arg-type]
    assert await refused(
        files, ANA, command="create", path="/memories/trip", file_text="a file where a folder grew"
    ) == ("Another writer changed the memory around /memories/trip at the same time. View it again and try again.")
    assert [(v.sequence, v.content) for v in await plain.history(ANA, "/memories/trip")] == [
        (1, "a file where a folder grew"),
        (2, None),
    ], "withdrawn by a deletion on top, so the history stays whole"
    assert [f.path for f in await plain.list(ANA)] == ["/memories/trip/day1.md"]


async def test_a_rename_under_a_file_another_writer_made_is_taken_back(memory: InMemoryAdapter) -> None:
    plain = MemoryFiles(adapter=memory)
    await create(plain, "/memories/drafts/a.md", "A")
    await create(plain, "/memories/drafts/b.md", "B")

    async def other_writer(_: Sequence[MemoryFileVersion]) -> None:
        await raw_write(memory, "/memories/done", "a file where the folder goes")

    files = MemoryFiles(adapter=Meddling(memory, after=other_writer))  # type: ignore[arg-type]
    assert await refused(
        files, ANA, command="rename", old_path="/memories/drafts", new_path="/memories/done/drafts"
    ) == (
        "Another writer changed the memory around /memories/done/drafts at the same time. View it again and try again."
    )
    listed = {f.path: f.content for f in await plain.list(ANA)}
    assert listed == {
        "/memories/drafts/a.md": "A",
        "/memories/drafts/b.md": "B",
        "/memories/done": "a file where the folder goes",
    }
    assert [v.content for v in await plain.history(ANA, "/memories/drafts/a.md")] == ["A", None, "A"]
    assert [v.content for v in await plain.history(ANA, "/memories/done/drafts/a.md")] == ["A", None]


async def test_a_deletion_another_writer_built_on_is_kept_when_a_rename_is_taken_back(memory: InMemoryAdapter) -> None:
    plain = MemoryFiles(adapter=memory)
    await create(plain, "/memories/a.md", "A")

    async def other_writer(_: Sequence[MemoryFileVersion]) -> None:
        await raw_write(memory, "/memories/b.md/inner.md", "grew under the new name")
        await raw_write(memory, "/memories/a.md", "a new a.md")

    files = MemoryFiles(adapter=Meddling(memory, after=other_writer))  # type: ignore[arg-type]
    with pytest.raises(MemoryFileError, match=r"Another writer changed the memory around /memories/b\.md"):
        await files.run(ANA, {"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/b.md"})
    assert [v.content for v in await plain.history(ANA, "/memories/a.md")] == ["A", None, "a new a.md"]
    assert {f.path: f.content for f in await plain.list(ANA)} == {
        "/memories/a.md": "a new a.md",
        "/memories/b.md/inner.md": "grew under the new name",
    }
