"""``cogitator-memory serve`` as a user runs it: a real process on loopback, a real SQLite file;
the token it asks for (given, or made, printed and kept in a file only the owner reads), and
``--no-auth``."""

from __future__ import annotations

import signal
import stat
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
from server_helpers import clean_env, free_port, running


@contextmanager
def serving(
    tmp_path: Path, *extra: str, stop: signal.Signals = signal.SIGINT, **env: str
) -> Iterator[tuple[str, list[str]]]:
    """``serve`` on a free port: its URL and the two lines it printed."""
    port = free_port()
    args = ["serve", "--db", str(tmp_path / "m.db"), "--port", str(port), *extra]
    with running(args, clean_env(tmp_path, **env), tmp_path, port, stop) as lines:
        yield f"http://127.0.0.1:{port}", lines


def test_serve_answers_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    token = "t" * 24
    with serving(tmp_path, COGITATOR_MEMORY_TOKEN=token) as (url, lines):
        assert lines[0] == f"serving the memory at {url}/?token={token} (Ctrl-C stops)"
        assert httpx.get(f"{url}/health").json() == {"status": "ok"}
        assert httpx.get(f"{url}/api/threads").status_code == 401
        auth = {"authorization": f"Bearer {token}"}
        made = httpx.post(f"{url}/api/threads", json={"agent_id": "cli"}, headers=auth)
        assert made.status_code == 201
        listed = httpx.get(f"{url}/api/threads", headers=auth).json()
        assert [t["id"] for t in listed["threads"]] == [made.json()["id"]]
        assert "Memory inspector" in httpx.get(url).text
        assert httpx.get(f"{url}/openapi.json").json()["info"]["title"] == "cogitator-memory"


def test_serve_makes_a_token_prints_it_and_keeps_it_for_the_owner_only(tmp_path: Path) -> None:
    """Without a token given one is made: printed in the URL to open, in a file of mode 0600 in a
    folder of mode 0700, asked of every request, and the file goes when the server stops."""
    with serving(tmp_path) as (url, lines):
        printed = urlsplit(lines[0].split(" ")[4])
        token = parse_qs(printed.query)["token"][0]
        assert len(token) >= 32 and f"{printed.scheme}://{printed.netloc}" == url
        file = tmp_path / "home" / "run" / f"serve-{printed.port}.token"
        assert str(file) in lines[1]
        assert stat.S_IMODE(file.stat().st_mode) == 0o600
        assert stat.S_IMODE(file.parent.stat().st_mode) == 0o700
        assert file.read_text().strip() == token
        assert httpx.get(f"{url}/api/threads").status_code == 401
        assert httpx.post(f"{url}/api/forget", json={"user_id": "ada"}).status_code == 401
        wrong = {"authorization": f"Bearer {token[:-1]}x"}
        assert httpx.get(f"{url}/api/threads", headers=wrong).status_code == 401
        assert httpx.get(f"{url}/api/threads", headers={"authorization": f"Bearer {token}"}).status_code == 200
    assert not file.exists()


def test_the_token_file_goes_on_sigterm_too(tmp_path: Path) -> None:
    with serving(tmp_path, stop=signal.SIGTERM) as (url, _):
        file = tmp_path / "home" / "run" / f"serve-{url.rsplit(':', 1)[1]}.token"
        assert file.exists()
    assert not file.exists()


def test_no_auth_serves_without_a_token_and_warns(tmp_path: Path) -> None:
    with serving(tmp_path, "--no-auth") as (url, lines):
        assert lines[0] == f"serving the memory at {url}/ (Ctrl-C stops)"
        assert lines[1].startswith("warning: authentication is off (--no-auth)")
        assert httpx.get(f"{url}/api/threads").status_code == 200
        assert not (tmp_path / "home" / "run").exists()


def test_serve_refuses_no_auth_off_loopback(tmp_path: Path) -> None:
    """Without a token only loopback is bound: an open address, or a name that merely starts
    with ``127.``, is refused before the store is opened."""
    for extra, words in [
        (["--host", "0.0.0.0", "--no-auth"], ["'host'", "0.0.0.0", "not loopback"]),
        (["--host", "127.evil.test", "--no-auth"], ["'host'", "127.evil.test"]),
        (["--host", "127.evil.test"], ["'host'", "127.evil.test", "does not resolve"]),
        (["--no-auth", "--token", "t" * 24], ["'token'", "--no-auth"]),
        (["--token", "short"], ["'token'", "16 characters"]),
    ]:
        done = subprocess.run(
            [sys.executable, "-m", "cogitator_memory", "serve", "--db", str(tmp_path / "m.db"), *extra],
            env=clean_env(tmp_path),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 1, (extra, done.stderr)
        assert all(w in done.stderr for w in words), (extra, done.stderr)
        assert not (tmp_path / "m.db").exists()
