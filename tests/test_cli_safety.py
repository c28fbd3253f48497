"""The command line under stress: all-or-nothing imports (Ctrl-C and kill included), stored text
that tries to drive the terminal, deep retry chains, progress on long work, SDK-shaped files."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
import unicodedata
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import pytest

from cogitator_memory import MemoryEntry, SQLiteAdapter, Thread, frozen_clock, unwrap
from cogitator_memory.cli import main
from cogitator_memory.cli.formats import CliError, export_chunks, export_document
from cogitator_memory.cli.importing import import_messages
from cogitator_memory.cli.progress import Progress
from cogitator_memory.cli.render import ASCII, UNICODE, terminal_safe, tree_lines
from cogitator_memory.cli.store import CliStore
from cogitator_memory.context import from_openai_messages
from cogitator_memory.runtime.memory import Memory
from cogitator_memory.testing.services import service_url

T = TypeVar("T")
ROOT = Path(__file__).resolve().parent.parent
PREFIX = "cogitator-memory: error: "


@pytest.fixture(autouse=True)
def _plain_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("COGITATOR_MEMORY_DB", raising=False)
    monkeypatch.delenv("COGITATOR_CONFIG", raising=False)
    monkeypatch.setenv("COGITATOR_HOME", str(tmp_path / "home"))  # the default store, never the real one
    monkeypatch.setenv("COLUMNS", "100")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


def on_store(path: Path, work: Callable[[SQLiteAdapter], Awaitable[T]]) -> T:
    async def go() -> T:
        async with SQLiteAdapter(path=path) as store:
            return await work(store)

    return asyncio.run(go())


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def tree_of(path: Path, thread_id: str) -> tuple[Thread | None, list[MemoryEntry]]:
    async def read(store: SQLiteAdapter) -> tuple[Thread | None, list[MemoryEntry]]:
        thread = unwrap(await store.get_thread(thread_id))
        if thread is None:
            return None, []
        return thread, unwrap(await store.get_entries(thread_id=thread_id, types="all", include_tool_calls=True))

    return on_store(path, read)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "COGITATOR_MEMORY_DB"}
    env["PYTHONPATH"] = str(ROOT / "src")
    return env


def _big_chat(path: Path, count: int) -> Path:
    with path.open("w", encoding="utf-8") as out:
        for i in range(count):
            role = "user" if i % 2 == 0 else "assistant"
            out.write(json.dumps({"role": role, "content": f"message {i}: " + "words to store " * 8}) + "\n")
    return path


# --- item 6: an import is all or nothing -------------------------------------------------------


def _interruptible() -> None:
    """In the child: Ctrl-C as a terminal delivers it. A test run started in the background by a
    shell without job control (``cmd &``, as CI runners may) inherits SIGINT ignored, and Python
    then never raises KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start_import(db: Path, source: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "cogitator_memory", "import", str(source), "--db", str(db), "--progress", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
        preexec_fn=_interruptible,
    )


def _wait_mid_import(process: subprocess.Popen[str], total: int) -> int:
    """Read the progress lines until some entries are written (and not all); the count written."""
    assert process.stderr is not None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        if not line:
            break
        found = re.match(r"importing: ([\d,]+)/", line)
        if found and 0 < int(found.group(1).replace(",", "")) < total:
            return int(found.group(1).replace(",", ""))
    raise AssertionError(f"the import never reported progress part way (exit {process.poll()})")


async def _seed(store: SQLiteAdapter) -> None:
    unwrap(await store.create_thread("cli", {"keep": True}, thread_id="t"))
    for text in ("first", "second"):
        unwrap(await store.add_entry({"thread_id": "t", "message": {"role": "user", "content": text}}))


