"""``Memory.remember`` as the number of facts grows, and the size of a SQLite file per 100,000 facts.

A SQLite ``Memory`` (embedding service: ``HashingEmbedder(384)`` with float32 values, the size
and type of the local MiniLM model's vectors, so every fact carries a vector as ``remember``
stores it with a model) is
loaded with one user's facts (fact nodes with their vectors, as the ``remember`` tool writes
them, through ``graph.add_nodes`` in batches of 1,000 to save the time of the tool calls) up to
1,000, 10,000 and 100,000 facts (``--quick``: 1,000 and 10,000; ``COGMEM_BENCH_REMEMBER_MAX``
caps the largest size, for a machine where 100,000 takes too long). At each size:

* ``remember`` p50/p95 of new facts (each looked up by name in the user's scope, embedded and
  added, with its recall-index record), beside the same-run baseline: the same fact node row and
  its name row inserted by raw ``sqlite3`` into the same file (one transaction each, another
  agent's scope), alternating call by call. Target: ``remember`` p95 flat in the number of facts
  (the largest size within 1.5x of 1,000).
* The file's size per 100,000 facts (the file after a WAL checkpoint, less the size of the empty
  file, scaled), beside the bytes the facts' vectors take packed (4 bytes a float).
"""

from __future__ import annotations

import os
import random
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from cogitator_memory.embeddings import HashingEmbedder
from cogitator_memory.graph.records import GraphNode
from cogitator_memory.ids import new_id
from cogitator_memory.runtime.memory import Memory
from cogitator_memory.tools import FACT_TYPE

from .common import Row, percentiles

USER = "bench"
DIMENSIONS = 384
LOAD_BATCH = 1000
WORDS = ("garden", "piano", "bicycle", "lisbon", "coffee", "teacher", "python", "marathon", "violin", "kayak")


class Float32Hashing(HashingEmbedder):
    """``HashingEmbedder`` whose values are float32, as an embedding model's are (MiniLM gives
    float32 vectors), so the vectors are stored as a model's would be."""

    def vector(self, text: str) -> list[float]:
        return [float(v) for v in np.asarray(super().vector(text), dtype=np.float32)]


def _fact(i: int) -> str:
    rng = random.Random(i)
    return f"The user's {rng.choice(WORDS)} friend number {i} has the code k{i:07d}x and likes {rng.choice(WORDS)}"


