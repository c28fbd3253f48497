"""The knowledge graph on SQLite and PostgreSQL, each call beside hand-written SQL in the same run.

A random graph of 100,000 nodes and 500,000 edges (``--quick``: 10,000 / 50,000; 5 relation
types, confidences 0.5-1.0, one agent) is bulk-loaded straight into the engine's tables
(``graph_nodes``, ``graph_node_names``, ``graph_edges``, ``graph_adjacency`` with its two rows per
edge), the same rows the store writes, to save the time of ``add_edges``. Then, p50/p95 of

* ``traverse(start, max_depth=2)`` (both directions) against a hand-written recursive query over
  ``graph_adjacency`` (the nodes within 2 hops, their least hops and bodies, then the bodies of
  the edges walked), and
* ``find_shortest_path(start, end)`` (default ``max_depth`` 4) for an ``end`` 3 hops away,
  against the usual hand-written breadth-first recursive query carrying the path, stopped by
  ``LIMIT 1`` at the first row reaching ``end``, then the bodies of its edges and nodes,

both run through the raw driver (``sqlite3``, psycopg) on the same database, the two sides
alternating call by call (each side first, on pages its start has not warmed yet, every other
time; paths and traversals start from different nodes so neither warms the other's pages). Bodies are parsed with ``json.loads`` on the raw side; the store builds
its checked records. The hand-written queries follow no ``fan_out`` limit: the bench checks that
no node has more than 50 adjacency rows, so the limit does not bind and both sides find the same
nodes (checked once per start) and a path of the same length.

Then the ``text`` filter (issue 20): 10,000 fact nodes written through ``add_nodes`` (six words
each from 2,000), p50/p95 of ``query_nodes({"agent_id", "visible_to", "text": word})`` and of the
``recall`` memory tool, each with the text index (SQLite FTS5 trigram, PostgreSQL ``pg_trgm``)
and without it (the same run: SQLite with the index switched off, PostgreSQL with every node's
``text_key`` cleared, which reads and checks every node in scope as before the index), beside a
hand-written query through the raw driver using the same index (bodies parsed with
``json.loads``, then the same substring check).

PostgreSQL comes from ``COGMEM_TEST_POSTGRES_URL``; each run uses a fresh schema and drops it.
"""

from __future__ import annotations

import json
import os
import random
import secrets
import sqlite3
import tempfile
import time
from collections import deque
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg

from cogitator_memory import unwrap
from cogitator_memory.engines.postgres.adapter import PostgresAdapter
from cogitator_memory.engines.postgres.graph import text_pattern
from cogitator_memory.engines.postgres.schema import quote_ident
from cogitator_memory.engines.sqlite.graph import text_match
from cogitator_memory.engines.sqlite.threads import SQLiteAdapter
from cogitator_memory.tools.memory import create_memory_tools

from .common import Row, percentiles

ADMIN_URL = os.environ.get("COGMEM_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5433/postgres")
AGENT = "bench"
TYPES = ("knows", "works_at", "located_in", "part_of", "related_to")
STARTS = 40
PATH_HOPS = 3
NOW = datetime(2026, 1, 1, tzinfo=UTC).isoformat().replace("+00:00", "Z")
NODE_BODY = (
    '{{"id":"{id}","scope":{{"agent_id":"bench"}},"properties":{{}},"confidence":1.0,"origin":"user",'
    '"evidence":[],"metadata":{{}},"created_at":"{now}","updated_at":"{now}","type":"person",'
    '"name":"{name}","aliases":[]}}'
)
EDGE_BODY = (
    '{{"id":"{id}","scope":{{"agent_id":"bench"}},"properties":{{}},"confidence":{c},"origin":"user",'
    '"evidence":[],"metadata":{{}},"created_at":"{now}","updated_at":"{now}","source_id":"{s}",'
    '"target_id":"{t}","type":"{type}","weight":1.0,"bidirectional":false}}'
)