@pytest.mark.parametrize("existing", [False, True], ids=["new-thread", "existing-thread"])
def test_ctrl_c_stops_an_import_promptly_and_leaves_nothing(tmp_path: Path, db: Path, existing: bool) -> None:
    total = 40_000
    source = _big_chat(tmp_path / "big.jsonl", total)
    if existing:
        on_store(db, _seed)
    before = tree_of(db, "t") if existing else None
    started = time.monotonic()
    process = _start_import(db, source, "--thread", "t")
    written = _wait_mid_import(process, total)
    sent = time.monotonic()
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    stopped_after = time.monotonic() - sent
    assert process.returncode == 130, err
    assert f"{PREFIX}interrupted: nothing was imported" in err
    # the rest of the import would take about this long at the rate it wrote so far
    rest = (sent - started) * (total - written) / written
    assert stopped_after < max(2.0, rest / 2), f"Ctrl-C took {stopped_after:.1f}s; finishing would take ~{rest:.1f}s"
    assert tree_of(db, "t") == (before if existing else (None, []))


def test_a_killed_import_leaves_nothing(tmp_path: Path, db: Path) -> None:
    total = 40_000
    source = _big_chat(tmp_path / "big.jsonl", total)
    on_store(db, _seed)
    before = tree_of(db, "t")
    for thread_id in ("t", "fresh"):
        process = _start_import(db, source, "--thread", thread_id)
        _wait_mid_import(process, total)
        process.kill()
        process.communicate(timeout=60)
        assert process.returncode == -signal.SIGKILL
    assert tree_of(db, "t") == before
    assert tree_of(db, "fresh") == (None, [])
    assert on_store(db, lambda s: s.list_threads()).unwrap().threads == [before[0]]


def test_the_clean_up_of_a_failed_import_is_checked(db: Path) -> None:
    """A store whose writes cannot be rolled back: the failed import says what it left."""

    class NoTransactions(CliStore):
        @contextmanager
        def transaction(self) -> Iterator[None]:
            yield

    entries = from_openai_messages(
        [{"role": "user", "content": "one"}, {"role": "assistant", "content": "two"}], thread_id="t"
    )
    # the third entry carries a value no store keeps: the write fails after two were written
    bad = entries[1].model_copy(update={"metadata": {"n": float("nan")}})

    async def go() -> str:
        async with NoTransactions(path=db) as store:
            with pytest.raises(CliError) as caught:
                await import_messages(store, [*entries, bad], "t", None, Progress(enabled=False))
            return str(caught.value)

    message = asyncio.run(go())
    assert "was not fully taken back" in message and "thread t, which the import created, is still there" in message


def test_ctrl_c_stops_an_import_into_a_configured_store_and_takes_it_back(tmp_path: Path) -> None:
    """Redis has no transaction across writes: what the import wrote is deleted again."""
    tag = uuid.uuid4().hex[:8]
    config = tmp_path / "redis.yml"
    config.write_text(
        f"memory:\n  adapter: redis\n  connection_string: {service_url('COGMEM_TEST_REDIS_URL')}\n"
        f"  options: {{key_prefix: 'ctrlc{tag}:'}}\n  embedding: {{provider: none}}\n"
    )
    total = 40_000
    source = _big_chat(tmp_path / "big.jsonl", total)

    async def seed_and_read(seed: bool) -> tuple[Thread | None, list[MemoryEntry]]:
        async with Memory(str(config)) as memory:
            store = memory.adapter
            if seed:
                unwrap(await store.create_thread("cli", {"keep": True}, thread_id="t"))
                for text in ("first", "second"):
                    unwrap(await store.add_entry({"thread_id": "t", "message": {"role": "user", "content": text}}))
            thread = unwrap(await store.get_thread("t"))
            if thread is None:
                return None, []
            return thread, unwrap(await store.get_entries(thread_id="t", types="all"))

    before_thread, before_entries = asyncio.run(seed_and_read(True))
    assert before_thread is not None
    for thread_id in ("t", "fresh"):
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "cogitator_memory",
                "import",
                str(source),
                "--config",
                str(config),
                "--progress",
                "--thread",
                thread_id,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(),
            preexec_fn=_interruptible,
        )
        _wait_mid_import(process, total)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=120)
        assert process.returncode == 130, err
        assert f"{PREFIX}interrupted: nothing was imported" in err
    after_thread, after_entries = asyncio.run(seed_and_read(False))
    assert after_thread is not None and after_thread.active_leaf_id == before_thread.active_leaf_id
    assert after_entries == before_entries

    async def fresh_is_gone() -> bool:
        async with Memory(str(config)) as memory:
            return unwrap(await memory.adapter.get_thread("fresh")) is None

    assert asyncio.run(fresh_is_gone())


