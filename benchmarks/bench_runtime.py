"""The runtime: MCP ``recall`` round trips, and what ``SyncMemory`` adds to an async call.

* A SQLite memory holds 10,000 facts (``--quick``: 1,000; then 100, where the transport is most
  of the time) of one user, written as the
  ``remember`` tool writes them (fact nodes in the user's scope) through ``add_nodes`` in
  batches, to save the time of 10,000 tool calls. The ``cogitator-memory mcp`` command serves it
  over stdio and over streamable HTTP (a child process each, reached with the ``mcp`` SDK's
  client); p50/p95 of a ``recall`` round trip (a query matching a handful of facts) beside the
  same ``Memory.recall`` awaited in process, in the same run.
* ``SyncMemory`` overhead: the same call (``facts()``, then ``recall``) made through
  ``SyncMemory`` from the main thread and awaited directly on its loop, alternating in batches;
  the overhead is the difference of the medians (target under 50 us a call), with the
  difference of the best calls (best-of-N) and of the CPU time per call (``time.process_time``,
  every thread) beside it, because other work may load the machine.
"""

from __future__ import annotations

import asyncio
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from cogitator_memory.runtime.memory import Memory
from cogitator_memory.runtime.sync import SyncMemory
from cogitator_memory.tools import FACT_TYPE

from .common import Row, percentiles

USER = "bench"
WORDS = ("garden", "piano", "bicycle", "lisbon", "coffee", "teacher", "python", "marathon", "violin", "kayak")


def _fact(i: int) -> str:
    """A fact with a code word shared by 1 to 3 facts (``k00042x``), so a query names a handful."""
    rng = random.Random(i)
    return f"The user's {rng.choice(WORDS)} friend has the code k{i // 3:05d}x and likes {rng.choice(WORDS)}"


async def _seed(path: Path, count: int) -> None:
    config = {"adapter": "sqlite", "path": str(path), "embedding": {"provider": "none"}}
    async with Memory(config) as memory:
        scope = {"agent_id": memory.agent_id, "user_id": USER}
        batch = 1000
        for start in range(0, count, batch):
            nodes = [
                {
                    "type": FACT_TYPE,
                    "name": _fact(i),
                    "properties": {"category": "general"},
                    "origin": "user",
                    "scope": scope,
                }
                for i in range(start, min(count, start + batch))
            ]
            result = await memory.graph.add_nodes(nodes)
            assert result.success, result.error
        check = await memory.recall("k00005x", user_id=USER)
        assert check["results"], "the seeded facts are not found by recall"


def _queries(repeat: int, count: int) -> list[str]:
    rng = random.Random(7)
    return [f"code k{rng.randrange(count // 3):05d}x" for _ in range(repeat)]


async def _round_trips(client: Client, queries: list[str]) -> list[float]:
    await client.call_tool("recall", {"query": queries[0]})  # warm
    out = []
    for query in queries:
        start = time.perf_counter()
        result = await client.call_tool("recall", {"query": query})
        out.append(time.perf_counter() - start)
        assert not result.is_error
    return out


async def _in_process(path: Path, queries: list[str]) -> list[float]:
    config = {"adapter": "sqlite", "path": str(path), "embedding": {"provider": "none"}}
    async with Memory(config) as memory:
        await memory.recall(queries[0], user_id=USER)
        out = []
        for query in queries:
            start = time.perf_counter()
            await memory.recall(query, user_id=USER)
            out.append(time.perf_counter() - start)
        return out


def _config_file(folder: Path, db: Path) -> Path:
    file = folder / "cogitator.yml"
    file.write_text(f"memory:\n  adapter: sqlite\n  path: {db}\n  embedding: {{provider: none}}\n")
    return file


async def _stdio(config: Path, queries: list[str]) -> list[float]:
    # the child finds the package where this process did (PYTHONPATH passes through, as for --http)
    env = {"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else None
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "cogitator_memory", "mcp", "--config", str(config), "--user", USER], env=env
    )
    async with Client(params) as client:
        return await _round_trips(client, queries)


HTTP_TOKEN = "bench-runtime-token-0123456789"


async def _http(config: Path, queries: list[str]) -> list[float]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cogitator_memory",
            "mcp",
            "--http",
            "--port",
            str(port),
            "--config",
            str(config),
            "--user",
            USER,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "COGITATOR_MEMORY_TOKEN": HTTP_TOKEN},
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("the HTTP server did not start") from None
                await asyncio.sleep(0.1)
        async with (
            create_mcp_http_client(headers={"authorization": f"Bearer {HTTP_TOKEN}"}) as http,
            Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http)) as client,
        ):
            return await _round_trips(client, queries)
    finally:
        process.terminate()
        process.wait(10)


