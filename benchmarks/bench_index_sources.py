"""What indexing graph edges and memory-file sections costs the writes that make them, on SQLite
(a file, WAL), each figure beside the same store with those hooks left out, in the same run.

* ``MemoryFiles.put`` of a 20-section file (one section changed each time), p50/p95.
* ``update_node`` (the node read before the write: a rename rewrites its edges' records) and
  ``delete_nodes`` of one node with two edges (its edges read before the write), p50/p95.

The baseline is ``SQLiteAdapter`` with the file and graph hooks of the recall index replaced by
the no-ops of the plain mixins (nothing indexed). There is no bar: the figures say what the index
adds to a write.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from cogitator_memory import SQLiteAdapter, unwrap
from cogitator_memory.files import MemoryFiles
from cogitator_memory.files.base import MemoryFileStoreMixin
from cogitator_memory.graph.base import GraphStoreMixin

from .common import Row, percentiles

ACCESS = {"scope": {"agent_id": "bench", "user_id": "ana"}}
TEXT = "".join(f"# Section {i}\nAna likes thing number {i} a lot, and says so often.\n" for i in range(20))


class _Unindexed(SQLiteAdapter):
    """SQLite without the recall index's file and graph hooks (the baseline)."""

    _recall_files = MemoryFileStoreMixin._recall_files
    _recall_graph_plan = GraphStoreMixin._recall_graph_plan
    _recall_graph = GraphStoreMixin._recall_graph


async def _measure(cls: type[SQLiteAdapter], writes: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"put": [], "update": [], "delete": []}
    path = Path(tempfile.mkdtemp()) / "bench.db"
    async with cls(path=str(path)) as store:
        files = MemoryFiles(adapter=store)
        for i in range(writes):
            start = time.perf_counter()
            await files.put(ACCESS, f"/memories/f{i % 20}.md", f"{TEXT}version {i}")
            out["put"].append(time.perf_counter() - start)
        nodes: list[Any] = unwrap(
            await store.add_nodes([{"type": "person", "name": f"N{i}", **ACCESS} for i in range(2 * writes)])
        )
        edges = [
            {"source_id": nodes[i].id, "target_id": nodes[(i + 1) % len(nodes)].id, "type": "knows", **ACCESS}
            for i in range(len(nodes))
        ]
        unwrap(await store.add_edges(edges))
        for i in range(writes):
            start = time.perf_counter()
            unwrap(await store.update_node(nodes[i].id, {"description": f"met at event {i}"}))
            out["update"].append(time.perf_counter() - start)
        for i in range(0, 2 * writes, 2):
            start = time.perf_counter()
            unwrap(await store.delete_nodes([nodes[i].id]))
            out["delete"].append(time.perf_counter() - start)
    return out


async def run(quick: bool) -> list[Row]:
    writes = 50 if quick else 300
    await _measure(SQLiteAdapter, 10)  # warm up (imports, the stemmer)
    base = await _measure(_Unindexed, writes)
    ours = await _measure(SQLiteAdapter, writes)
    rows: list[Row] = []
    names = {
        "put": "MemoryFiles.put, 20 sections, one changed",
        "update": "update_node",
        "delete": "delete_nodes, one node with 2 edges",
    }
    for key, name in names.items():
        b50, b95 = percentiles(base[key])
        p50, p95 = percentiles(ours[key])
        for label, value, baseline in (("p50", p50, b50), ("p95", p95, b95)):
            rows.append(
                Row(
                    group="index sources (sqlite)",
                    name=f"{name} {label}",
                    value=value * 1000,
                    unit="ms",
                    baseline=baseline * 1000,
                    baseline_name="no index hooks",
                    ratio=value / baseline if baseline else None,
                )
            )
    return rows