async def _linked_thread(store: SQLiteAdapter) -> None:
    with frozen_clock(datetime(2026, 5, 1, 9, tzinfo=UTC)):
        unwrap(await store.create_thread("planner", thread_id="src"))
        first = unwrap(await store.add_entry({"thread_id": "src", "message": {"role": "user", "content": "plan"}}))
        unwrap(
            await store.add_entry(
                {
                    "thread_id": "src",
                    "message": {"role": "assistant", "content": "done"},
                    "metadata": {"answers": first.id},
                }
            )
        )
        unwrap(
            await store.add_entry(
                {"thread_id": "src", "type": "label", "event": {"label": "v1", "target_id": first.id}}
            )
        )


def test_an_import_keeps_entry_ids_so_metadata_naming_them_stays_right(
    capsys: pytest.CaptureFixture[str], db: Path, tmp_path: Path
) -> None:
    on_store(db, _linked_thread)
    saved = tmp_path / "src.json"
    assert cli(capsys, "export", "src", "--db", str(db), "--out", str(saved))[0] == 0
    other = tmp_path / "other.db"
    assert cli(capsys, "import", str(saved), "--db", str(other))[0] == 0
    _, original = tree_of(db, "src")
    _, copied = tree_of(other, "src")
    assert [e.id for e in copied] == [e.id for e in original]
    answers = copied[1].metadata["answers"] if copied[1].metadata else None
    found = on_store(other, lambda s: s.get_entry(str(answers))).unwrap()
    assert found is not None and found.message is not None and found.message.text == "plan"
    # a copy beside the original cannot keep them: new ids, and the label names the copy
    assert cli(capsys, "import", str(saved), "--db", str(db), "--thread", "copy")[0] == 0
    _, again = tree_of(db, "copy")
    assert not {e.id for e in again} & {e.id for e in original}
    assert again[2].event is not None and getattr(again[2].event, "target_id", None) == again[0].id


# --- item 8: stored text never drives the terminal -----------------------------------------------

HOSTILE = (
    "title\x1b]0;pwned\x07 clear\x1b[2J\x1b[H link\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\ "
    "hide\x1b[8msecret\x1b[0m c1\x9b2J over\rwrite bell\x07 bidi\u202eevil\u202c iso\u2066x\u2069 nul\x00 del\x7f"
)


async def _hostile_thread(store: SQLiteAdapter) -> None:
    thread_id = "evil"
    unwrap(await store.create_thread("agent", {"note\x1b[2J": "v\x9bal\u202e"}, thread_id=thread_id))
    unwrap(await store.add_entry({"thread_id": thread_id, "message": {"role": "user", "content": HOSTILE}}))
    unwrap(
        await store.add_entry(
            {
                "thread_id": thread_id,
                "message": {
                    "role": "assistant",
                    "content": "line one\nline two\n\tindented\x1b[2J",
                    "tool_calls": [{"id": "c\x1b[1m", "name": "tool\x1b]0;t\x07", "arguments": {"q": "\x9b\u202e"}}],
                },
            }
        )
    )
    unwrap(await store.add_entry({"thread_id": thread_id, "type": "label", "event": {"label": "lab\x1b[2Jel"}}))
    # the store refuses control characters in ids now; a file written before may still hold them
    store.connection.execute("UPDATE threads SET agent_id = ? WHERE id = ?", ("agent\x1b]0;x\x07", thread_id))