def _sync_overhead(path: Path, repeat: int, queries: list[str]) -> list[Row]:
    rows: list[Row] = []
    config = {"adapter": "sqlite", "path": str(path), "embedding": {"provider": "none"}}
    with SyncMemory(config) as memory:
        calls: list[tuple[str, Any, Any]] = [
            ("facts()", lambda i: memory.facts(user_id=USER), lambda i: memory.memory.facts(user_id=USER)),
            (
                "recall(query)",
                lambda i: memory.recall(queries[i % len(queries)], user_id=USER),
                lambda i: memory.memory.recall(queries[i % len(queries)], user_id=USER),
            ),
        ]

        async def noop(i: int) -> None:
            return None

        calls.insert(0, ("no-op coroutine", lambda i: memory._loop.run(noop(i)), noop))
        for label, sync_call, async_call in calls:
            n = 300 if label.startswith("recall") else repeat
            sync_times: list[float] = []
            async_times: list[float] = []
            cpu = {"sync": 0.0, "async": 0.0}

            async def awaited(count: int, offset: int, make: Any = async_call) -> list[float]:
                out = []
                for i in range(count):
                    start = time.perf_counter()
                    await make(offset + i)
                    out.append(time.perf_counter() - start)
                return out

            batch = 50
            for offset in range(0, n, batch):  # alternate in batches: both sides see the same machine
                started = time.process_time()
                for i in range(offset, min(n, offset + batch)):
                    start = time.perf_counter()
                    sync_call(i)
                    sync_times.append(time.perf_counter() - start)
                cpu["sync"] += time.process_time() - started
                started = time.process_time()
                async_times.extend(memory._loop.run(awaited(min(batch, n - offset), offset)))
                cpu["async"] += time.process_time() - started
            s50, s95 = percentiles(sync_times)
            a50, a95 = percentiles(async_times)
            overhead_us = (s50 - a50) * 1e6
            s_best, a_best = min(sync_times), min(async_times)
            s_cpu, a_cpu = cpu["sync"] / n, cpu["async"] / n
            rows.append(
                Row(
                    "runtime",
                    f"SyncMemory {label} overhead over the awaited call, p50 us",
                    overhead_us,
                    "us",
                    a50 * 1e6,
                    f"{label} awaited on the loop, p50 us",
                    (s50 / a50) if a50 else None,
                    target="under 50 us a call",
                    passed=overhead_us < 50,
                    extra={
                        "sync_p50_us": s50 * 1e6,
                        "sync_p95_us": s95 * 1e6,
                        "async_p95_us": a95 * 1e6,
                        "calls": n,
                        "load_average_1m": os.getloadavg()[0],
                        "cpus": os.cpu_count(),
                    },
                )
            )
            rows.append(
                Row(
                    "runtime",
                    f"SyncMemory {label} overhead over the awaited call, best of {n} us",
                    (s_best - a_best) * 1e6,
                    "us",
                    a_best * 1e6,
                    f"{label} awaited on the loop, best us",
                    (s_best / a_best) if a_best else None,
                    extra={"sync_best_us": s_best * 1e6},
                )
            )
            rows.append(
                Row(
                    "runtime",
                    f"SyncMemory {label} overhead over the awaited call, CPU time (all threads) per call us",
                    (s_cpu - a_cpu) * 1e6,
                    "us",
                    a_cpu * 1e6,
                    f"{label} awaited on the loop, CPU us",
                    (s_cpu / a_cpu) if a_cpu else None,
                    extra={"sync_cpu_us": s_cpu * 1e6},
                )
            )
    return rows


async def _recall_rows(folder: Path, count: int, repeat: int) -> list[Row]:
    db = folder / f"memory-{count}.db"
    await _seed(db, count)
    queries = _queries(repeat, count)
    local50, local95 = percentiles(await _in_process(db, queries))
    config = _config_file(folder, db)
    rows = []
    for label, measure in (("stdio", _stdio), ("streamable HTTP", _http)):
        p50, p95 = percentiles(await measure(config, queries))
        rows.append(
            Row(
                "runtime",
                f"MCP recall round trip over {label}, {count:,} facts, p50 ms",
                p50 * 1e3,
                "ms",
                local50 * 1e3,
                "Memory.recall in process, p50 ms",
                p50 / local50,
                extra={"p95_ms": p95 * 1e3, "in_process_p95_ms": local95 * 1e3, "calls": repeat},
            )
        )
    return rows


async def run(quick: bool) -> list[Row]:
    count = 1_000 if quick else 10_000
    repeat = 30 if quick else 60  # MCP round trips a size
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as folder_name:
        folder = Path(folder_name)
        rows.extend(await _recall_rows(folder, count, repeat))
        # the same round trips on 100 facts, where the transport is most of the time
        rows.extend(await _recall_rows(folder, 100, 100))
        db = folder / f"memory-{count}.db"
        queries = _queries(repeat, count)
        rows.extend(await asyncio.to_thread(_sync_overhead, db, 4000 if not quick else 1000, queries))
    return rows


if __name__ == "__main__":
    for row in asyncio.run(run("--quick" in sys.argv)):
        print(row.as_dict())
