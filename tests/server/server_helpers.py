"""What the server tests share: free ports, a clean environment, and a server command running as
a child process whose first lines are read."""

from __future__ import annotations

import os
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def clean_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The environment of a child command: no config or token of the machine's, ``HOME`` and
    ``COGITATOR_HOME`` (where token files go: ``home/run/``) in ``tmp_path``."""
    env = {k: v for k, v in os.environ.items() if k not in ("COGITATOR_CONFIG", "COGITATOR_MEMORY_TOKEN")}
    env["HOME"] = str(tmp_path)
    env["COGITATOR_HOME"] = str(tmp_path / "home")
    env.update(extra)
    return env


def read_lines(process: subprocess.Popen[bytes], count: int, timeout: float = 60) -> list[str]:
    """The first ``count`` lines the process writes to stderr (it must still be running)."""
    assert process.stderr is not None
    lines: list[str] = []
    buffer = b""
    deadline = time.monotonic() + timeout
    while len(lines) < count:
        left = deadline - time.monotonic()
        assert left > 0, f"no {count} lines in time: {lines} {buffer!r}"
        ready, _, _ = select.select([process.stderr], [], [], left)
        if not ready:
            continue
        chunk = os.read(process.stderr.fileno(), 4096)
        assert chunk, f"the server stopped: {lines} {buffer!r}"
        buffer += chunk
        while b"\n" in buffer and len(lines) < count:
            line, buffer = buffer.split(b"\n", 1)
            lines.append(line.decode())
    return lines


def _interruptible() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@contextmanager
def running(
    args: list[str], env: dict[str, str], cwd: Path, port: int, stop: signal.Signals = signal.SIGINT
) -> Iterator[list[str]]:
    """``cogitator-memory ARGS`` running until it accepts connections on ``port``: the two lines
    it printed. Stopped with ``stop`` (Ctrl-C) after, which must end it cleanly (no traceback)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "cogitator_memory", *args],
        env=env,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=_interruptible,
    )
    try:
        lines = read_lines(process, 2)
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert process.poll() is None, "the server stopped"
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.1)
        yield lines
    finally:
        process.send_signal(stop)
        try:
            _, stderr = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            _, stderr = process.communicate()
    assert process.returncode in (0, 130, -signal.SIGTERM), stderr.decode()
    assert b"Traceback" not in stderr