def _unsafe(text: str) -> list[str]:
    """Characters a terminal would act on: controls other than newline, and bidi formatting."""
    bidi = {
        "\u061c",
        "\u200e",
        "\u200f",
        *(chr(c) for c in range(0x202A, 0x202F)),
        *(chr(c) for c in range(0x2066, 0x206A)),
    }
    return [c for c in text if (unicodedata.category(c) == "Cc" and c != "\n") or c in bidi]


def test_show_and_friends_escape_control_characters(capsys: pytest.CaptureFixture[str], db: Path) -> None:
    on_store(db, _hostile_thread)
    thread = "evil"
    outputs = {
        "tree": cli(capsys, "show", thread, "--db", str(db))[1],
        "path": cli(capsys, "show", thread, "--db", str(db), "--path")[1],
        "full": cli(capsys, "show", thread, "--db", str(db), "--full")[1],
        "json": cli(capsys, "show", thread, "--db", str(db), "--json")[1],
        "threads": cli(capsys, "threads", "--db", str(db))[1],
        "threads-json": cli(capsys, "threads", "--db", str(db), "--json")[1],
        "export": cli(capsys, "export", thread, "--db", str(db))[1],
    }
    for name, text in outputs.items():
        assert _unsafe(text) == [], f"{name} printed raw control characters"
    tree, full = outputs["tree"], outputs["full"]
    assert "title\\x1b]0;pwned\\x07" in tree
    assert "c1\\x9b2J" in full and "bidi\\u202eevil" in full and "over write" in full
    assert "nul\\x00" in full and "del\\x7f" in full
    assert "Thread evil" in tree and "agent agent\\x1b]0;x\\x07" in tree
    assert "tool\\x1b]0;t\\x07(" in outputs["full"] and "label: lab\\x1b[2Jel" in outputs["full"]
    # the active path keeps line breaks and tabs as layout, not as escapes
    path = outputs["path"].splitlines()
    at = next(i for i, line in enumerate(path) if "line one" in line)
    assert path[at + 1].strip() == "line two" and path[at + 2].strip().startswith("indented\\x1b[2J")
    assert path[at + 2].index("indented") > path[at + 1].index("line two"), "the tab is laid out as spaces"
    # JSON stays the same data, escaped
    data = json.loads(outputs["json"])
    assert data["thread"]["id"] == thread and data["entries"][0]["message"]["content"] == HOSTILE
    assert json.loads(outputs["export"])["thread"]["metadata"] == {"note\x1b[2J": "v\x9bal\u202e"}


def test_an_error_message_escapes_what_it_quotes(tmp_path: Path, db: Path) -> None:
    source = tmp_path / "chat.json"
    source.write_text(json.dumps([{"role": "bot\x1b]0;pwned\x07", "content": "x"}]), "utf-8")
    run = subprocess.run(
        [sys.executable, "-m", "cogitator_memory", "import", str(source), "--db", str(db)],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
    )
    assert run.returncode == 1 and _unsafe(run.stderr) == [] and "\\x1b]0;pwned" in run.stderr


def test_terminal_safe_is_idempotent_and_leaves_plain_text_alone() -> None:
    once = terminal_safe(HOSTILE)
    assert terminal_safe(once) == once and _unsafe(once) == []
    plain = "Grüße, 東京 🌍 — café ‍👩‍👩‍👧"
    assert terminal_safe(plain) == plain


# --- item 15: deep retry chains and progress ------------------------------------------------------