class Graph:
    """The rows of the four tables, and the adjacency lists to choose start and end nodes."""

    def __init__(self, nodes: int, edges: int, seed: int = 15) -> None:
        rng = random.Random(seed)
        ids = [f"n{i:07d}" for i in range(nodes)]
        self.nodes = [
            (i, AGENT, AGENT, "person", 1.0, "user", NODE_BODY.format(id=i, name=f"Entity {i}", now=NOW)) for i in ids
        ]
        self.names = [(f"entity {i}", i) for i in ids]
        self.edges: list[tuple[Any, ...]] = []
        self.adjacency: list[tuple[Any, ...]] = []
        self.near: dict[str, list[str]] = {i: [] for i in ids}
        for n in range(edges):
            s, t = rng.randrange(nodes), rng.randrange(nodes)
            while t == s:
                t = rng.randrange(nodes)
            eid, src, dst = f"e{n:08d}", ids[s], ids[t]
            kind, conf = TYPES[n % len(TYPES)], rng.choice((0.5, 0.6, 0.7, 0.8, 0.9, 1.0))
            body = EDGE_BODY.format(id=eid, c=conf, now=NOW, s=src, t=dst, type=kind)
            self.edges.append((eid, AGENT, src, dst, kind, conf, "user", body))
            self.adjacency.append((src, eid, dst, True, False, kind, conf, False))
            self.adjacency.append((dst, eid, src, False, True, kind, conf, False))
            self.near[src].append(dst)
            self.near[dst].append(src)
        self.max_degree = max(len(v) for v in self.near.values())
        # the paths start elsewhere than the traversals: a call warms the pages of its start's
        # neighbourhood, and the side that runs second on a warmed start would be favoured
        sampled = rng.sample(ids, 2 * STARTS)
        self.starts = sampled[:STARTS]
        self.pairs = [(s, self._at(s, PATH_HOPS, rng)) for s in sampled[STARTS:]]

    def _at(self, start: str, hops: int, rng: random.Random) -> str:
        seen, queue, ring = {start: 0}, deque([start]), []
        while queue:
            node = queue.popleft()
            if seen[node] == hops:
                ring.append(node)
                continue
            for other in self.near[node]:
                if other not in seen:
                    seen[other] = seen[node] + 1
                    queue.append(other)
        return rng.choice(sorted(ring))


#: The hand-written queries; ``{t}`` is the table prefix (empty on SQLite), ``{p}`` the placeholder.
RAW_NEAR = """
WITH RECURSIVE w(node, hops) AS (
    SELECT {p}, 0
    UNION
    SELECT a.other_id, w.hops + 1 FROM w JOIN {t}graph_adjacency AS a ON a.node_id = w.node WHERE w.hops < 2
)
SELECT d.hops, n.body FROM (SELECT node, min(hops) AS hops FROM w GROUP BY node) AS d
JOIN {t}graph_nodes AS n ON n.id = d.node"""
RAW_NEAR_EDGES = """
SELECT e.body FROM {t}graph_edges AS e WHERE e.id IN (
    SELECT a.edge_id FROM {t}graph_adjacency AS a WHERE a.node_id = {p}
    UNION
    SELECT b.edge_id FROM {t}graph_adjacency AS a JOIN {t}graph_adjacency AS b ON b.node_id = a.other_id
    WHERE a.node_id = {p}
)"""
RAW_PATH = {
    "sqlite": """
WITH RECURSIVE bfs(node, hops, path) AS (
    SELECT ?, 0, ''
    UNION ALL
    SELECT a.other_id, bfs.hops + 1, bfs.path || ',' || a.edge_id
    FROM bfs JOIN graph_adjacency AS a ON a.node_id = bfs.node WHERE bfs.hops < 4
)
SELECT path FROM bfs WHERE node = ? LIMIT 1""",
    "postgres": """
WITH RECURSIVE bfs(node, hops, path) AS (
    SELECT %s::text, 0, ARRAY[]::text[]
    UNION ALL
    SELECT a.other_id, bfs.hops + 1, bfs.path || a.edge_id
    FROM bfs JOIN {t}graph_adjacency AS a ON a.node_id = bfs.node WHERE bfs.hops < 4
)
SELECT path FROM bfs WHERE node = %s LIMIT 1""",
}


def _raw_path_ids(found: Any) -> list[str]:
    return [e for e in found.split(",") if e] if isinstance(found, str) else list(found)