def _size(path: Path) -> int:
    db = sqlite3.connect(path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    return sum(p.stat().st_size for p in path.parent.glob(f"{path.name}*"))


async def _load(memory: Memory, embedder: HashingEmbedder, start: int, stop: int) -> None:
    await add_facts(memory, embedder, [_fact(i) for i in range(start, stop)], USER)


async def add_facts(memory: Memory, embedder: Any, facts: list[str], user: str) -> None:
    """Write ``facts`` of ``user`` as the ``remember`` tool saves them (fact nodes with their
    vectors made by ``embedder``), through ``graph.add_nodes`` in batches of :data:`LOAD_BATCH`."""
    scope = {"agent_id": memory.agent_id, "user_id": user}
    assert memory.graph is not None
    for first in range(0, len(facts), LOAD_BATCH):
        texts = facts[first : first + LOAD_BATCH]
        vectors = await embedder.embed_batch(texts)
        nodes = [
            {
                "type": FACT_TYPE,
                "name": text,
                "properties": {"category": "general"},
                "origin": "user",
                "scope": scope,
                "embedding": list(vector),
            }
            for text, vector in zip(texts, vectors, strict=True)
        ]
        result = await memory.graph.add_nodes(nodes)
        assert result.success, result.error


def _stored(node: GraphNode, packed: bool) -> tuple[str, bytes | None]:
    """The body and packed vector of a node row (engines/sqlite/graph.py), made by hand; before
    the vectors were packed (``packed`` false), the vector was in the body."""
    if not packed:
        return node.dump_json(), None
    body = node.model_dump_json(exclude_none=True, exclude={"embedding"})
    if node.embedding is None:
        return body, None
    return body, b"\x04" + np.asarray(node.embedding, dtype="<f4").tobytes()


def _raw_insert(raw: sqlite3.Connection, node: GraphNode, packed: bool) -> None:
    """The node row and name row ``remember`` wrote for ``node``, again under another id and agent."""
    scope = node.scope.model_copy(update={"agent_id": "raw"})
    copy = node.model_copy(update={"id": new_id("node_"), "scope": scope})
    raw.execute("BEGIN IMMEDIATE")
    columns, values = "id, agent_id, scope_key, type, confidence, origin, body", 7
    row: tuple[Any, ...] = (copy.id, copy.agent_id, copy.scope_key, copy.type, copy.confidence, copy.origin)
    body, blob = _stored(copy, packed)
    if packed:
        columns, values, row = f"{columns}, embedding", 8, (*row, body, blob)
    else:
        row = (*row, body)
    raw.execute(f"INSERT INTO graph_nodes ({columns}) VALUES ({','.join('?' * values)})", row)
    raw.executemany(
        "INSERT INTO graph_node_names (name_key, node_id) VALUES (?, ?)", [(k, copy.id) for k in copy.name_keys]
    )
    raw.execute("COMMIT")


async def _calls(
    memory: Memory, raw: sqlite3.Connection, first: int, count: int, packed: bool
) -> tuple[list[float], list[float]]:
    ours: list[float] = []
    base: list[float] = []
    assert memory.graph is not None
    for i in range(first, first + count):
        start = time.perf_counter()
        answer = await memory.remember(_fact(i), user_id=USER)
        ours.append(time.perf_counter() - start)
        node = (await memory.graph.get_node(answer["id"])).data
        assert isinstance(node, GraphNode)
        start = time.perf_counter()
        _raw_insert(raw, node, packed)
        base.append(time.perf_counter() - start)
    return ours, base


async def run(quick: bool) -> list[Row]:
    sizes = [1_000, 10_000] if quick else [1_000, 10_000, 100_000]
    cap = int(os.environ.get("COGMEM_BENCH_REMEMBER_MAX", "0") or 0)
    if cap:
        sizes = [s for s in sizes if s <= cap] or [cap]
    calls = 100 if quick else 200
    embedder = Float32Hashing(DIMENSIONS)
    rows: list[Row] = []
    p95s: dict[int, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "remember.db"
        config: dict[str, Any] = {"adapter": "sqlite", "path": str(path), "embedding": {"provider": "none"}}
        async with Memory(config, embedding_service=embedder) as memory:
            empty = _size(path)
            raw = sqlite3.connect(path, isolation_level=None, timeout=30)
            raw.execute("PRAGMA synchronous=NORMAL")  # as the adapter's connection
            # the code before the vectors were packed kept them in the body (bench_recall --before style runs)
            packed = "embedding" in {row[1] for row in raw.execute("PRAGMA table_info(graph_nodes)")}
            loaded = 0
            for size in sizes:
                started = time.perf_counter()
                await _load(memory, embedder, loaded, size)
                loaded = size
                load_s = time.perf_counter() - started
                ours, base = await _calls(memory, raw, 10_000_000 + size, calls, packed)
                loaded += calls
                p50, p95 = percentiles(ours)
                b50, b95 = percentiles(base)
                p95s[size] = p95
                rows.append(
                    Row(
                        "remember",
                        f"SQLite, remember p50 at {size:,} facts, ms",
                        p50 * 1000,
                        "ms",
                        b50 * 1000,
                        "raw sqlite3 insert of the same node and name rows, 1 tx",
                        p50 / b50,
                        None,
                        None,
                        {"load_s": round(load_s, 1), "calls": calls},
                    )
                )
                flat = p95 <= 1.5 * p95s[sizes[0]]
                rows.append(
                    Row(
                        "remember",
                        f"SQLite, remember p95 at {size:,} facts, ms",
                        p95 * 1000,
                        "ms",
                        b95 * 1000,
                        "raw sqlite3 insert of the same node and name rows, 1 tx",
                        p95 / b95,
                        f"<= 1.5x the p95 at {sizes[0]:,} facts",
                        flat,
                        {"p95_vs_first": p95 / p95s[sizes[0]]},
                    )
                )
            raw.close()
            facts = loaded + len(sizes) * calls  # the raw copies are fact rows too
        per_100k = (_size(path) - empty) * 100_000 / facts
        vectors = DIMENSIONS * 4 * 100_000
        rows.append(
            Row(
                "remember",
                f"SQLite file size per 100,000 facts (measured at {facts:,} facts with {DIMENSIONS}-d vectors), MB",
                per_100k / 1e6,
                "MB",
                vectors / 1e6,
                f"the vectors of 100,000 facts packed ({DIMENSIONS} x 4 bytes)",
                per_100k / vectors,
                None,
                None,
                {"facts": facts},
            )
        )
    return rows