def _retry_chain(depth: int) -> tuple[Thread, list[MemoryEntry]]:
    """A chain where every answer was retried: each entry has two children, the newer one goes on."""
    now = datetime(2026, 1, 1, tzinfo=UTC)
    entries: list[MemoryEntry] = []
    parent: str | None = None
    seq = 0
    for level in range(depth):
        seq += 1
        failed = MemoryEntry(
            id=f"entry_dead{level:05d}",
            thread_id="t",
            parent_id=parent,
            seq=seq,
            created_at=now,
            message={"role": "assistant", "content": f"attempt {level} that was retried"},  # type: ignore[arg-type]
        )
        seq += 1
        kept = failed.model_copy(
            update={
                "id": f"entry_kept{level:05d}",
                "seq": seq,
                "message": failed.message.model_copy(update={"content": f"answer {level} kept"}),
            }  # type: ignore[union-attr]
        )
        entries += [failed, kept]
        parent = kept.id
    thread = Thread(id="t", agent_id="a", created_at=now, updated_at=now, active_leaf_id=parent)
    return thread, entries


@pytest.mark.parametrize("glyphs", [UNICODE, ASCII], ids=["unicode", "ascii"])
def test_a_200_deep_retry_chain_keeps_its_text_on_screen(glyphs: Any) -> None:
    thread, entries = _retry_chain(200)
    for width in (100, 60):
        lines = tree_lines(thread, entries, glyphs, width)
        assert len(lines) == 400
        assert max(len(line) for line in lines) <= width, "no line is wider than the terminal"
        for entry, line in zip(sorted(entries, key=lambda e: e.seq), lines, strict=False):
            assert entry.id[-6:] in line
        deepest = next(line for line in lines if "answer 199 kept" in line or "answer 19" in line)
        assert glyphs.ellipsis in lines[-1], "deep lines say that columns were folded"
        words = [line.split(glyphs.on if glyphs.on in line else glyphs.off, 1)[1] for line in lines]
        assert all(re.search(r"(attempt|answer) \d", w) for w in words), "every line shows the start of its text"
        assert deepest


def test_show_of_a_deep_chain_fits_the_terminal(capsys: pytest.CaptureFixture[str], db: Path) -> None:
    thread, entries = _retry_chain(200)

    async def write(store: SQLiteAdapter) -> None:
        unwrap(await store.create_thread("a", thread_id="t"))
        for entry in sorted(entries, key=lambda e: e.seq):
            new = {"thread_id": "t", "message": entry.message.dump(), "activate": False}  # type: ignore[union-attr]
            if entry.parent_id is not None:
                new["parent_id"] = entry.parent_id
            new["id"] = entry.id
            unwrap(await store.add_entry(new))
        unwrap(await store.checkout("t", str(thread.active_leaf_id)))

    on_store(db, write)
    code, out, _ = cli(capsys, "show", "t", "--db", str(db))
    assert code == 0
    assert max(len(line) for line in out.splitlines()) <= 100
    assert "answer 199 kept" in out


def test_export_chunks_are_the_indented_document(db: Path) -> None:
    on_store(db, _linked_thread)
    thread, entries = tree_of(db, "src")
    assert thread is not None
    for ascii_only in (False, True):
        text = "".join(export_chunks(thread, entries, ascii_only=ascii_only))
        document = export_document(thread, entries)
        document["exported_at"] = json.loads(text)["exported_at"]
        assert text == json.dumps(document, indent=2, ensure_ascii=ascii_only) + "\n"
    empty = "".join(export_chunks(thread, []))
    assert json.loads(empty)["entries"] == []


def test_progress_goes_to_stderr_only_when_asked_or_on_a_terminal(
    capsys: pytest.CaptureFixture[str], db: Path, tmp_path: Path
) -> None:
    source = _big_chat(tmp_path / "chat.jsonl", 50)
    code, out, err = cli(capsys, "import", str(source), "--db", str(db), "--thread", "t")
    assert code == 0 and err == "", "not a terminal and no flag: no progress"
    code, out, err = cli(capsys, "export", "t", "--db", str(db), "--progress")
    assert code == 0 and json.loads(out)["thread"]["id"] == "t", "stdout holds only the export"
    assert "exporting: 0/50 entries" in err and "exporting: 50/50 entries (100%), done in" in err
    code, out, err = cli(capsys, "show", "t", "--db", str(db), "--progress")
    assert code == 0 and "reading thread" not in out and "drawing: 50/50 entries (100%)" in err
    assert "reading thread t: 50 entries, done in" in err
    code, _, err = cli(capsys, "import", str(source), "--db", str(db), "--thread", "t", "--progress")
    assert "reading " in err and "importing: 50/50 entries (100%), done in" in err
    code, _, err = cli(capsys, "show", "t", "--db", str(db), "--no-progress")
    assert err == ""