async def _alternate(calls: list[tuple[str, Callable[[int], Awaitable[Any]]]], repeat: int) -> dict[str, list[float]]:
    """Each call ``repeat`` times (the i-th start each time), the sides taking turns call by call."""
    for _, fn in calls:
        for i in range(5):  # warm up: prepared statements, caches
            await fn(i)
    samples: dict[str, list[float]] = {name: [] for name, _ in calls}
    for i in range(repeat):
        for name, fn in calls if i % 2 == 0 else list(reversed(calls)):
            start = time.perf_counter()
            await fn(i)
            samples[name].append(time.perf_counter() - start)
    return samples


def _rows(engine: str, graph: Graph, samples: dict[str, list[float]], reached: float) -> list[Row]:
    size = f"{len(graph.nodes):,} nodes / {len(graph.edges):,} edges"
    p = {name: percentiles(values) for name, values in samples.items()}
    out = []
    for call, what in (("traverse", "traverse(max_depth=2)"), ("path", f"find_shortest_path ({PATH_HOPS} hops apart)")):
        ours, raw = p[call], p[f"raw {call}"]
        out.append(
            Row(
                "graph",
                f"{engine} {what}, {size}, p50 ms",
                ours[0] * 1e3,
                "ms",
                raw[0] * 1e3,
                "hand-written recursive SQL, raw driver, alternating",
                ours[0] / raw[0],
                "within 1.5x",
                ours[0] / raw[0] <= 1.5,
                {
                    "p95_ms": ours[1] * 1e3,
                    "raw_p95_ms": raw[1] * 1e3,
                    "p95_ratio": ours[1] / raw[1],
                    "calls": len(samples[call]),
                    **({"nodes_reached_avg": reached} if call == "traverse" else {}),
                },
            )
        )
    return out


def _check(engine: str, label: str, ours: object, raw: object) -> None:
    if ours != raw:
        raise RuntimeError(f"{engine} {label}: the store found {ours}, the hand-written query {raw}")


async def _bench_sqlite(graph: Graph, repeat: int) -> list[Row]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "graph.db"
        store = SQLiteAdapter(path=path)
        unwrap(await store.connect())
        db = sqlite3.connect(path, isolation_level=None)
        try:
            db.execute("BEGIN")
            db.executemany("INSERT INTO graph_nodes VALUES (?, ?, ?, ?, ?, ?, ?)", graph.nodes)
            db.executemany("INSERT INTO graph_node_names VALUES (?, ?)", graph.names)
            db.executemany("INSERT INTO graph_edges VALUES (?, ?, ?, ?, ?, ?, ?, ?)", graph.edges)
            db.executemany("INSERT INTO graph_adjacency VALUES (?, ?, ?, ?, ?, ?, ?, ?)", graph.adjacency)
            db.execute("COMMIT")
            db.execute("ANALYZE")
            near_sql, edges_sql = RAW_NEAR.format(t="", p="?"), RAW_NEAR_EDGES.format(t="", p="?")
            reached: list[int] = []

            async def ours_near(i: int) -> Any:
                return unwrap(await store.traverse(graph.starts[i % STARTS], max_depth=2))

            async def raw_near(i: int) -> tuple[dict[str, int], list[Any]]:
                start = graph.starts[i % STARTS]
                nodes = {json.loads(b)["id"]: h for h, b in db.execute(near_sql, (start,))}
                edges = [json.loads(b) for (b,) in db.execute(edges_sql, (start, start))]
                return nodes, edges

            async def ours_path(i: int) -> Any:
                start, end = graph.pairs[i % STARTS]
                return unwrap(await store.find_shortest_path(start, end))

            async def raw_path(i: int) -> list[Any]:
                start, end = graph.pairs[i % STARTS]
                (found,) = db.execute(RAW_PATH["sqlite"], (start, end)).fetchone()
                ids = _raw_path_ids(found)
                edges = [
                    json.loads(b)
                    for (b,) in db.execute(
                        f"SELECT body FROM graph_edges WHERE id IN ({','.join('?' * len(ids))})", ids
                    )
                ]
                ends = sorted({x for e in edges for x in (e["source_id"], e["target_id"])})
                [
                    json.loads(b)
                    for (b,) in db.execute(
                        f"SELECT body FROM graph_nodes WHERE id IN ({','.join('?' * len(ends))})", ends
                    )
                ]
                return edges

            for i in range(STARTS):
                got, (nodes, edges) = await ours_near(i), await raw_near(i)
                _check("sqlite", "traverse", (got.depths, len(got.edges)), (nodes, len(edges)))
                reached.append(len(nodes))
                p, raw = await ours_path(i), await raw_path(i)
                _check("sqlite", "path length", len(p.edges), len(raw))
            samples = await _alternate(
                [("traverse", ours_near), ("raw traverse", raw_near), ("path", ours_path), ("raw path", raw_path)],
                repeat,
            )
        finally:
            db.close()
            await store.disconnect()
    return _rows("SQLite", graph, samples, sum(reached) / len(reached))


