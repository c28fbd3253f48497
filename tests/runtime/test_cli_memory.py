"""The memory commands of the CLI (search, remember, facts) on the configured store, any engine."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from cogitator_memory.cli import main, render
from cogitator_memory.cli.demo import DEMO_FORK, DEMO_THREAD
from cogitator_memory.runtime.memory import Memory
from cogitator_memory.testing.services import service_url


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("COGITATOR_HOME", str(tmp_path / "home"))
    file = tmp_path / "cogitator.yml"
    file.write_text(f"memory:\n  adapter: sqlite\n  path: {tmp_path / 'cli.db'}\n  embedding: {{provider: none}}\n")
    return file


def test_remember_then_facts_then_search(config_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = ("--config", str(config_file))
    code, out, _ = _run(capsys, "remember", "Alex", "--core-key", "user_name", "--user", "alex", *cfg)
    assert code == 0 and "(core fact user_name)" in out
    code, out, _ = _run(capsys, "facts", "--user", "alex", *cfg)
    assert (code, out) == (0, "user_name: Alex\n")
    code, out, _ = _run(capsys, "facts", "--user", "sam", "--json", *cfg)
    assert json.loads(out) == {"facts": {}}

    async def seed() -> None:
        async with Memory(
            {"adapter": "sqlite", "path": str(tmp_path / "cli.db"), "embedding": {"provider": "none"}}
        ) as m:
            await m.add([{"role": "user", "content": "The boiler is serviced every October."}], user_id="alex")

    asyncio.run(seed())
    code, out, _ = _run(capsys, "search", "boiler", "--user", "alex", "--json", *cfg)
    hits = json.loads(out)["results"]
    assert code == 0 and "boiler" in hits[0]["text"]
    code, out, _ = _run(capsys, "search", "boiler", "--user", "sam", *cfg)
    assert (code, out) == (0, "nothing found\n")
    # no --user: the shared memory, as the help says ("default: shared"); --every-user: everyone's
    code, out, _ = _run(capsys, "search", "boiler", *cfg)
    assert (code, out) == (0, "nothing found\n")
    code, out, _ = _run(capsys, "search", "boiler", "--every-user", "--json", *cfg)
    assert code == 0 and "boiler" in json.loads(out)["results"][0]["text"]
    code, out, _ = _run(capsys, "search", "boiler", "--user", "alex", "--kind", "fact", "--kind", "item", *cfg)
    assert (code, out) == (0, "nothing found\n")  # a turn, not a fact or an item
    code, _, err = _run(capsys, "search", "boiler", "--every-user", "--user", "alex", *cfg)
    assert code != 0 and "--every-user" in err


#: What a terminal acts on in stored text: a C1 CSI (U+009B), a C1 OSC (U+009D), DEL, a
#: right-to-left override and a left-to-right isolate.
HOSTILE = "Lisbon\x9b2J\x9d0;owned\x07\x7f \u202eevil\u2066"


def _assert_json_terminal_safe(out: str) -> Any:
    """``out`` is valid JSON holding no raw C1 control, DEL or bidirectional formatting character."""
    raw = [
        hex(ord(c)) for c in out if 0x7F <= ord(c) <= 0x9F or 0x202A <= ord(c) <= 0x202E or 0x2066 <= ord(c) <= 0x2069
    ]
    assert raw == [], f"raw terminal controls in --json output: {raw}"
    return json.loads(out)


def test_json_outputs_escape_c1_controls_and_bidi_overrides(
    config_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = ("--config", str(config_file))
    code, out, _ = _run(capsys, "remember", HOSTILE, "--core-key", "city", "--user", "alex", "--json", *cfg)
    assert code == 0
    saved = _assert_json_terminal_safe(out)
    assert saved["fact"] == saved["core_fact"]["value"] == HOSTILE, "the value is kept, escaped"
    code, out, _ = _run(capsys, "facts", "--user", "alex", "--json", *cfg)
    assert code == 0 and _assert_json_terminal_safe(out) == {"facts": {"city": HOSTILE}}
    assert "\\u009b" in out and "\\u202e" in out and "\\u2066" in out

    async def seed() -> None:
        async with Memory(
            {"adapter": "sqlite", "path": str(tmp_path / "cli.db"), "embedding": {"provider": "none"}}
        ) as m:
            await m.add([{"role": "user", "content": f"The boiler is in {HOSTILE}."}], user_id="alex")

    asyncio.run(seed())
    code, out, _ = _run(capsys, "search", "boiler", "--user", "alex", "--json", *cfg)
    hits = _assert_json_terminal_safe(out)["results"]
    assert code == 0 and HOSTILE in hits[0]["text"]
    # a lone surrogate, which no encoding writes, comes out escaped too (the same JSON value)
    text = render.json_text({"x": "a\ud800b"})
    assert "\\ud800" in text and json.loads(text.encode("utf-8").decode()) == {"x": "a\ud800b"}


def test_db_picks_a_sqlite_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "other.db"
    code, _, _ = _run(capsys, "remember", "Likes jazz", "--db", str(db))
    assert code == 0 and db.exists()


def test_the_default_store_is_in_the_home_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COGITATOR_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("COGITATOR_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    code, _, err = _run(capsys, "facts")
    assert code == 0, err
    assert (tmp_path / "home" / "memory.db").exists()


def test_a_redis_store_from_the_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = service_url("COGMEM_TEST_REDIS_URL")
    file = tmp_path / "redis.yml"
    file.write_text(
        f"memory:\n  adapter: redis\n  connection_string: {url}\n  options: {{key_prefix: 'cli{uuid.uuid4().hex[:6]}:'}}\n"
        "  embedding: {provider: none}\n"
    )
    code, out, _ = _run(capsys, "facts", "--config", str(file))
    assert (code, out.startswith("no core facts")) == (0, True)
    code, _, err = _run(capsys, "remember", "x", "--config", str(file))
    assert code == 1 and "knowledge graph is off" in err


@pytest.mark.parametrize(
    ("yaml", "words"),
    [
        ("memory:\n  adapter: sqlite\n  colour: blue\n", "'memory.colour': unknown key"),
        (
            "memory:\n  adapter: redis\n  connection_string: redis://127.0.0.1:1/0\n  options: {connect_timeout: 0.3}\n",
            "'memory.connection_string': cannot reach the redis store",
        ),
    ],
)
def test_bad_configs_are_one_line_naming_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], yaml: str, words: str
) -> None:
    file = tmp_path / "bad.yml"
    file.write_text(yaml)
    code, out, err = _run(capsys, "search", "x", "--config", str(file))
    assert code == 1 and out == ""
    assert err.startswith("cogitator-memory: error:") and words in err and err.count("\n") == 1


def test_bad_arguments_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "search", "x", "--limit", "0")
    assert code == 2 and "--limit" in err


def _store_config(tmp_path: Path, engine: str) -> Path:
    """A config naming a fresh namespace of ``engine`` (redis, mongodb, postgres or sqlite)."""
    tag = uuid.uuid4().hex[:8]
    if engine == "sqlite":
        body = f"  adapter: sqlite\n  path: {tmp_path / f'cli{tag}.db'}\n"
    elif engine == "redis":
        body = f"  adapter: redis\n  connection_string: {service_url('COGMEM_TEST_REDIS_URL')}\n"
        body += f"  options: {{key_prefix: 'cli{tag}:'}}\n"
    elif engine == "mongodb":
        body = f"  adapter: mongodb\n  connection_string: '{service_url('COGMEM_TEST_MONGODB_URL')}'\n"
        body += f"  options: {{database: cli{tag}}}\n"
    else:
        body = f"  adapter: postgres\n  connection_string: '{service_url('COGMEM_TEST_POSTGRES_URL')}'\n"
        body += f"  options: {{schema: cli{tag}}}\n"
    file = tmp_path / f"{engine}.yml"
    file.write_text(f"memory:\n{body}  embedding: {{provider: none}}\n")
    return file


@pytest.mark.parametrize("engine", ["redis", "mongodb"])
def test_threads_show_and_export_read_any_configured_store(
    engine: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = _store_config(tmp_path, engine)

    async def seed() -> None:
        async with Memory(str(file)) as memory:
            await memory.add(
                [{"role": "user", "content": "Where is my parcel?"}, {"role": "assistant", "content": "On its way."}],
                user_id="ana",
                thread_id="parcel",
            )

    asyncio.run(seed())
    code, out, err = _run(capsys, "threads", "--json", "--config", str(file))
    assert code == 0, err
    assert [t["id"] for t in json.loads(out)["threads"]] == ["parcel"]
    code, out, _ = _run(capsys, "show", "parcel", "--path", "--config", str(file))
    assert code == 0 and "Where is my parcel?" in out and "On its way." in out
    code, out, _ = _run(capsys, "export", "parcel", "--config", str(file))
    exported = json.loads(out)
    assert [e["message"]["content"] for e in exported["entries"]] == ["Where is my parcel?", "On its way."]
    code, _, err = _run(capsys, "show", "missing", "--config", str(file))
    assert code == 1 and "thread not found: missing" in err


def test_threads_without_config_still_read_the_sqlite_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "threads", "--db", str(tmp_path / "none.db"))
    assert code == 1 and "no database at" in err


# --- writing commands (demo, import, forget) on any configured store ----------------------------


def _tree(config: Path, thread_id: str) -> tuple[Any, list[tuple[str | None, str, str]]]:
    """The thread (None when missing) and its entries as (parent id, role, text), in seq order."""

    async def read() -> tuple[Any, list[tuple[str | None, str, str]]]:
        async with Memory(str(config)) as memory:
            thread = (await memory.adapter.get_thread(thread_id)).unwrap()
            if thread is None:
                return None, []
            entries = (await memory.adapter.get_entries(thread_id=thread_id, types="all")).unwrap()
            rows = [(e.parent_id, e.message.role, str(e.message.content)) for e in entries if e.message is not None]
            return thread, rows

    return asyncio.run(read())


@pytest.mark.parametrize("engine", ["redis", "mongodb", "postgres"])
def test_demo_import_and_forget_write_any_configured_store(
    engine: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _store_config(tmp_path, engine)
    cfg = ("--config", str(config))
    code, out, err = _run(capsys, "demo", *cfg)
    assert code == 0, err
    assert f"Wrote a demo conversation to the {engine} store of {config}" in out
    code, out, _ = _run(capsys, "threads", "--json", *cfg)
    assert {t["id"] for t in json.loads(out)["threads"]} == {DEMO_THREAD, DEMO_FORK}

    chat = tmp_path / "chat.jsonl"
    chat.write_text(
        "\n".join(json.dumps(m) for m in [{"role": "user", "content": "hola"}, {"role": "assistant", "content": "hi"}])
    )
    code, out, err = _run(capsys, "import", str(chat), "--thread", "imported", "--json", *cfg)
    assert code == 0, err
    assert json.loads(out)["entries"] == 2
    thread, rows = _tree(config, "imported")
    assert [r[1:] for r in rows] == [("user", "hola"), ("assistant", "hi")]
    assert thread.active_leaf_id is not None

    # an export of it goes back in, under the active leaf of an existing thread
    saved = tmp_path / "imported.json"
    assert _run(capsys, "export", "imported", "--out", str(saved), *cfg)[0] == 0
    code, _, err = _run(capsys, "import", str(saved), "--thread", "imported", *cfg)
    assert code == 0, err
    assert [r[2] for r in _tree(config, "imported")[1]] == ["hola", "hi", "hola", "hi"]

    code, out, err = _run(capsys, "forget", "thread", "imported", "--dry-run", *cfg)
    assert code == 0 and "Nothing was changed." in out, err
    assert _tree(config, "imported")[0] is not None
    code, out, err = _run(capsys, "forget", "thread", "imported", "--json", *cfg)
    assert code == 0, err
    assert json.loads(out)["threads"] == 1
    assert _tree(config, "imported")[0] is None


@pytest.mark.parametrize("engine", ["redis", "mongodb"])
def test_a_failed_import_into_a_configured_store_is_taken_back(
    engine: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _store_config(tmp_path, engine)
    cfg = ("--config", str(config))
    source = tmp_path / "source.json"
    source.write_text(json.dumps([{"role": "user", "content": f"turn {i}"} for i in range(4)]))
    assert _run(capsys, "import", str(source), "--thread", "source", *cfg)[0] == 0
    exported = tmp_path / "source-export.json"
    assert _run(capsys, "export", "source", "--out", str(exported), *cfg)[0] == 0
    document = json.loads(exported.read_text("utf-8"))
    # the 3rd entry carries metadata no store keeps (NaN is not JSON): two are written before it fails
    document["entries"][2]["metadata"] = {"k": 1}
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(document).replace('"k": 1', '"k": NaN'))
    good = tmp_path / "good.json"
    good.write_text(json.dumps([{"role": "user", "content": "kept"}, {"role": "assistant", "content": "as is"}]))

    code, _, err = _run(capsys, "import", str(bad), "--thread", "fresh", *cfg)
    assert code == 1 and "metadata" in err and "Traceback" not in err, err
    assert _tree(config, "fresh") == (None, []), "the thread the import created is gone again"

    assert _run(capsys, "import", str(good), "--thread", "kept", *cfg)[0] == 0
    before_thread, before_rows = _tree(config, "kept")
    code, _, err = _run(capsys, "import", str(bad), "--thread", "kept", *cfg)
    assert code == 1 and "metadata" in err, err
    after_thread, after_rows = _tree(config, "kept")
    assert after_rows == before_rows
    assert after_thread.active_leaf_id == before_thread.active_leaf_id


@pytest.mark.parametrize("engine", ["redis", "sqlite"])
def test_forget_user_on_a_configured_store_takes_their_core_facts_too(
    engine: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _store_config(tmp_path, engine)

    async def seed() -> None:
        async with Memory(str(config)) as memory:
            await memory.add([{"role": "user", "content": "I drink green tea."}], user_id="ana", thread_id="ana-1")
            await (await memory.core_facts(user_id="ana")).set("drink", "green tea")
            await (await memory.core_facts(user_id="bo")).set("drink", "coffee")

    async def facts() -> tuple[dict[str, str], dict[str, str]]:
        async with Memory(str(config)) as memory:
            return await memory.facts(user_id="ana"), await memory.facts(user_id="bo")

    asyncio.run(seed())
    assert asyncio.run(facts()) == ({"drink": "green tea"}, {"drink": "coffee"})
    code, out, err = _run(capsys, "forget", "user", "ana", "--json", "--config", str(config))
    assert code == 0, err
    assert json.loads(out)["threads"] == 1
    assert asyncio.run(facts()) == ({}, {"drink": "coffee"})
    assert _tree(config, "ana-1") == (None, [])


def test_forget_facts_takes_what_remember_saved_by_the_tools_rule(
    config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``forget facts QUERY`` is the forget tool (MCP, Python) on the command line: a fact
    ``remember`` saved can now be forgotten where it was saved, with the same refusals."""
    cfg = ("--config", str(config_file))
    for fact in ("Ada is vegetarian", *(f"Ada drinks {kind} tea" for kind in ("green", "black", "mint", "white"))):
        assert _run(capsys, "remember", fact, "--user", "ada", *cfg)[0] == 0
    code, out, _ = _run(capsys, "forget", "facts", "vegetarian", "--user", "ada", *cfg)
    assert (code, out) == (0, "Forgot 1 fact:\n  Ada is vegetarian\n")
    assert "vegetarian" not in _run(capsys, "recall", "vegetarian", "--user", "ada", *cfg)[1]
    code, out, _ = _run(capsys, "forget", "facts", "vegetarian", "--user", "bob", *cfg)  # another user's
    assert (code, out) == (0, "nothing matched 'vegetarian': no fact was deleted\n")
    # four of four: broad, nothing deleted without --all (exit status 1), then all of them
    code, out, _ = _run(capsys, "forget", "facts", "tea", "--user", "ada", *cfg)
    assert code == 1 and "Nothing was deleted" in out and "Ada drinks mint tea" in out and "--all" in out
    assert len(json.loads(_run(capsys, "recall", "tea", "--user", "ada", "--json", *cfg)[1])["results"]) == 4
    code, out, _ = _run(capsys, "forget", "facts", "tea", "--user", "ada", "--all", "--json", *cfg)
    assert code == 0 and json.loads(out)["forgotten"] == 4
    assert json.loads(_run(capsys, "recall", "tea", "--user", "ada", "--json", *cfg)[1])["results"] == []
    code, _, err = _run(capsys, "forget", "facts", "*", "--user", "ada", *cfg)
    assert code != 0 and "invalid argument 'query'" in err
