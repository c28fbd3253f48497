"""``cogitator-memory serve`` as a user runs it: a real process on loopback, a real SQLite file."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _interruptible() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "COGITATOR_CONFIG"}
    env["HOME"] = str(tmp_path)  # no ~/.cogitator of the machine
    return env


def test_serve_answers_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    port = _free_port()
    token = "t" * 24
    process = subprocess.Popen(
        [sys.executable, "-m", "cogitator_memory", "serve", "--db", str(tmp_path / "m.db"), "--port", str(port)],
        env={**_env(tmp_path), "COGITATOR_MEMORY_TOKEN": token},
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=_interruptible,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert process.poll() is None, process.communicate()[1].decode()
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.1)
        assert httpx.get(f"{url}/api/threads").status_code == 401
        auth = {"authorization": f"Bearer {token}"}
        made = httpx.post(f"{url}/api/threads", json={"agent_id": "cli"}, headers=auth)
        assert made.status_code == 201
        listed = httpx.get(f"{url}/api/threads", headers=auth).json()
        assert [t["id"] for t in listed["threads"]] == [made.json()["id"]]
        assert "Memory inspector" in httpx.get(url).text
        assert httpx.get(f"{url}/openapi.json").json()["info"]["title"] == "cogitator-memory"
    finally:
        process.send_signal(signal.SIGINT)
        try:
            _, stderr = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            _, stderr = process.communicate()
    assert process.returncode in (0, 130), stderr.decode()
    assert b"Traceback" not in stderr


def test_serve_refuses_an_open_address_without_a_token(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "cogitator_memory", "serve", "--db", str(tmp_path / "m.db"), "--host", "0.0.0.0"],
        env=_env(tmp_path),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "token" in done.stderr and "0.0.0.0" in done.stderr
