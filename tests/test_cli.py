"""The ``cogitator-memory`` command line, on real SQLite files.

Most tests call ``main(argv)`` in-process for speed; the error kinds, the environment variable,
``python -m cogitator_memory`` and the installed console script also run as real processes.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import pytest

from cogitator_memory import EntryRedaction, MemoryEntry, SQLiteAdapter, Thread, ToolCall, frozen_clock, unwrap
from cogitator_memory.cli import build_parser, main
from cogitator_memory.cli.commands import parse_meta
from cogitator_memory.cli.formats import CliError
from cogitator_memory.cli.render import ASCII, UNICODE, short_ids
from cogitator_memory.context import from_openai_messages

T = TypeVar("T")
PREFIX = "cogitator-memory: error: "
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _no_db_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("COGITATOR_MEMORY_DB", raising=False)
    monkeypatch.delenv("COGITATOR_CONFIG", raising=False)
    monkeypatch.setenv("COGITATOR_HOME", str(tmp_path / "home"))  # the default store, never the real one
    monkeypatch.setenv("COLUMNS", "100")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


def on_store(path: Path, work: Callable[[SQLiteAdapter], Awaitable[T]]) -> T:
    """Run ``work`` on a connected store of ``path`` (tests are sync because main() runs its own loop)."""

    async def go() -> T:
        async with SQLiteAdapter(path=path) as store:
            return await work(store)

    return asyncio.run(go())


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_error_line(code: int, err: str, *needles: str) -> None:
    assert code != 0
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(PREFIX), err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def tree_of(path: Path, thread_id: str) -> tuple[Thread, list[MemoryEntry]]:
    async def read(store: SQLiteAdapter) -> tuple[Thread, list[MemoryEntry]]:
        thread = unwrap(await store.get_thread(thread_id))
        assert thread is not None
        entries = unwrap(await store.get_entries(thread_id=thread_id, types="all", include_tool_calls=True))
        return thread, entries

    return on_store(path, read)


def canonical(thread: Thread, entries: list[MemoryEntry]) -> dict[str, Any]:
    """A thread's tree without ids: parent by position, content, times, the active leaf."""
    position = {e.id: i for i, e in enumerate(entries)}
    rows = []
    for e in entries:
        dumped = e.dump()
        for key in ("id", "thread_id", "parent_id", "seq"):
            dumped.pop(key, None)
        event = dumped.get("event") or {}
        for key in ("first_kept_entry_id", "target_id"):  # entries an event names, by position
            if event.get(key) in position:
                event[key] = ("entry at", position[event[key]])
        rows.append((position.get(e.parent_id) if e.parent_id else None, dumped))
    return {
        "agent_id": thread.agent_id,
        "metadata": thread.metadata,
        "created_at": thread.created_at,
        "updated_at": thread.updated_at,
        "active": position[thread.active_leaf_id] if thread.active_leaf_id else None,
        "rows": rows,
    }


# --- demo ---------------------------------------------------------------------------------