async def _bench_postgres(graph: Graph, repeat: int) -> list[Row]:
    schema = f"bench_graph_{secrets.token_hex(4)}"
    t = quote_ident(schema) + "."
    store = PostgresAdapter(url=ADMIN_URL, schema=schema, pool_size=2)
    unwrap(await store.connect())
    try:
        async with await psycopg.AsyncConnection.connect(ADMIN_URL, autocommit=True) as conn:
            for table, rows in (
                ("graph_nodes", graph.nodes),
                ("graph_node_names", graph.names),
                ("graph_edges", graph.edges),
                ("graph_adjacency", graph.adjacency),
            ):
                # graph_nodes ends with text_key (m007), left NULL: the walks never read it.
                extra: tuple[Any, ...] = (None,) if table == "graph_nodes" else ()
                async with conn.cursor() as cur, cur.copy(f"COPY {t}{table} FROM STDIN") as copy:
                    for row in rows:
                        await copy.write_row((*row, *extra))
                await conn.execute(f"ANALYZE {t}{table}")
            near_sql, edges_sql = RAW_NEAR.format(t=t, p="%s::text"), RAW_NEAR_EDGES.format(t=t, p="%s::text")
            path_sql = RAW_PATH["postgres"].format(t=t)
            nodes_sql = f"SELECT body FROM {t}graph_nodes WHERE id = ANY(%s)"
            edge_bodies_sql = f"SELECT body FROM {t}graph_edges WHERE id = ANY(%s)"
            reached: list[int] = []

            async def ours_near(i: int) -> Any:
                return unwrap(await store.traverse(graph.starts[i % STARTS], max_depth=2))

            async def raw_near(i: int) -> tuple[dict[str, int], list[Any]]:
                start = graph.starts[i % STARTS]
                cur = await conn.execute(near_sql, (start,))
                nodes = {json.loads(b)["id"]: h for h, b in await cur.fetchall()}
                cur = await conn.execute(edges_sql, (start, start))
                return nodes, [json.loads(b) for (b,) in await cur.fetchall()]

            async def ours_path(i: int) -> Any:
                start, end = graph.pairs[i % STARTS]
                return unwrap(await store.find_shortest_path(start, end))

            async def raw_path(i: int) -> list[Any]:
                start, end = graph.pairs[i % STARTS]
                cur = await conn.execute(path_sql, (start, end))
                found = await cur.fetchone()
                assert found is not None
                cur = await conn.execute(edge_bodies_sql, (list(found[0]),))
                edges = [json.loads(b) for (b,) in await cur.fetchall()]
                ends = sorted({x for e in edges for x in (e["source_id"], e["target_id"])})
                cur = await conn.execute(nodes_sql, (ends,))
                [json.loads(b) for (b,) in await cur.fetchall()]
                return edges

            for i in range(STARTS):
                got, (nodes, edges) = await ours_near(i), await raw_near(i)
                _check("postgres", "traverse", (got.depths, len(got.edges)), (nodes, len(edges)))
                reached.append(len(nodes))
                p, raw = await ours_path(i), await raw_path(i)
                _check("postgres", "path length", len(p.edges), len(raw))
            samples = await _alternate(
                [("traverse", ours_near), ("raw traverse", raw_near), ("path", ours_path), ("raw path", raw_path)],
                repeat,
            )
    finally:
        await store.disconnect()
        async with await psycopg.AsyncConnection.connect(ADMIN_URL, autocommit=True) as conn:
            await conn.execute(f"DROP SCHEMA IF EXISTS {quote_ident(schema)} CASCADE")
    return _rows("PostgreSQL", graph, samples, sum(reached) / len(reached))