def test_progress_redraws_one_line_on_a_terminal(tmp_path: Path, db: Path) -> None:
    import pty

    source = _big_chat(tmp_path / "big.jsonl", 15_000)
    controller, terminal = pty.openpty()
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "cogitator_memory", "import", str(source), "--db", str(db)],
            stdout=subprocess.PIPE,
            stderr=terminal,
            env=_env(),
        )
        os.close(terminal)
        seen = b""
        while True:
            try:
                chunk = os.read(controller, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
        out, _ = process.communicate(timeout=120)
    finally:
        os.close(controller)
    assert process.returncode == 0
    text = seen.decode()
    assert re.search(r"\rimporting: [\d,]+/15,000 entries \(\d+%\)\x1b\[K", text), text[:500]
    assert text.endswith("\r\x1b[K"), "the line is cleared at the end"
    assert "\n" not in text.replace("\r\n", ""), "no line of its own per update"
    assert b"Imported 15000 entries" in out


# --- item 12: the CLI reads what the SDKs produce ---------------------------------------------------


def test_import_reads_anthropic_messages(capsys: pytest.CaptureFixture[str], db: Path, tmp_path: Path) -> None:
    source = tmp_path / "claude.json"
    source.write_text(
        json.dumps(
            {
                "system": [{"type": "text", "text": "Be brief."}],
                "messages": [
                    {"role": "user", "content": "Weather in Paris?"},
                    {
                        "role": "assistant",
                        "content": [
                            {"type": "text", "text": "Checking."},
                            {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Paris"}},
                        ],
                    },
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "rain"}]},
                    {"role": "assistant", "content": "Rain."},
                ],
            }
        ),
        "utf-8",
    )
    code, _, err = cli(capsys, "import", str(source), "--db", str(db), "--thread", "c", "--json")
    assert code == 0, err
    _, entries = tree_of(db, "c")
    assert [e.message.role for e in entries if e.message] == ["system", "user", "assistant", "tool", "assistant"]
    assert entries[2].message is not None and entries[2].message.tool_calls is not None
    assert entries[3].type == "tool_result" and entries[3].message is not None and entries[3].message.name == "weather"
    code, _, err = cli(capsys, "import", str(source), "--db", str(db), "--format", "openai")
    assert code == 1 and "Anthropic's shape" in err


@pytest.mark.parametrize("bad", [["--agent", "a" * 300], ["--thread", "t" * 300], ["--agent", "\t"]])
def test_a_rejected_import_leaves_no_file_it_created(
    capsys: pytest.CaptureFixture[str], db: Path, tmp_path: Path, bad: list[str]
) -> None:
    messages = tmp_path / "chat.json"
    messages.write_text(json.dumps([{"role": "user", "content": "hi"}]))
    code, _, err = cli(capsys, "import", str(messages), "--db", str(db), *bad)
    assert code != 0 and err.startswith(PREFIX) and "invalid argument" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chat.json"]  # no memory.db, -wal or -shm
    # A file that was there before the rejected import stays, with what it held.
    assert cli(capsys, "import", str(messages), "--db", str(db), "--thread", "kept")[0] == 0
    code, _, _ = cli(capsys, "import", str(messages), "--db", str(db), *bad)
    assert code != 0 and db.exists()
    thread, entries = tree_of(db, "kept")
    assert thread is not None and len(entries) == 1