def test_demo_writes_a_branch_and_a_fork_and_prints_the_tree(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = cli(capsys, "demo")
    assert (code, err) == (0, "")
    default = tmp_path / "home" / "memory.db"
    assert default.exists(), "the default store: memory.db in $COGITATOR_HOME (~/.cogitator)"
    assert not (tmp_path / "cogitator-memory.db").exists(), "nothing in the current folder"
    assert f"Wrote a demo conversation to {default}.\n" in out
    thread, entries = tree_of(default, "demo-trip")
    assert len(entries) == 9
    leaves = [e for e in entries if e.id not in {x.parent_id for x in entries}]
    assert len(leaves) == 2
    path = on_store(default, lambda s: s.get_path(thread_id="demo-trip", types="all")).unwrap()
    assert [e.id for e in path][-1] == thread.active_leaf_id
    off_path = [e for e in entries if e.id not in {p.id for p in path}]
    assert len(off_path) == 1 and off_path[0].message is not None and "Vatican" in off_path[0].message.text
    assert any(e.type == "label" for e in path), "an event on the active path"
    fork, fork_entries = tree_of(default, "demo-trip-vatican")
    assert fork.metadata["forked_from"]["thread_id"] == "demo-trip"
    assert thread.metadata["memory_forks"] == ["demo-trip-vatican"]
    assert [e.message.text for e in fork_entries if e.message][-2].startswith("Let's do the Vatican plan")

    tails = short_ids(e.id for e in entries)
    lines = out.splitlines()
    tree = [line for line in lines if any(line.startswith(f"  {t}  ") for t in tails.values())]
    assert len(tree) >= 9
    alternative = next(line for line in tree if tails[off_path[0].id] in line)
    assert "└─○ assistant" in alternative, "the branch off the active path is drawn and marked"
    leaf_line = next(line for line in tree if tails[thread.active_leaf_id or ""] in line)
    assert leaf_line.endswith("◀ active leaf") and "● assistant" in leaf_line
    assert any("● event" in line and "label: plan v1" in line for line in tree), "events shown as events"
    assert '→ get_weather(city="Rome", day="Saturday")' in out
    assert "Thread demo-trip-vatican" in out and "cogitator-memory show demo-trip" in out
    assert all(len(line) <= 100 for line in lines[1:]), "lines fit the terminal width (the store's path is not cut)"
    assert "--db" not in out, "no --db in the hints when the default file is used"


def test_demo_runs_twice_and_replaces_its_own_threads(capsys: pytest.CaptureFixture[str], db: Path) -> None:
    assert cli(capsys, "demo", "--db", str(db))[0] == 0
    first, _ = tree_of(db, "demo-trip")
    code, out, _ = cli(capsys, "demo", "--db", str(db))
    assert code == 0 and "earlier run" in out
    assert f"--db {db}" in out
    second, entries = tree_of(db, "demo-trip")
    assert second.active_leaf_id != first.active_leaf_id and len(entries) == 9
    page = on_store(db, lambda s: s.list_threads()).unwrap()
    assert sorted(t.id for t in page.threads) == ["demo-trip", "demo-trip-vatican"]
    titles = {t.id: t.metadata.get("title") for t in page.threads}
    assert titles["demo-trip"] != titles["demo-trip-vatican"], "the fork is told apart from its origin"
    assert "cogitator-memory search dinner --user ada --agent travel-agent" in out
    code, found, _ = cli(capsys, "search", "dinner", "--user", "ada", "--agent", "travel-agent", "--db", str(db))
    assert code == 0 and "Where should we have dinner?" in found, "the hint the demo prints finds something"


def test_demo_leaves_a_thread_that_is_not_its_own(capsys: pytest.CaptureFixture[str], db: Path) -> None:
    on_store(db, lambda s: s.create_thread("mine", {"note": "keep"}, thread_id="demo-trip")).unwrap()
    code, _, err = cli(capsys, "demo", "--db", str(db))
    assert_one_error_line(code, err, "demo-trip", "--db")
    thread, entries = tree_of(db, "demo-trip")
    assert thread.metadata == {"note": "keep"} and entries == []


# --- threads ------------------------------------------------------------------------------


def _seed_threads(db: Path) -> None:
    async def seed(store: SQLiteAdapter) -> None:
        for i in range(5):
            with frozen_clock(datetime(2026, 1, 1, 12, i, tzinfo=UTC)):
                meta = {"n": i % 2, "tag": "odd" if i % 2 else "even"}
                unwrap(await store.create_thread("alpha" if i < 3 else "beta", meta, thread_id=f"t{i}"))
        with frozen_clock(datetime(2026, 1, 1, 13, tzinfo=UTC)):
            unwrap(await store.create_thread("beta", {"n": "1"}, thread_id="t-text"))

    on_store(db, seed)


def test_threads_lists_newest_first_and_filters(capsys: pytest.CaptureFixture[str], db: Path) -> None:
    _seed_threads(db)
    code, out, _ = cli(capsys, "threads", "--db", str(db), "--json")
    assert code == 0
    data = json.loads(out)
    assert [t["id"] for t in data["threads"]] == ["t-text", "t4", "t3", "t2", "t1", "t0"]
    assert data["next_cursor"] is None
    _, out, _ = cli(capsys, "threads", "--db", str(db), "--json", "--agent", "alpha")
    assert [t["id"] for t in json.loads(out)["threads"]] == ["t2", "t1", "t0"]
    _, out, _ = cli(capsys, "threads", "--db", str(db), "--json", "--meta", "n=1")
    assert [t["id"] for t in json.loads(out)["threads"]] == ["t3", "t1"], "1 is the number, not the text"
    _, out, _ = cli(capsys, "threads", "--db", str(db), "--json", "--meta", 'n="1"')
    assert [t["id"] for t in json.loads(out)["threads"]] == ["t-text"]
    _, out, _ = cli(
        capsys, "threads", "--db", str(db), "--json", "--meta", "tag=odd", "--meta", "n=1", "--agent", "beta"
    )
    assert [t["id"] for t in json.loads(out)["threads"]] == ["t3"]
    _, out, _ = cli(capsys, "threads", "--db", str(db), "--agent", "nobody")
    assert out.strip() == f"No threads match in {db}."


def test_threads_pages_with_the_printed_cursor(capsys: pytest.CaptureFixture[str], db: Path) -> None:
    _seed_threads(db)
    seen: list[str] = []
    cursor: str | None = None
    while True:
        argv = ["threads", "--db", str(db), "--json", "--limit", "2"] + (["--cursor", cursor] if cursor else [])
        data = json.loads(cli(capsys, *argv)[1])
        seen += [t["id"] for t in data["threads"]]
        cursor = data["next_cursor"]
        if cursor is None:
            break
    assert seen == ["t-text", "t4", "t3", "t2", "t1", "t0"]

    code, out, _ = cli(capsys, "threads", "--db", str(db), "--limit", "4", "--agent", "alpha", "--limit", "2")
    lines = out.splitlines()
    assert code == 0 and lines[0].split() == ["THREAD", "AGENT", "UPDATED", "METADATA"]
    assert [line.split()[0] for line in lines[1:3]] == ["t2", "t1"]
    more = lines[-1]
    assert more.startswith("More threads: cogitator-memory threads --agent alpha --limit 2 --cursor ")
    next_argv = more.removeprefix("More threads: cogitator-memory ").split()
    _, out, _ = cli(capsys, *next_argv)
    assert [line.split()[0] for line in out.splitlines()[1:]] == ["t0"]


def test_meta_values_are_json_when_they_parse() -> None:
    assert parse_meta(["a=1", "b=true", "c=ada", 'd="2"', "e=[1, 2]", "f=NaN", "g=", "h=a=b"]) == {
        "a": 1,
        "b": True,
        "c": "ada",
        "d": "2",
        "e": [1, 2],
        "f": "NaN",
        "g": "",
        "h": "a=b",
    }
    with pytest.raises(CliError, match="KEY=VALUE"):
        parse_meta(["novalue"])


# --- show ---------------------------------------------------------------------------------


def test_show_prints_every_branch_with_the_active_path_marked(capsys: pytest.CaptureFixture[str], db: Path) -> None:
    cli(capsys, "demo", "--db", str(db))
    thread, entries = tree_of(db, "demo-trip")
    code, out, _ = cli(capsys, "show", "demo-trip", "--db", str(db))
    assert code == 0
    assert out.splitlines()[0] == "Thread demo-trip · agent travel-agent · 9 entries on 2 branches"
    assert out.count("●") - out.count("● active path") == 8 and out.count("○") - 1 == 1
    for entry in entries:
        assert short_ids(e.id for e in entries)[entry.id] in out

    code, out, _ = cli(capsys, "show", "demo-trip", "--db", str(db), "--json")
    data = json.loads(out)
    path = on_store(db, lambda s: s.get_path(thread_id="demo-trip", types="all")).unwrap()
    assert data["active_path"] == [e.id for e in path]
    assert [e["id"] for e in data["entries"]] == [e.id for e in entries]
    assert data["thread"]["active_leaf_id"] == thread.active_leaf_id

    code, out, _ = cli(capsys, "show", "demo-trip", "--db", str(db), "--path", "--full")
    body = out.split("\n\n", 1)[1]
    assert "Vatican" not in body and "end the day in Trastevere." in body
    assert body.splitlines()[0].split() == ["system", "You", "are", "a", "concise", "travel", "assistant."]


def test_show_draws_a_deep_thread_without_recursion(capsys: pytest.CaptureFixture[str], db: Path) -> None:
    async def deep(store: SQLiteAdapter) -> None:
        unwrap(await store.create_thread("a", thread_id="deep"))
        for i in range(1500):
            unwrap(await store.add_entry({"thread_id": "deep", "message": {"role": "user", "content": f"m{i}"}}))

    on_store(db, deep)
    code, out, _ = cli(capsys, "show", "deep", "--db", str(db))
    assert code == 0 and out.count("●") == 1501 and "m1499  ◀ active leaf" in out


def test_show_falls_back_to_ascii_when_the_terminal_cannot_draw(db: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONIOENCODING": "ascii", "COLUMNS": "90"}
    run = subprocess.run(
        [sys.executable, "-m", "cogitator_memory", "demo", "--db", str(db)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    assert run.stderr == ""
    assert "`-o assistant" in run.stdout and "<- active leaf" in run.stdout
    assert "24 ?C" in run.stdout, "text the terminal cannot show prints as ?"
    assert ASCII.on != UNICODE.on


# --- import -------------------------------------------------------------------------------

OPENAI_CHAT = [
    {"role": "developer", "content": "Be brief."},
    {
        "role": "user",
        "name": "ada",
        "content": [
            {"type": "text", "text": "What is this, and the weather in Paris?"},
            {"type": "image_url", "image_url": {"url": "https://example.com/cat.png", "detail": "low"}},
        ],
    },
    {
        "role": "assistant",
        "content": None,
        "refusal": None,
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
            {"id": "call_2", "type": "function", "function": {"name": "lookup", "arguments": "{not json"}},
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "rain, 12 °C"},
    {"role": "tool", "tool_call_id": "call_2", "content": "failed"},
    {"role": "assistant", "content": "A cat. Paris: rain."},
]


def test_import_converts_openai_messages_and_tool_calls(
    capsys: pytest.CaptureFixture[str], db: Path, tmp_path: Path
) -> None:
    source = tmp_path / "chat.json"
    source.write_text(json.dumps({"messages": OPENAI_CHAT}), encoding="utf-8")
    code, out, err = cli(capsys, "import", str(source), "--db", str(db), "--json")
    assert (code, err) == (0, "")
    result = json.loads(out)
    assert result["entries"] == 6 and result["created"] is True and result["agent_id"] == "cli"
    thread, entries = tree_of(db, result["thread_id"])
    assert thread.id.startswith("thread_") and thread.active_leaf_id == entries[-1].id
    assert [e.parent_id for e in entries] == [None, *(e.id for e in entries[:-1])], "one chain, in order"
    messages = [e.message for e in entries]
    assert all(m is not None for m in messages)
    assert [m.role for m in messages if m] == ["system", "user", "assistant", "tool", "tool", "assistant"]
    assert [e.type for e in entries] == ["message", "message", "message", "tool_result", "tool_result", "message"]
    user = messages[1]
    assert user is not None and user.name == "ada" and user.text == "What is this, and the weather in Paris?"
    assert user.model_dump()["content"][1]["image_url"] == {"url": "https://example.com/cat.png", "detail": "low"}
    calls = messages[2].tool_calls if messages[2] else None
    assert calls == [
        ToolCall(id="call_1", name="get_weather", arguments={"city": "Paris"}),
        ToolCall(id="call_2", name="lookup", arguments={}, argument_error="{not json"),
    ]
    tool = messages[3]
    assert tool is not None and (tool.tool_call_id, tool.name, tool.content) == ("call_1", "get_weather", "rain, 12 °C")
    assert all(e.token_count > 0 for e in entries)


def test_import_jsonl_and_stdin_append_to_a_named_thread(
    capsys: pytest.CaptureFixture[str], db: Path, tmp_path: Path
) -> None:
    first = tmp_path / "a.jsonl"
    first.write_text('{"role": "user", "content": "one"}\n\n{"role": "assistant", "content": "two"}\n', "utf-8")
    code, out, _ = cli(capsys, "import", str(first), "--db", str(db), "--thread", "chat", "--agent", "bot")
    assert code == 0 and "Imported 2 entries into thread chat (a new thread of agent bot)" in out
    # a JSONL file without the extension is recognised too
    second = tmp_path / "b.txt"
    second.write_text('{"role": "user", "content": "three"}\n{"role": "assistant", "content": "four"}\n', "utf-8")
    # branch off first, so appending must go after the active leaf, not after the newest entry
    on_store(db, lambda s: _checkout_first(s, "chat"))
    code, out, _ = cli(capsys, "import", str(second), "--db", str(db), "--thread", "chat")
    assert code == 0 and "end of the active branch" in out
    run = subprocess.run(
        [sys.executable, "-m", "cogitator_memory", "import", "-", "--thread", "chat", "--db", str(db)],
        input='[{"role": "user", "content": "five"}]',
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    thread, entries = tree_of(db, "chat")
    path = on_store(db, lambda s: s.get_path(thread_id="chat")).unwrap()
    assert [e.message.text for e in path if e.message] == ["one", "three", "four", "five"]
    assert len(entries) == 5 and thread.agent_id == "bot"


def test_import_dates_chat_messages_when_they_were_said(
    capsys: pytest.CaptureFixture[str], db: Path, tmp_path: Path
) -> None:
    source = tmp_path / "may.json"
    source.write_text(json.dumps([{"role": "user", "content": "booked the cabin"}]), "utf-8")
    code, _out, err = cli(
        capsys, "import", str(source), "--db", str(db), "--thread", "may", "--created-at", "2024-05-08T13:56"
    )
    assert code == 0, err
    _thread, entries = tree_of(db, "may")
    assert [e.created_at.isoformat() for e in entries] == ["2024-05-08T13:56:00+00:00"]
    for value, needle in (("2999-01-01", "future"), ("next May", "ISO 8601")):
        code, _out, err = cli(capsys, "import", str(source), "--db", str(db), "--thread", "bad", "--created-at", value)
        assert code != 0 and needle in err, err
        assert on_store(db, lambda s: s.get_thread("bad")).unwrap() is None
    exported = tmp_path / "export.json"
    code, _out, err = cli(capsys, "export", "may", "--db", str(db), "--out", str(exported))
    assert code == 0, err
    code, _out, err = cli(
        capsys, "import", str(exported), "--db", str(db), "--thread", "copy", "--created-at", "2024-05-09"
    )
    assert_one_error_line(code, err, "--created-at", "keep their own times")


async def _checkout_first(store: SQLiteAdapter, thread_id: str) -> None:
    entries = unwrap(await store.get_entries(thread_id=thread_id))
    unwrap(await store.checkout(thread_id, entries[0].id))


def test_import_refuses_another_agents_thread_and_writes_nothing(
    capsys: pytest.CaptureFixture[str], db: Path, tmp_path: Path
) -> None:
    source = tmp_path / "chat.json"
    source.write_text(json.dumps(OPENAI_CHAT), encoding="utf-8")
    on_store(db, lambda s: s.create_thread("alice", thread_id="t")).unwrap()
    code, _, err = cli(capsys, "import", str(source), "--db", str(db), "--thread", "t", "--agent", "bob")
    assert_one_error_line(code, err, "alice", "bob")
    assert tree_of(db, "t")[1] == []


@pytest.mark.parametrize(
    ("messages", "needle"),
    [
        ([{"role": "bot", "content": "x"}], "bad.json: messages[0].role: must be one of"),
        (
            [{"role": "user", "content": "x"}, {"role": "tool", "content": "x"}],
            "messages[1].tool_call_id: a tool message",
        ),
        ([{"role": "user", "content": [{"type": "input_audio"}]}], "messages[0].content[0]: has type 'input_audio'"),
        ([{"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "f"}}]}], "needs an id"),
        ([{"role": "assistant", "function_call": {"name": "f"}}], "legacy function_call"),
        ([], "holds no messages"),
        (["hello"], "messages[0]: must be an object"),
        ({"threads": []}, "expected a list of messages"),
    ],
)
def test_import_names_the_bad_message_and_writes_nothing(
    capsys: pytest.CaptureFixture[str], db: Path, tmp_path: Path, messages: Any, needle: str
) -> None:
    source = tmp_path / "bad.json"
    source.write_text(json.dumps(messages), encoding="utf-8")
    code, _, err = cli(capsys, "import", str(source), "--db", str(db))
    assert_one_error_line(code, err, needle)
    assert not db.exists(), "the file is checked before the store is opened"


def test_openai_arguments_that_are_not_an_object_are_kept_as_text() -> None:
    entries = from_openai_messages(
        [
            {
                "role": "assistant",
                "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "f", "arguments": "[1, 2]"}},
                    {"id": "b", "type": "function", "function": {"name": "g", "arguments": ""}},
                    {"id": "c", "name": "h", "arguments": {"k": 1}},
                ],
            }
        ],
        thread_id="t",
    )
    assert entries[0].message is not None
    assert entries[0].message.tool_calls == [
        ToolCall(id="a", name="f", arguments={}, argument_error="[1, 2]"),
        ToolCall(id="b", name="g", arguments={}),
        ToolCall(id="c", name="h", arguments={"k": 1}),
    ]


# --- export and import of a whole tree ----------------------------------------------------


async def _rich_tree(store: SQLiteAdapter) -> None:
    """Branches, every event type, tool data, a redaction, a spliced-out entry, a non-latest active leaf."""
    t = "rich"
    with frozen_clock(datetime(2026, 3, 1, 9, tzinfo=UTC)):
        unwrap(await store.create_thread("planner", {"topic": "trip", "n": 1}, thread_id=t))

    async def add(entry: dict[str, Any], minute: int) -> MemoryEntry:
        with frozen_clock(datetime(2026, 3, 1, 10, minute, tzinfo=UTC)):
            return unwrap(await store.add_entry({"thread_id": t, **entry}))

    root = await add({"message": {"role": "system", "content": "sys"}}, 0)
    await add({"type": "model_change", "event": {"model": "m2", "previous_model": "m1"}}, 1)
    ask = await add({"message": {"role": "user", "name": "ada", "content": "secret plan"}, "metadata": {"k": 1}}, 2)
    call = await add(
        {
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": "calling"}, {"type": "image_url", "image_url": {"url": "u"}}],
                "tool_calls": [{"id": "c1", "name": "search", "arguments": {"q": "rome"}}],
            }
        },
        3,
    )
    await add(
        {
            "type": "tool_result",
            "message": {"role": "tool", "tool_call_id": "c1", "name": "search", "content": "found"},
            "tool_results": [{"call_id": "c1", "name": "search", "result": {"hits": 3}}],
        },
        4,
    )
    gone = await add({"type": "approval", "event": {"approved": True, "tool_call_id": "c1"}}, 5)
    await add({"message": {"role": "assistant", "content": "answer A"}, "token_count": 77}, 6)
    await add({"type": "compaction", "event": {"summary": "s", "tokens_before": 10, "first_kept_entry_id": call.id}}, 7)
    branch = await add({"parent_id": call.id, "activate": False, "message": {"role": "assistant", "content": "B"}}, 8)
    await add({"parent_id": branch.id, "type": "interrupt", "event": {"reason": "pause"}, "activate": False}, 8)
    await add(
        {"parent_id": branch.id, "type": "custom", "event": {"name": "x", "data": {"a": [1]}}, "activate": False}, 9
    )
    late = await add({"parent_id": root.id, "activate": False, "message": {"role": "user", "content": "C"}}, 9)
    await add(
        {"parent_id": late.id, "activate": False, "type": "label", "event": {"label": "here", "target_id": late.id}}, 9
    )
    unwrap(await store.redact_entry(ask.id, EntryRedaction(at=datetime(2026, 3, 2, tzinfo=UTC), reason="pii")))
    unwrap(await store.delete_entry(gone.id))
    unwrap(await store.checkout(t, branch.id))


def test_export_then_import_gives_the_same_tree(capsys: pytest.CaptureFixture[str], db: Path, tmp_path: Path) -> None:
    on_store(db, _rich_tree)
    original = canonical(*tree_of(db, "rich"))
    assert len(original["rows"]) == 12 and original["active"] is not None

    code, out, _ = cli(capsys, "export", "rich", "--db", str(db))
    assert code == 0
    document = json.loads(out)
    assert document["format"] == "cogitator-memory/thread" and document["version"] == 1
    assert document["thread"]["id"] == "rich" and len(document["entries"]) == 12
    assert {e.get("parent_id") for e in document["entries"]} >= {None}

    saved = tmp_path / "rich.json"
    code, out, _ = cli(capsys, "export", "rich", "--db", str(db), "--out", str(saved))
    assert code == 0 and "Exported thread rich (12 entries)" in out

    other = tmp_path / "other.db"
    code, out, _ = cli(capsys, "import", str(saved), "--db", str(other))
    assert code == 0 and "into thread rich (a new thread of agent planner)" in out
    assert canonical(*tree_of(other, "rich")) == original, "same shape, records, times and active leaf"
    compactions = [e for e in tree_of(other, "rich")[1] if e.type == "compaction"]
    assert [e.event.first_kept_entry_id for e in compactions] == [  # type: ignore[union-attr]
        e.id for e in tree_of(other, "rich")[1] if e.message is not None and e.message.tool_calls
    ], "the compaction names the imported copy of its first kept entry"

    code, _, err = cli(capsys, "import", str(saved), "--db", str(db))
    assert_one_error_line(code, err, "rich already exists", "--thread")
    code, _, _ = cli(capsys, "import", str(saved), "--db", str(db), "--thread", "copy")
    assert code == 0 and canonical(*tree_of(db, "copy")) == original

    # and round again: the export of the copy holds the same tree
    code, out, _ = cli(capsys, "export", "copy", "--db", str(db))
    again = json.loads(out)
    assert _without_ids(again["entries"]) == _without_ids(document["entries"])


def _without_ids(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Exported entries without their ids; an entry an event names is given by its position."""
    position = {e["id"]: i for i, e in enumerate(entries)}
    out = []
    for e in entries:
        row = {k: v for k, v in e.items() if k not in ("id", "parent_id", "thread_id", "seq")}
        event = dict(row.get("event") or {})
        for key in ("first_kept_entry_id", "target_id"):
            if event.get(key) in position:
                event[key] = ("entry at", position[event[key]])
        if event:
            row["event"] = event
        out.append(row)
    return out


def test_an_export_imported_into_an_existing_thread_hangs_under_its_active_leaf(
    capsys: pytest.CaptureFixture[str], db: Path, tmp_path: Path
) -> None:
    cli(capsys, "demo", "--db", str(db))
    saved = tmp_path / "demo.json"
    cli(capsys, "export", "demo-trip-vatican", "--db", str(db), "--out", str(saved))
    before, _ = tree_of(db, "demo-trip")
    code, _, _ = cli(capsys, "import", str(saved), "--db", str(db), "--thread", "demo-trip")
    assert code == 0
    thread, entries = tree_of(db, "demo-trip")
    assert len(entries) == 9 + 7
    added = entries[9:]
    assert added[0].parent_id == before.active_leaf_id
    path = on_store(db, lambda s: s.get_path(thread_id="demo-trip")).unwrap()
    assert path[-1].id == thread.active_leaf_id == added[-1].id


def test_a_failed_import_takes_back_what_it_wrote(capsys: pytest.CaptureFixture[str], db: Path, tmp_path: Path) -> None:
    on_store(db, _rich_tree)
    saved = tmp_path / "rich.json"
    cli(capsys, "export", "rich", "--db", str(db), "--out", str(saved))
    document = json.loads(saved.read_text("utf-8"))
    # the 3rd entry carries a value the store refuses (NaN is not JSON): two entries are written first
    text = json.dumps(document).replace('"k": 1', '"k": NaN')
    assert "NaN" in text
    saved.write_text(text, "utf-8")
    code, _, err = cli(capsys, "import", str(saved), "--db", str(db), "--thread", "copy")
    assert_one_error_line(code, err, "metadata")
    assert on_store(db, lambda s: s.get_thread("copy")).unwrap() is None, "the new thread is gone again"

    before = canonical(*tree_of(db, "rich"))
    code, _, err = cli(capsys, "import", str(saved), "--db", str(db), "--thread", "rich")
    assert_one_error_line(code, err, "metadata")
    assert canonical(*tree_of(db, "rich")) == before, "an existing thread is left as it was"


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        (lambda d: d["entries"][1].update(parent_id="nope"), "names parent nope"),
        (lambda d: d["entries"][1].update(id=d["entries"][0]["id"]), "appears twice"),
        (lambda d: d["entries"][0].update(type="label"), "entries[1]"),
        (lambda d: d["thread"].update(active_leaf_id="nope"), "active leaf nope"),
        (lambda d: d.update(version=9), "version 9"),
        (lambda d: d["thread"].pop("agent_id"), "thread.agent_id"),
    ],
)
def test_a_broken_export_file_is_refused_before_writing(
    capsys: pytest.CaptureFixture[str], db: Path, tmp_path: Path, change: Callable[[dict[str, Any]], Any], needle: str
) -> None:
    cli(capsys, "demo", "--db", str(db))
    saved = tmp_path / "demo.json"
    cli(capsys, "export", "demo-trip", "--db", str(db), "--out", str(saved))
    document = json.loads(saved.read_text("utf-8"))
    change(document)
    saved.write_text(json.dumps(document), "utf-8")
    fresh = tmp_path / "fresh.db"
    code, _, err = cli(capsys, "import", str(saved), "--db", str(fresh))
    assert_one_error_line(code, err, needle)
    assert not fresh.exists()


# --- errors -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "needles", "status"),
    [
        (["import", "{tmp}/missing.json"], ["cannot read", "missing.json", "no such file"], 1),
        (["import", "{tmp}/bad.json"], ["bad.json: invalid JSON at line 1, column 2"], 1),
        (["import", "{tmp}"], ["is a folder"], 1),
        (["show", "nope"], ["thread not found: nope"], 1),
        (["export", "nope"], ["thread not found: nope"], 1),
        (["threads", "--limit", "x"], ["argument --limit", "'x'"], 2),
        (["threads", "--limit", "0"], ["argument --limit", "1 to 1000"], 2),
        (["threads", "--cursor", "abc"], ["cursor"], 1),
        (["threads", "--meta", "x"], ["--meta", "KEY=VALUE"], 2),
        (["show"], ["THREAD"], 2),
        (["bogus"], ["invalid choice: 'bogus'"], 2),
        (["export", "demo-trip", "--out", "{tmp}/no/such/dir/x.json"], ["cannot write"], 1),
    ],
)
def test_user_errors_are_one_line_in_process(
    capsys: pytest.CaptureFixture[str], db: Path, tmp_path: Path, argv: list[str], needles: list[str], status: int
) -> None:
    cli(capsys, "demo", "--db", str(db))
    (tmp_path / "bad.json").write_text("{bad", "utf-8")
    code, out, err = cli(capsys, *[a.replace("{tmp}", str(tmp_path)) for a in argv], "--db", str(db))
    assert code == status and out == ""
    assert_one_error_line(code, err, *needles)


def test_a_missing_or_foreign_database_is_an_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = tmp_path / "none.db"
    code, _, err = cli(capsys, "threads", "--db", str(missing))
    assert_one_error_line(code, err, "no database at", "demo")
    assert not missing.exists(), "reading commands never create the file"
    junk = tmp_path / "junk.db"
    junk.write_text("not a database " * 100, "utf-8")
    code, _, err = cli(capsys, "show", "x", "--db", str(junk))
    assert_one_error_line(code, err, "not a database")


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cogitator_memory", *argv],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONIOENCODING": "utf-8", **env},
        cwd=cwd,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("argv", "needle", "status"),
    [
        (["import", "missing.json"], "cannot read missing.json: no such file", 1),
        (["import", "bad.json"], "bad.json: invalid JSON", 1),
        (["show", "nope"], "thread not found: nope", 1),
        (["threads", "--limit", "many"], "argument --limit", 2),
        (["threads", "--db", "junk.db"], "not a database", 1),
    ],
)
def test_user_errors_are_one_line_in_a_real_process(tmp_path: Path, argv: list[str], needle: str, status: int) -> None:
    db = tmp_path / "env.db"
    env = {"COGITATOR_MEMORY_DB": str(db)}
    assert _run(["demo"], env, tmp_path).returncode == 0
    (tmp_path / "bad.json").write_text("{bad", "utf-8")
    (tmp_path / "junk.db").write_text("junk " * 200, "utf-8")
    run = _run(argv, env, tmp_path)
    assert run.returncode == status
    assert run.stdout == ""
    assert_one_error_line(run.returncode, run.stderr, needle)


def test_the_environment_names_the_file_and_db_wins(tmp_path: Path) -> None:
    env_db, flag_db = tmp_path / "env.db", tmp_path / "flag.db"
    run = _run(["demo"], {"COGITATOR_MEMORY_DB": str(env_db)}, tmp_path)
    assert run.returncode == 0 and env_db.exists() and not (tmp_path / "cogitator-memory.db").exists()
    run = _run(["--db", str(flag_db), "threads"], {"COGITATOR_MEMORY_DB": str(env_db)}, tmp_path)
    assert run.returncode == 1 and "no database at" in run.stderr, "--db before the command wins too"
    run = _run(["threads", "--json"], {"COGITATOR_MEMORY_DB": str(env_db)}, tmp_path)
    assert [t["id"] for t in json.loads(run.stdout)["threads"]] == ["demo-trip-vatican", "demo-trip"]


def test_the_console_script_runs(tmp_path: Path) -> None:
    script = Path(sys.executable).parent / ("cogitator-memory.exe" if os.name == "nt" else "cogitator-memory")
    assert script.exists(), "the package is installed with its console script"
    run = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stdout.startswith("cogitator-memory ")
    run = subprocess.run(
        [str(script), "show", "x", "--db", str(tmp_path / "x.db")], capture_output=True, text=True, timeout=60
    )
    assert_one_error_line(run.returncode, run.stderr, "no database")


def test_no_command_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys)
    assert code == 0 and "demo" in out and "threads" in out and "export" in out
    code, out, _ = cli(capsys, "import", "--help")
    assert code == 0 and "--thread" in out


def test_every_command_is_documented() -> None:
    docs = (ROOT / "docs" / "cli.md").read_text("utf-8")
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    assert commands is not None
    for name, sub in commands.items():  # type: ignore[union-attr]
        assert f"## `{name}" in docs, f"docs/cli.md has no section for {name}"
        for action in sub._actions:
            for flag in action.option_strings:
                if flag.startswith("--") and flag != "--help":
                    assert flag in docs, f"docs/cli.md does not mention {name} {flag}"