FACTS = 10_000
VOCABULARY = 2_000


def _facts(seed: int = 20) -> tuple[list[dict[str, Any]], list[str]]:
    """10,000 fact nodes of six words each, and 40 query words (each in about 30 facts)."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocabulary = sorted({"".join(rng.choice(letters) for _ in range(rng.randint(5, 9))) for _ in range(VOCABULARY)})
    nodes = [
        {
            "id": f"f{i:06d}",
            "type": "fact",
            "name": f"User {' '.join(rng.sample(vocabulary, 6))}",
            "properties": {"category": "general"},
            "scope": {"agent_id": AGENT},
        }
        for i in range(FACTS)
    ]
    return nodes, rng.sample(vocabulary, STARTS)


def _raw_hits(bodies: list[Any], word: str) -> list[str]:
    found = []
    for body in bodies:
        node = json.loads(body)
        hay = " ".join([node["name"], *node["aliases"], node.get("description") or ""]).casefold()
        if word.casefold() in hay:
            found.append(node["id"])
    return found


def _text_rows(engine: str, samples: dict[str, list[float]], found: float) -> list[Row]:
    p = {name: percentiles(values) for name, values in samples.items()}
    raw = p["raw"]
    out = []
    for call, what in (("query", "query_nodes text filter"), ("recall", "memory tool recall")):
        for side in ("indexed", "scan"):
            ours = p[f"{call} {side}"]
            label = "with the text index" if side == "indexed" else "without it (reads every node, as before)"
            out.append(
                Row(
                    "graph",
                    f"{engine} {what} {label}, {FACTS:,} facts, p50 ms",
                    ours[0] * 1e3,
                    "ms",
                    raw[0] * 1e3,
                    "hand-written SQL on the same index, raw driver, alternating",
                    ours[0] / raw[0],
                    "within 1.5x" if side == "indexed" and call == "query" else None,
                    ours[0] / raw[0] <= 1.5 if side == "indexed" and call == "query" else None,
                    {
                        "p95_ms": ours[1] * 1e3,
                        "raw_p95_ms": raw[1] * 1e3,
                        "calls": len(samples[f"{call} {side}"]),
                        "nodes_found_avg": found,
                    },
                )
            )
    return out


async def _text_calls(
    store: Any, words: list[str], raw: Callable[[str], Awaitable[list[str]]], scan: Callable[[bool], Awaitable[None]]
) -> tuple[list[tuple[str, Callable[[int], Awaitable[Any]]]], float]:
    """The calls of the text rows; ``scan(True)`` makes the store read every node, ``scan(False)``
    brings the index back (checked: both find what the raw query finds)."""
    scope = {"agent_id": AGENT}
    recall = create_memory_tools(graph=store, agent_id=AGENT)[1]

    async def query(i: int) -> list[str]:
        return [
            n.id for n in unwrap(await store.query_nodes({**scope, "visible_to": scope, "text": words[i % STARTS]}))
        ]

    async def tool(i: int) -> Any:
        return await recall.handler({"query": words[i % STARTS]})

    expected = [sorted(await raw(word)) for word in words]
    for scanning in (True, False):
        await scan(scanning)
        for i in range(STARTS):
            _check("text", f"query {words[i]!r} (scan={scanning})", sorted(await query(i)), expected[i])
    found = [len(ids) for ids in expected]

    def side(fn: Callable[[int], Awaitable[Any]], scanning: bool) -> Callable[[int], Awaitable[Any]]:
        async def call(i: int) -> Any:
            await scan(scanning)
            return await fn(i)

        return call

    calls = [
        ("query indexed", side(query, False)),
        ("raw", lambda i: raw(words[i % STARTS])),
        ("query scan", side(query, True)),
        ("recall indexed", side(tool, False)),
        ("recall scan", side(tool, True)),
    ]
    return calls, sum(found) / len(found)


async def _bench_text_sqlite(repeat: int) -> list[Row]:
    nodes, words = _facts()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "facts.db"
        store = SQLiteAdapter(path=path)
        unwrap(await store.connect())
        db = sqlite3.connect(path, isolation_level=None)
        try:
            unwrap(await store.add_nodes(nodes))
            db.execute("ANALYZE")
            sql = (
                "SELECT body FROM graph_nodes WHERE agent_id = ? AND id IN (SELECT i.node_id FROM graph_node_text AS f"
                " JOIN graph_node_text_ids AS i ON i.text_rowid = f.rowid WHERE f.hay MATCH ?)"
            )

            async def raw(word: str) -> list[str]:
                return _raw_hits([b for (b,) in db.execute(sql, (AGENT, text_match(word)))], word)

            async def scan(scanning: bool) -> None:
                store._text_index = not scanning  # the cached "has the index" of the adapter

            calls, found = await _text_calls(store, words, raw, scan)
            samples = await _alternate(calls, repeat)
        finally:
            db.close()
            await store.disconnect()
    return _text_rows("SQLite", samples, found)


async def _bench_text_postgres(repeat: int) -> list[Row]:
    nodes, words = _facts()
    schema = f"bench_text_{secrets.token_hex(4)}"
    t = quote_ident(schema) + "."
    store = PostgresAdapter(url=ADMIN_URL, schema=schema, pool_size=2)
    unwrap(await store.connect())
    try:
        async with await psycopg.AsyncConnection.connect(ADMIN_URL, autocommit=True) as conn:
            unwrap(await store.add_nodes(nodes))
            await conn.execute(f"ANALYZE {t}graph_nodes")
            await conn.execute(f"CREATE TABLE {t}text_keys AS SELECT id, text_key FROM {t}graph_nodes")
            sql = f"SELECT body FROM {t}graph_nodes WHERE agent_id = %s AND text_key LIKE %s"
            state = {"scanning": False}

            async def raw(word: str) -> list[str]:
                cur = await conn.execute(sql, (AGENT, text_pattern(word)))
                return _raw_hits([b for (b,) in await cur.fetchall()], word)

            async def scan(scanning: bool) -> None:
                if scanning == state["scanning"]:
                    return
                state["scanning"] = scanning
                if scanning:  # as before the index: every node is read and checked
                    await conn.execute(f"UPDATE {t}graph_nodes SET text_key = NULL")
                else:
                    await conn.execute(
                        f"UPDATE {t}graph_nodes AS n SET text_key = k.text_key FROM {t}text_keys AS k WHERE k.id = n.id"
                    )
                await conn.execute(f"VACUUM ANALYZE {t}graph_nodes")

            calls, found = await _text_calls(store, words, raw, scan)
            # the indexed calls and the raw query, then the scans (switching costs an UPDATE)
            indexed = await _alternate([c for c in calls if "scan" not in c[0]], repeat)
            scanned = await _alternate([c for c in calls if "scan" in c[0]], repeat)
            await scan(False)
            samples = {**indexed, **scanned}
    finally:
        await store.disconnect()
        async with await psycopg.AsyncConnection.connect(ADMIN_URL, autocommit=True) as conn:
            await conn.execute(f"DROP SCHEMA IF EXISTS {quote_ident(schema)} CASCADE")
    return _text_rows("PostgreSQL", samples, found)


async def run_text(quick: bool) -> list[Row]:
    """The rows of the ``text`` filter only."""
    repeat = 40 if quick else 80
    return [*await _bench_text_sqlite(repeat), *await _bench_text_postgres(repeat)]


async def run(quick: bool) -> list[Row]:
    nodes, edges = (10_000, 50_000) if quick else (100_000, 500_000)
    repeat = 40 if quick else 80
    graph = Graph(nodes, edges)
    if graph.max_degree > 50:
        raise RuntimeError(f"a node has {graph.max_degree} edges: fan_out=50 would bind and the sides differ")
    return [*await _bench_sqlite(graph, repeat), *await _bench_postgres(graph, repeat), *await run_text(quick)]
