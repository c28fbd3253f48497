"""The REST server on SQLite under 50 concurrent clients on loopback, beside the store called directly.

The server runs as its own process (``cogitator-memory serve``, uvicorn, one worker); 50 clients
(one ``httpx.AsyncClient`` with 50 connections) send a bounded number of requests:
``GET /api/threads/{id}/path?limit=50`` on a thread of 1,000 entries, and ``POST /api/entries``.
Beside each, the same calls made on a ``SQLiteAdapter`` of the same kind of file by 50 tasks of
one process. Both run the same config (SQLite, no embeddings, so no message index work behind
the writes). Requests per second and p95 latency; no target is set by the issue beyond
reporting them, so the rows carry the ratio only. The inspector's first page of a
100,000-entry thread (one ``entries`` page) is timed beside the same page of a 1,000-entry thread.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx

from cogitator_memory import SQLiteAdapter, unwrap

from .common import Row, percentiles

CLIENTS = 50
TOKEN = "bench-token-0123456789abcdef"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def _load(call: Callable[[int], Awaitable[Any]], total: int) -> tuple[float, float, float]:
    """Requests/s, p50 and p95 seconds of ``total`` calls made by :data:`CLIENTS` workers."""
    latencies: list[float] = []
    counter = iter(range(total))

    async def worker() -> None:
        for n in counter:
            start = time.perf_counter()
            await call(n)
            latencies.append(time.perf_counter() - start)

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(CLIENTS)))
    elapsed = time.perf_counter() - start
    p50, p95 = percentiles(latencies)
    return total / elapsed, p50, p95


async def _seed(store: SQLiteAdapter, entries: int) -> str:
    thread = unwrap(await store.create_thread("bench", {"user_id": "u"}))
    for i in range(entries):
        message = {"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i} of the benchmark thread"}
        unwrap(await store.add_entry({"thread_id": thread.id, "message": message, "token_count": 8}))
    return thread.id


async def _bulk_thread(path: Path, entries: int) -> str:
    async with SQLiteAdapter(path=path) as store:
        thread = unwrap(await store.create_thread("bench", {"user_id": "big"}))
        batch = 1000
        for start in range(0, entries, batch):
            for i in range(start, min(start + batch, entries)):
                message = {"role": "user", "content": f"turn {i}"}
                unwrap(await store.add_entry({"thread_id": thread.id, "message": message, "token_count": 3}))
        return thread.id


async def run(quick: bool) -> list[Row]:
    gets, posts = (400, 200) if quick else (3000, 1500)
    big_size = 5_000 if quick else 100_000
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as folder:
        served = Path(folder) / "served.db"
        direct_path = Path(folder) / "direct.db"
        async with SQLiteAdapter(path=served) as store:
            tid = await _seed(store, 1000)
        big = await _bulk_thread(served, big_size)
        async with SQLiteAdapter(path=served) as store:
            small = await _seed(store, 1000)
        port = _free_port()
        env = {**os.environ, "COGITATOR_MEMORY_TOKEN": TOKEN, "HOME": folder}
        env.pop("COGITATOR_CONFIG", None)
        # No embeddings: the figures are the REST layer over the store, not a model's work.
        config_file = Path(folder) / "cogitator.yml"
        config_file.write_text(f"memory:\n  adapter: sqlite\n  path: {served}\n  embedding:\n    provider: none\n")
        process = subprocess.Popen(
            [sys.executable, "-m", "cogitator_memory", "serve", "--config", str(config_file), "--port", str(port)],
            env=env,
            cwd=folder,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            url = f"http://127.0.0.1:{port}"
            limits = httpx.Limits(max_connections=CLIENTS, max_keepalive_connections=CLIENTS)
            headers = {"authorization": f"Bearer {TOKEN}"}
            async with httpx.AsyncClient(base_url=url, limits=limits, headers=headers, timeout=60) as client:
                for _ in range(600):
                    try:
                        if (await client.get("/health")).status_code == 200:
                            break
                    except httpx.TransportError:
                        await asyncio.sleep(0.1)
                else:
                    raise RuntimeError("the server did not start")

                async def get_path(_: int) -> None:
                    answer = await client.get(f"/api/threads/{tid}/path", params={"limit": 50})
                    answer.raise_for_status()

                async def post_entry(n: int) -> None:
                    body = {"thread_id": tid, "message": {"role": "user", "content": f"posted {n}"}, "token_count": 3}
                    answer = await client.post("/api/entries", json=body)
                    answer.raise_for_status()

                await _load(get_path, 100)  # warm
                http_get = await _load(get_path, gets)
                http_post = await _load(post_entry, posts)

                async def first_page(thread: str) -> float:
                    start = time.perf_counter()
                    (await client.get(f"/api/threads/{thread}/entries", params={"limit": 100})).raise_for_status()
                    return time.perf_counter() - start

                big_pages = [await first_page(big) for _ in range(30)]
                small_pages = [await first_page(small) for _ in range(30)]
        finally:
            process.send_signal(signal.SIGINT)
            try:
                process.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.communicate()

        async with SQLiteAdapter(path=direct_path) as store:
            direct_tid = await _seed(store, 1000)

            async def direct_get(_: int) -> None:
                unwrap(await store.get_path(thread_id=direct_tid, limit=50, types="all", include_tool_calls=True))

            async def direct_post(n: int) -> None:
                message = {"role": "user", "content": f"posted {n}"}
                unwrap(await store.add_entry({"thread_id": direct_tid, "message": message, "token_count": 3}))

            await _load(direct_get, 100)
            raw_get = await _load(direct_get, gets)
            raw_post = await _load(direct_post, posts)

    for name, http, raw in (("GET thread path (limit 50)", http_get, raw_get), ("POST entry", http_post, raw_post)):
        rows.append(
            Row(
                "REST, 50 clients",
                f"{name}, requests/s",
                http[0],
                "req/s",
                raw[0],
                "SQLiteAdapter called directly, 50 tasks",
                http[0] / raw[0],
            )
        )
        rows.append(
            Row(
                "REST, 50 clients",
                f"{name}, p95 ms",
                http[2] * 1e3,
                "ms",
                raw[2] * 1e3,
                "direct call p95",
                http[2] / raw[2],
            )
        )
    big_p50, big_p95 = percentiles(big_pages)
    small_p50, _ = percentiles(small_pages)
    rows.append(
        Row(
            "REST, inspector",
            f"first page of a {big_size:,}-entry thread, p50 ms",
            big_p50 * 1e3,
            "ms",
            small_p50 * 1e3,
            "same page of a 1,000-entry thread",
            big_p50 / small_p50,
            "within 1.5x",
            big_p50 <= 1.5 * small_p50,
            {"p95_ms": big_p95 * 1e3},
        )
    )
    return rows
