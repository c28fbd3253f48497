"""One store for every command: with nothing naming one, ``demo``, ``threads``, ``search``,
``recall``, ``remember``, ``forget``, ``mcp`` and ``serve`` all work on SQLite at
``$COGITATOR_HOME/memory.db`` (``~/.cogitator/memory.db``), wherever they are started from, and
every ``--help`` names that default the same way (issue 35 item 2)."""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from cogitator_memory import Memory, SyncMemory
from cogitator_memory.cli import build_parser, main
from cogitator_memory.cli.where import CONFIG_HELP, DB_HELP, DEFAULT_STORE, command_config

TOKEN = "t" * 32


@pytest.fixture(autouse=True)
def _home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in ("COGITATOR_MEMORY_DB", "COGITATOR_CONFIG", "COGITATOR_MEMORY_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    monkeypatch.setenv("COGITATOR_HOME", str(home))
    monkeypatch.setenv("COLUMNS", "100")
    return home


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 0, f"{argv}: {err}"
    return out


def _commands() -> dict[str, object]:
    parser = build_parser()
    found = next(a for a in parser._actions if a.dest == "command").choices
    assert isinstance(found, dict)
    return found


def _flag_help(command: object, flag: str) -> str | None:
    for action in command._actions:  # type: ignore[attr-defined]
        if flag in action.option_strings:
            return str(action.help)
    return None


def test_every_command_takes_the_same_db_and_config_flags_naming_the_same_default() -> None:
    commands = _commands()
    assert {"demo", "threads", "show", "import", "export", "forget", "search", "recall", "remember", "facts"} <= set(
        commands
    )
    assert {"mcp", "serve", "reindex"} <= set(commands)
    for name, command in commands.items():
        if name == "forget":  # its subcommands carry the flags
            sub = next(a for a in command._actions if a.dest == "target").choices  # type: ignore[attr-defined]
            targets = list(sub.values())
        else:
            targets = [command]
        for parser in targets:
            assert _flag_help(parser, "--db") == DB_HELP, f"{name} --db"
            assert _flag_help(parser, "--config") == CONFIG_HELP, f"{name} --config"
    assert "~/.cogitator/memory.db" in DEFAULT_STORE and "./cogitator-memory.db" not in DEFAULT_STORE


def test_the_default_store_is_the_one_memory_opens_with_no_config(
    capsys: pytest.CaptureFixture[str], _home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cogitator_memory.runtime.config import load_config

    parser = build_parser()
    monkeypatch.chdir(tmp_path)
    for argv in (["demo"], ["threads"], ["search", "x"], ["mcp"], ["serve"], ["forget", "user", "ana"], ["reindex"]):
        config = command_config(parser.parse_args(argv))
        assert config.sqlite_path() == str(_home / "memory.db") == load_config().sqlite_path(), argv
    env_db = tmp_path / "env.db"
    monkeypatch.setenv("COGITATOR_MEMORY_DB", str(env_db))
    assert command_config(parser.parse_args(["mcp"])).sqlite_path() == str(env_db)
    # a program beside the commands opens the same file: Memory() and SyncMemory() follow the rule
    # too (before, they opened ~/.cogitator/memory.db whatever $COGITATOR_MEMORY_DB said)
    assert Memory().config.sqlite_path() == str(env_db)
    with SyncMemory() as program:
        program.add([{"role": "user", "content": "The boiler is serviced in October."}], user_id="ana")
    found = json.loads(_cli(capsys, "search", "boiler", "--user", "ana", "--json"))
    assert [h["text"] for h in found["results"]] == ["The boiler is serviced in October."]
    assert command_config(parser.parse_args(["--db", "x.db", "mcp"])).sqlite_path() == "x.db"
    (tmp_path / "other.yml").write_text(f"memory:\n  path: {tmp_path / 'cfg.db'}\n")
    named = command_config(parser.parse_args(["threads", "--config", str(tmp_path / "other.yml")]))
    assert named.sqlite_path() == str(tmp_path / "cfg.db"), "--config wins over $COGITATOR_MEMORY_DB"


def test_demo_then_every_command_sees_the_same_data_from_anywhere(
    capsys: pytest.CaptureFixture[str], _home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    monkeypatch.chdir(first)
    out = _cli(capsys, "demo")
    assert str(_home / "memory.db") in out
    monkeypatch.chdir(second)  # another folder: the same store
    listed = json.loads(_cli(capsys, "threads", "--json"))
    assert {t["id"] for t in listed["threads"]} == {"demo-trip", "demo-trip-vatican"}
    found = json.loads(_cli(capsys, "search", "Colosseum", "--user", "ada", "--agent", "travel-agent", "--json"))
    assert any("Colosseum" in hit["text"] for hit in found["results"])
    _cli(capsys, "remember", "Ada is allergic to peanuts", "--user", "ada", "--agent", "travel-agent")
    recalled = json.loads(
        _cli(capsys, "recall", "what is Ada allergic to?", "--user", "ada", "--agent", "travel-agent", "--json")
    )
    assert [r["fact"] for r in recalled["results"]] == ["Ada is allergic to peanuts"]
    searched = json.loads(_cli(capsys, "search", "allergies", "--user", "ada", "--agent", "travel-agent", "--json"))
    facts = [(h["kind"], h["text"]) for h in searched["results"] if h["kind"] == "fact"]
    assert facts == [("fact", "Ada is allergic to peanuts")], "search reads remembered facts through the recall index"

    with _serving(second) as url:  # serve, started from yet another folder, shows the demo
        answer = httpx.get(f"{url}/api/threads", headers={"authorization": f"Bearer {TOKEN}"}, timeout=30)
        assert answer.status_code == 200, answer.text
        assert {"demo-trip", "demo-trip-vatican"} <= {t["id"] for t in answer.json()["threads"]}

    plan = json.loads(_cli(capsys, "forget", "user", "ada", "--agent", "travel-agent", "--dry-run", "--json"))
    assert "demo-trip" in plan["threads"]
    assert "Ada is allergic to peanuts" in [n["name"] for n in plan["graph_nodes"]]
    _cli(capsys, "forget", "user", "ada", "--agent", "travel-agent")
    left = json.loads(_cli(capsys, "threads", "--json"))
    assert "demo-trip" not in {t["id"] for t in left["threads"]}
    again = json.loads(_cli(capsys, "search", "peanuts", "--user", "ada", "--agent", "travel-agent", "--json"))
    assert again["results"] == []


class _serving:
    """``cogitator-memory serve`` (no --db, no --config) as a child process started in ``cwd``."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = int(sock.getsockname()[1])

    def __enter__(self) -> str:
        env = {**os.environ, "COGITATOR_MEMORY_TOKEN": TOKEN}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "cogitator_memory", "serve", "--port", str(self.port)],
            cwd=self.cwd,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self._stderr()
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return f"http://127.0.0.1:{self.port}"
            except OSError:
                time.sleep(0.1)
        raise AssertionError(f"serve did not start: {self._stderr()}")

    def _stderr(self) -> str:
        assert self.process.stderr is not None
        ready, _, _ = select.select([self.process.stderr], [], [], 0.5)
        return os.read(self.process.stderr.fileno(), 65536).decode() if ready else ""

    def __exit__(self, *exc: object) -> None:
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        finally:
            if self.process.stderr is not None:
                self.process.stderr.close()
