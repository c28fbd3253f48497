"""The knowledge graph in PostgreSQL: the primitives of :class:`~cogitator_memory.graph.base.GraphStoreMixin`
as SQL, mixed into :class:`~cogitator_memory.engines.postgres.adapter.PostgresAdapter`.

The tables (migration ``m005_graph``) are those of the SQLite engine (:mod:`..sqlite.graph`):
nodes, name keys, edges, and ``graph_adjacency`` with two rows per edge; a walk is one recursive
query whose step reads at most ``fan_out`` adjacency rows of each node (``LATERAL ... LIMIT``).
Every write runs in one transaction.

Migration ``m007_graph_node_text`` adds ``graph_nodes.text_key``, the casefolded text the ``text``
filter searches (:func:`~cogitator_memory.graph.rules.node_haystack`), written with the
node, and a ``pg_trgm`` GIN index on it when the extension can be had (else none: the ``LIKE``
then reads the agent's rows). A ``text`` of three characters or more is looked up by
``text_key LIKE '%text%'`` (nodes written before the migration have no key and are always read),
then checked exactly as before by :meth:`~cogitator_memory.graph.records.NodeQuery.matches`.

A node's ``embedding`` is not kept in its JSON body but packed in the column ``vector``
(:func:`~cogitator_memory.graph.nearest.pack_vector`: float32 when every value is one exactly,
else float64, so it reads back as written; empty for none), its sign code in ``code`` (migration
``m014_graph_node_vectors``); every read of a node reads both and sets the embedding from the
column. Migration ``m016_graph_node_bodies_without_vectors`` packed the vectors of the nodes
written before (:func:`pack_node_vectors`) and took every vector out of its body
(:data:`NODE_BODY_STATEMENTS`); a row it could not pack (``vector`` NULL) is read from its body.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import ValidationError

from ...errors import ConflictError, NotFoundError
from ...graph.base import GraphChanges, GraphStoreMixin, check_next_version
from ...graph.nearest import (
    EXACT_UP_TO,
    code_shortlist,
    nearest_packed,
    node_body,
    pack_vector,
    shortlist_size,
    unpack_vector,
    vector_code,
)
from ...graph.records import TRUSTED, EdgeQuery, GraphEdge, GraphNode, GraphPath, NodeQuery, TraversalResult, Walk
from ...graph.rules import node_haystack
from .sql import quote_ident

if TYPE_CHECKING:
    from psycopg import AsyncConnection

T = TypeVar("T")

#: The statements of migration ``m005_graph`` (``{s}`` is the schema).
GRAPH_TABLES: tuple[str, ...] = (
    """CREATE TABLE {s}.graph_nodes (
        id text PRIMARY KEY, agent_id text NOT NULL, scope_key text NOT NULL, type text NOT NULL,
        confidence float8 NOT NULL, origin text NOT NULL, body text NOT NULL
    )""",
    "CREATE INDEX graph_nodes_by_agent ON {s}.graph_nodes (agent_id, type)",
    "CREATE INDEX graph_nodes_by_scope ON {s}.graph_nodes (scope_key)",
    "CREATE TABLE {s}.graph_node_names (name_key text NOT NULL, node_id text NOT NULL, PRIMARY KEY (name_key, node_id))",
    "CREATE INDEX graph_node_names_by_node ON {s}.graph_node_names (node_id)",
    """CREATE TABLE {s}.graph_edges (
        id text PRIMARY KEY, agent_id text NOT NULL, source_id text NOT NULL, target_id text NOT NULL,
        type text NOT NULL, confidence float8 NOT NULL, origin text NOT NULL, body text NOT NULL
    )""",
    "CREATE INDEX graph_edges_by_source ON {s}.graph_edges (source_id, target_id)",
    "CREATE INDEX graph_edges_by_target ON {s}.graph_edges (target_id)",
    "CREATE INDEX graph_edges_by_agent ON {s}.graph_edges (agent_id, type)",
    """CREATE TABLE {s}.graph_adjacency (
        node_id text NOT NULL, edge_id text NOT NULL, other_id text NOT NULL, out boolean NOT NULL,
        inc boolean NOT NULL, type text NOT NULL, confidence float8 NOT NULL, inferred boolean NOT NULL,
        PRIMARY KEY (node_id, edge_id)
    )""",
)

#: The statements of migration ``m007_graph_node_text`` (``{s}`` is the schema): the column, a
#: ``pg_trgm`` GIN index on it when the extension is there or can be made, and a partial index of
#: the nodes written before (no key), read by every text filter until they are written again.
NODE_TEXT_STATEMENTS: tuple[str, ...] = (
    "ALTER TABLE {s}.graph_nodes ADD COLUMN IF NOT EXISTS text_key text",
    "CREATE INDEX IF NOT EXISTS graph_nodes_unkeyed ON {s}.graph_nodes (agent_id) WHERE text_key IS NULL",
    """DO $cogmem$
    DECLARE ext_schema name;
    BEGIN
        BEGIN
            CREATE EXTENSION IF NOT EXISTS pg_trgm;
        EXCEPTION WHEN OTHERS THEN
            NULL;  -- not installed on the server, or no right to create it: no index
        END;
        SELECT n.nspname INTO ext_schema FROM pg_extension AS e JOIN pg_namespace AS n ON n.oid = e.extnamespace
        WHERE e.extname = 'pg_trgm';
        IF ext_schema IS NOT NULL THEN
            EXECUTE format(
                'CREATE INDEX IF NOT EXISTS graph_nodes_by_text ON %s.graph_nodes USING gin (text_key %I.gin_trgm_ops)',
                '{s}', ext_schema
            );
        END IF;
    END $cogmem$""",
)


#: The statements of migration ``m008_graph_evidence``: which entries each node's and edge's
#: quotes name, for ``find_by_evidence`` (written in the record's transaction), filled from the
#: records written before.
EVIDENCE_STATEMENTS: tuple[str, ...] = (
    """CREATE TABLE IF NOT EXISTS {s}.graph_evidence (
        agent_id text NOT NULL, entry_id text NOT NULL, edge boolean NOT NULL, record_id text NOT NULL,
        PRIMARY KEY (agent_id, entry_id, edge, record_id)
    )""",
    "CREATE INDEX IF NOT EXISTS graph_evidence_by_record ON {s}.graph_evidence (record_id, edge)",
    """INSERT INTO {s}.graph_evidence
        SELECT DISTINCT n.agent_id, q ->> 'entry_id', false, n.id
        FROM {s}.graph_nodes AS n, jsonb_array_elements(n.body::jsonb -> 'evidence') AS q
        WHERE q ->> 'entry_id' IS NOT NULL ON CONFLICT DO NOTHING""",
    """INSERT INTO {s}.graph_evidence
        SELECT DISTINCT e.agent_id, q ->> 'entry_id', true, e.id
        FROM {s}.graph_edges AS e, jsonb_array_elements(e.body::jsonb -> 'evidence') AS q
        WHERE q ->> 'entry_id' IS NOT NULL ON CONFLICT DO NOTHING""",
)


def _evidence_rows(records: Sequence[GraphNode | GraphEdge], edge: bool) -> list[tuple[str, str, bool, str]]:
    return [
        (r.agent_id, entry, edge, r.id)
        for r in records
        for entry in sorted({q.entry_id for q in r.evidence if q.entry_id is not None})
    ]


def text_pattern(text: str) -> str | None:
    """The ``LIKE`` pattern of the nodes whose ``text_key`` holds ``text`` casefolded, or None
    when ``text`` is under three characters (a trigram index cannot narrow it)."""
    words = text.casefold()
    if len(words) < 3:
        return None
    return "%" + words.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


#: A bounded walk as the CTE ``w`` of steps (``{t}`` the quoted schema, ``{seen}`` the scope filter
#: on ``n``, a start node, ``{follow}`` the filter of the edges followed); only start nodes that exist.
WALK_CTE = """
WITH RECURSIVE w(node, hops, prev, edge) AS (
    SELECT s, 0, NULL::text, NULL::text FROM unnest(%s::text[]) AS s
    WHERE EXISTS (SELECT 1 FROM {t}.graph_nodes AS n WHERE n.id = s{seen})
    UNION
    SELECT a.other_id, w.hops + 1, w.node, a.edge_id
    FROM w CROSS JOIN LATERAL (
        SELECT b.other_id, b.edge_id FROM {t}.graph_adjacency AS b WHERE b.node_id = w.node {follow}
        ORDER BY b.confidence DESC, b.edge_id COLLATE "C" LIMIT %s
    ) AS a
    WHERE w.hops < %s
)"""
#: The steps of a walk.
WALK_SQL = WALK_CTE + "\nSELECT node, hops, prev, edge FROM w"
#: A traversal in one query: the first ``max_nodes`` nodes by (least hops, id) with their bodies
#: and packed vectors (``hops`` >= 0), and the bodies of the edges walked between two of them
#: (``hops`` -1). Bodies are read by one index lookup each (a scalar subquery): the planner cannot
#: tell how few rows the CTEs hold and would rather scan the whole table for a join.
NEIGHBOURHOOD_SQL = (
    WALK_CTE
    + """,
d AS (SELECT node, min(hops) AS hops FROM w GROUP BY node ORDER BY min(hops), node COLLATE "C" LIMIT %s),
e AS (SELECT DISTINCT w.edge FROM w JOIN d ON d.node = w.node JOIN d AS p ON p.node = w.prev)
SELECT d.hops, (SELECT n.body FROM {t}.graph_nodes AS n WHERE n.id = d.node),
    (SELECT n.vector FROM {t}.graph_nodes AS n WHERE n.id = d.node) FROM d
UNION ALL
SELECT -1, (SELECT g.body FROM {t}.graph_edges AS g WHERE g.id = e.edge), NULL::bytea FROM e"""
)
#: A shortest path of at most ``K + 1`` hops, ``K`` the depth of the walk ``w`` (the rule of
#: :func:`~cogitator_memory.graph.rules.path_from_steps`: from the end, through a node one hop
#: nearer the start, the smallest edge id first). ``last`` holds the last hops into the end: from
#: each node ``p`` of the walk along an adjacency row ``b`` the walk would follow from ``p`` (the
#: filter, and among the first ``fan_out`` of ``p``'s rows ``c``), read from the end's own rows
#: ``r``; the nearest ``p`` with the smallest edge id is the last hop, and ``back`` walks the
#: rest back through ``w``. Gives the path's edges (``is_edge``) and nodes (with their packed
#: vectors) with their place on it as ``hops``; ``{exist}`` may add ``(-1, NULL, id, NULL)`` rows
#: for the ends that exist.
PATH_SQL = (
    WALK_CTE
    + """,
m AS (SELECT node, min(hops) AS hops FROM w GROUP BY node),
last AS (
    SELECT m.hops + 1 AS hops, b.edge_id AS edge, b.node_id AS prev
    FROM {t}.graph_adjacency AS r
    JOIN {t}.graph_adjacency AS b ON b.node_id = r.other_id AND b.edge_id = r.edge_id
    JOIN m ON m.node = b.node_id
    WHERE r.node_id = %s {follow} AND b.edge_id IN (
        SELECT c.edge_id FROM {t}.graph_adjacency AS c WHERE c.node_id = b.node_id {follow_c}
        ORDER BY c.confidence DESC, c.edge_id COLLATE "C" LIMIT %s
    )
),
pick AS (
    SELECT hops, edge, prev FROM last WHERE hops = (SELECT min(hops) FROM last)
    ORDER BY edge COLLATE "C", prev COLLATE "C" LIMIT 1
),
back(node, hops, edge) AS (
    SELECT prev, hops - 1, edge FROM pick
    UNION ALL
    SELECT x.prev, back.hops - 1, x.edge FROM back CROSS JOIN LATERAL (
        SELECT w.prev, w.edge FROM w
        WHERE w.node = back.node AND w.hops = back.hops AND w.prev IS NOT NULL
          AND EXISTS (SELECT 1 FROM w AS v WHERE v.node = w.prev AND v.hops = back.hops - 1)
        ORDER BY w.edge COLLATE "C", w.prev COLLATE "C" LIMIT 1
    ) AS x
    WHERE back.hops > 0
)
SELECT back.hops, true, (SELECT g.body FROM {t}.graph_edges AS g WHERE g.id = back.edge), NULL::bytea FROM back
UNION ALL
SELECT back.hops, false, (SELECT n.body FROM {t}.graph_nodes AS n WHERE n.id = back.node),
    (SELECT n.vector FROM {t}.graph_nodes AS n WHERE n.id = back.node) FROM back
UNION ALL
SELECT pick.hops, false, n.body, n.vector FROM pick, {t}.graph_nodes AS n WHERE n.id = %s{exist}"""
)
_EXIST = (
    "\nUNION ALL\nSELECT -1, NULL::boolean, n.id, NULL::bytea FROM {t}.graph_nodes AS n"
    " WHERE n.id = ANY(%s::text[]){seen}"
)


#: An edge's scope key (:func:`~cogitator_memory.items.records.scope_key`) read from its body.
_EDGE_SCOPE_KEY = (
    "concat_ws(chr(31), "
    + ", ".join(
        ["(e.body::jsonb #>> '{scope,agent_id}')"]
        + [f"coalesce(e.body::jsonb #>> '{{scope,{part}}}', '')" for part in ("user_id", "project_id", "thread_id")]
    )
    + ")"
)


def walk_filter(walk: Walk, t: str, alias: str = "b") -> tuple[str, list[Any]]:
    """The SQL filter on ``alias`` (a ``graph_adjacency`` row of schema ``t``, quoted) of the edges
    ``walk`` follows from that row's node."""
    a = alias
    sql = {"outgoing": f" AND {a}.out", "incoming": f" AND {a}.inc", "both": ""}[walk.direction]
    params: list[Any] = []
    if walk.types is not None:
        sql += f" AND {a}.type = ANY(%s)"
        params.append(sorted(walk.types))
    if walk.min_confidence > 0:
        sql += f" AND {a}.confidence >= %s"
        params.append(walk.min_confidence)
    if not walk.include_inferred:
        sql += f" AND NOT {a}.inferred"
    if walk.scope_keys is not None:
        sql += (
            f" AND EXISTS (SELECT 1 FROM {t}.graph_nodes AS n WHERE n.id = {a}.other_id AND n.scope_key = ANY(%s))"
            f" AND EXISTS (SELECT 1 FROM {t}.graph_edges AS e WHERE e.id = {a}.edge_id AND {_EDGE_SCOPE_KEY} = ANY(%s))"
        )
        keys = sorted(walk.scope_keys)
        params.extend([keys, keys])
    return sql, params


def _node(body: str, vector: bytes | None) -> GraphNode:
    """The node of a row's ``body`` and ``vector``: the embedding is the packed one, or when the
    column is empty (none) or NULL (not packed yet) whatever the body holds."""
    node = GraphNode.model_validate_json(body, context=TRUSTED)
    if vector:
        node.embedding = unpack_vector(vector)
    return node


def _nodes(rows: Sequence[Sequence[Any]]) -> list[GraphNode]:
    """The nodes of ``(body, vector)`` rows."""
    return [_node(body, vector) for body, vector in rows]


#: The statements of migration ``m016_graph_node_bodies_without_vectors`` (``{s}`` is the schema),
#: run once :func:`pack_node_vectors` rewrote the nodes written before ``m014``: every body that
#: still holds an ``embedding`` beside a packed vector (written from ``m014`` on) is written again
#: without it, in the server, key by key from ``json_each`` (the other values as they were written,
#: in their order: the body a write of the node gives now), and the index of the unpacked nodes
#: goes (every write packs its nodes).
NODE_BODY_STATEMENTS: tuple[str, ...] = (
    """UPDATE {s}.graph_nodes AS n SET body = (
        SELECT '{' || string_agg(to_json(e.key)::text || ':' || e.value::text, ',' ORDER BY e.i) || '}'
        FROM json_each(n.body::json) WITH ORDINALITY AS e(key, value, i) WHERE e.key <> 'embedding'
    ) WHERE n.vector IS NOT NULL AND n.body LIKE '%"embedding"%' AND (n.body::json -> 'embedding') IS NOT NULL""",
    "DROP INDEX IF EXISTS {s}.graph_nodes_unpacked",
)

#: Nodes :func:`pack_node_vectors` packs with one statement.
_PACK_BATCH = 1000


async def pack_node_vectors(conn: AsyncConnection[Any], schema: str) -> None:
    """Pack the vectors of the nodes written before ``m014_graph_node_vectors`` (``vector`` NULL),
    :data:`_PACK_BATCH` at a time in the order of their ids (the first step of migration
    ``m016_graph_node_bodies_without_vectors``, in its transaction): each node read as a read
    reads it and written again as a write writes it (its vector packed, an empty one for none,
    and its body without it; a value past float32's range packs as float64). One that cannot be
    read (a ``null`` in its vector: a NaN or an infinity written as JSON) is left as it was, read
    from its body as before."""
    t = quote_ident(schema)
    read = f"SELECT id, body FROM {t}.graph_nodes WHERE vector IS NULL AND id > %s ORDER BY id LIMIT {_PACK_BATCH}"
    write = f"UPDATE {t}.graph_nodes SET body = %s, vector = %s, code = %s WHERE id = %s"
    last = ""
    while True:
        rows = await (await conn.execute(read, (last,))).fetchall()
        packed: list[tuple[str, bytes, bytes | None, str]] = []
        for node_id, body in rows:
            try:
                node = GraphNode.model_validate_json(body, context=TRUSTED)
                vector = b"" if node.embedding is None else pack_vector(node.embedding)
            except ValidationError:
                continue
            code = None if node.embedding is None else vector_code(node.embedding)
            packed.append((node_body(node), vector, code, node_id))
        if packed:
            await conn.cursor().executemany(write, packed)
        if len(rows) < _PACK_BATCH:
            return
        last = rows[-1][0]


def _adjacency(edge: GraphEdge) -> list[tuple[Any, ...]]:
    both = edge.bidirectional
    common = (edge.type, edge.confidence, edge.inferred)
    return [
        (edge.source_id, edge.id, edge.target_id, True, both, *common),
        (edge.target_id, edge.id, edge.source_id, both, True, *common),
    ]


class PostgresGraph(GraphStoreMixin):
    """The graph part of :class:`~cogitator_memory.engines.postgres.adapter.PostgresAdapter`."""

    if TYPE_CHECKING:  # provided by the adapter
        schema: str

        async def run(
            self, operation: Callable[[AsyncConnection[Any]], Awaitable[T]], *, timeout: float | None = None
        ) -> T: ...

    async def _rows(self, sql: str, params: Sequence[Any], *, binary: bool = False) -> list[Any]:
        async def op(conn: AsyncConnection[Any]) -> list[Any]:
            cur = await conn.execute(sql, params, binary=binary)
            return await cur.fetchall()

        return await self.run(op)

    async def _write_graph(self, changes: GraphChanges) -> None:
        t = quote_ident(self.schema)
        nodes = [*changes.add_nodes, *changes.put_nodes]
        edges = [*changes.add_edges, *changes.put_edges]

        async def op(conn: AsyncConnection[Any]) -> None:
            async with conn.transaction():
                for table, added, put in (
                    ("graph_nodes", changes.add_nodes, changes.put_nodes),
                    ("graph_edges", changes.add_edges, changes.put_edges),
                ):
                    what = table[6:-1]
                    if added:
                        cur = await conn.execute(
                            f"SELECT id FROM {t}.{table} WHERE id = ANY(%s) LIMIT 1", ([r.id for r in added],)
                        )
                        taken = await cur.fetchone()
                        if taken is not None:
                            raise ConflictError(f"graph {what} id is taken: {taken[0]}")
                    if put:
                        found: dict[str, int] = {}
                        # twice: a row locked while another write replaced it (deleted, then
                        # inserted again) is read again by a new statement, which sees the new one
                        for _ in range(2):
                            cur = await conn.execute(
                                f"SELECT id, coalesce((body::jsonb ->> 'version')::bigint, 1) FROM {t}.{table}"
                                " WHERE id = ANY(%s) FOR UPDATE",
                                ([r.id for r in put if r.id not in found],),
                            )
                            found.update((row[0], int(row[1])) for row in await cur.fetchall())
                            if len(found) == len(put):
                                break
                        for record in put:
                            if record.id not in found:
                                raise NotFoundError(f"graph {what} not found: {record.id}")
                            check_next_version(what, record.id, found[record.id], record.version)
                removed_edges = list(changes.delete_edges)
                if changes.delete_nodes:
                    cur = await conn.execute(
                        f"SELECT id FROM {t}.graph_edges WHERE source_id = ANY(%s) OR target_id = ANY(%s)",
                        (changes.delete_nodes, changes.delete_nodes),
                    )
                    removed_edges += [row[0] for row in await cur.fetchall()]
                cur = conn.cursor()
                stale = [*removed_edges, *(e.id for e in edges)]
                if stale:
                    await conn.execute(f"DELETE FROM {t}.graph_adjacency WHERE edge_id = ANY(%s)", (stale,))
                    await conn.execute(f"DELETE FROM {t}.graph_evidence WHERE edge AND record_id = ANY(%s)", (stale,))
                    await conn.execute(f"DELETE FROM {t}.graph_edges WHERE id = ANY(%s)", (stale,))
                gone_nodes = [*changes.delete_nodes, *(n.id for n in nodes)]
                if gone_nodes:
                    await conn.execute(
                        f"DELETE FROM {t}.graph_evidence WHERE NOT edge AND record_id = ANY(%s)", (gone_nodes,)
                    )
                    await conn.execute(f"DELETE FROM {t}.graph_node_names WHERE node_id = ANY(%s)", (gone_nodes,))
                    await conn.execute(f"DELETE FROM {t}.graph_nodes WHERE id = ANY(%s)", (gone_nodes,))
                if nodes:
                    await cur.executemany(
                        f"INSERT INTO {t}.graph_nodes (id, agent_id, scope_key, type, confidence, origin, body,"
                        " text_key, vector, code) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                        [
                            (
                                n.id,
                                n.agent_id,
                                n.scope_key,
                                n.type,
                                n.confidence,
                                n.origin,
                                node_body(n),
                                node_haystack(n),
                                b"" if n.embedding is None else pack_vector(n.embedding),
                                None if n.embedding is None else vector_code(n.embedding),
                            )
                            for n in nodes
                        ],
                    )
                    await cur.executemany(
                        f"INSERT INTO {t}.graph_node_names VALUES (%s, %s)",
                        [(k, n.id) for n in nodes for k in n.name_keys],
                    )
                evidence = [*_evidence_rows(nodes, False), *_evidence_rows(edges, True)]
                if evidence:
                    await cur.executemany(f"INSERT INTO {t}.graph_evidence VALUES (%s, %s, %s, %s)", evidence)
                if edges:
                    await cur.executemany(
                        f"INSERT INTO {t}.graph_edges VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                        [
                            (e.id, e.agent_id, e.source_id, e.target_id, e.type, e.confidence, e.origin, e.dump_json())
                            for e in edges
                        ],
                    )
                    await cur.executemany(
                        f"INSERT INTO {t}.graph_adjacency VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                        [row for e in edges for row in _adjacency(e)],
                    )

        await self.run(op)

    async def _get_nodes(self, ids: list[str]) -> list[GraphNode]:
        sql = f"SELECT body, vector FROM {quote_ident(self.schema)}.graph_nodes WHERE id = ANY(%s)"
        return _nodes(await self._rows(sql, (ids,), binary=True))

    async def _get_edges(self, ids: list[str]) -> list[GraphEdge]:
        rows = await self._rows(f"SELECT body FROM {quote_ident(self.schema)}.graph_edges WHERE id = ANY(%s)", (ids,))
        return [GraphEdge.model_validate_json(r[0], context=TRUSTED) for r in rows]

    def _node_where(self, query: NodeQuery) -> tuple[list[str], list[Any]]:
        """The conditions of a node query on indexed columns (its text aside), and their parameters."""
        t = quote_ident(self.schema)
        where, params = ["agent_id = %s", "confidence >= %s"], [query.agent_id, query.min_confidence]
        for column, values in (("scope_key", query.scope_keys), ("type", query.types), ("origin", query.origins)):
            if values is not None:
                where.append(f"{column} = ANY(%s)")
                params.append(sorted(values))
        if query.name_key is not None:
            where.append(f"id IN (SELECT node_id FROM {t}.graph_node_names WHERE name_key = %s)")
            params.append(query.name_key)
        return where, params

    async def _nearest_nodes(
        self, query: NodeQuery, vector: list[float], limit: int, least: float
    ) -> list[tuple[GraphNode, float]]:
        # the nodes' sign codes are read (graph.nearest), then the packed vectors of every node
        # or, past EXACT_UP_TO, of the codes' shortlist, and only the nodes kept are read whole
        # (migration m016 packed the vectors of the nodes written before the columns)
        if query.text is not None:
            return await super()._nearest_nodes(query, vector, limit, least)
        t = quote_ident(self.schema)
        where, params = self._node_where(query)
        conditions = " AND ".join(where)
        # bytes, not hex text; the codes from graph_nodes_codes alone
        sql = f"SELECT id, code FROM {t}.graph_nodes WHERE {conditions} AND code IS NOT NULL"
        coded: list[tuple[str, bytes]] = [(i, bytes(c)) for i, c in await self._rows(sql, params, binary=True)]
        if len(coded) > EXACT_UP_TO:
            keep = code_shortlist(coded, vector, shortlist_size(limit))
            sql = f"SELECT id, vector FROM {t}.graph_nodes WHERE id = ANY(%s)"
            scored = [(i, bytes(b)) for i, b in await self._rows(sql, (keep,), binary=True) if b is not None]
        else:
            sql = f"SELECT id, vector FROM {t}.graph_nodes WHERE {conditions} AND octet_length(vector) > 1"
            scored = [(i, bytes(b)) for i, b in await self._rows(sql, params, binary=True)]
        chosen = nearest_packed(scored, vector, limit, least)
        if chosen is None:  # pragma: no cover (numpy missing)
            return await super()._nearest_nodes(query, vector, limit, least)
        by_id = {n.id: n for n in await self._get_nodes([node_id for node_id, _ in chosen])}
        return [(by_id[i], score) for i, score in chosen if i in by_id and query.matches(by_id[i])]

    async def _query_nodes(self, query: NodeQuery) -> list[GraphNode]:
        t = quote_ident(self.schema)
        where, params = self._node_where(query)
        pattern = None if query.text is None else text_pattern(query.text)
        if pattern is not None:
            where.append("(text_key LIKE %s OR text_key IS NULL)")
            params.append(pattern)
        rows = await self._rows(
            f"SELECT body, vector FROM {t}.graph_nodes WHERE {' AND '.join(where)}", params, binary=True
        )
        nodes = _nodes(rows)
        return [n for n in nodes if query.matches(n)] if query.text is not None else nodes

    async def _count_nodes(self, query: NodeQuery) -> int:
        if query.text is not None:  # the text filter's last check is made on the nodes read
            return await super()._count_nodes(query)
        where, params = self._node_where(query)
        rows = await self._rows(
            f"SELECT count(*) FROM {quote_ident(self.schema)}.graph_nodes WHERE {' AND '.join(where)}", params
        )
        return int(rows[0][0])

    async def _query_edges(self, query: EdgeQuery) -> list[GraphEdge]:
        where, params = ["agent_id = %s", "confidence >= %s"], [query.agent_id, query.min_confidence]
        for column, values in (("type", query.types), ("origin", query.origins)):
            if values is not None:
                where.append(f"{column} = ANY(%s)")
                params.append(sorted(values))
        if query.between is not None:
            where.append("source_id = %s AND target_id = %s")
            params.extend(query.between)
        if query.node_ids is not None:
            ids = sorted(query.node_ids)
            ends = {"outgoing": ["source_id"], "incoming": ["target_id"], "both": ["source_id", "target_id"]}[
                query.direction
            ]
            where.append("(" + " OR ".join(f"{end} = ANY(%s)" for end in ends) + ")")
            params.extend([ids] * len(ends))
        sql = f"SELECT body FROM {quote_ident(self.schema)}.graph_edges WHERE {' AND '.join(where)}"
        return [GraphEdge.model_validate_json(r[0], context=TRUSTED) for r in await self._rows(sql, params)]

    def _walk_query(self, template: str, walk: Walk, **parts: str) -> tuple[str, list[Any]]:
        """``template`` (a :data:`WALK_CTE` and what follows it) filled in for ``walk`` (``parts``
        fill its other fields as they are), and the parameters of the walk (what follows the CTE
        adds its own)."""
        t = quote_ident(self.schema)
        follow, params = walk_filter(walk, t)
        seen, keys = ("", []) if walk.scope_keys is None else (" AND n.scope_key = ANY(%s)", [sorted(walk.scope_keys)])
        sql = template.format(t=t, seen=seen, follow=follow, **parts)
        return sql, [list(walk.start_ids), *keys, *params, walk.fan_out, walk.max_depth]

    async def _walk_steps(self, walk: Walk) -> list[tuple[str, int, str | None, str | None]]:
        sql, params = self._walk_query(WALK_SQL, walk)
        return [(r[0], int(r[1]), r[2], r[3]) for r in await self._rows(sql, params)]

    async def _neighbourhood(self, walk: Walk) -> TraversalResult:
        sql, params = self._walk_query(NEIGHBOURHOOD_SQL, walk)
        nodes: list[tuple[int, GraphNode]] = []
        edges: list[GraphEdge] = []
        for hops, body, vector in await self._rows(sql, [*params, walk.max_nodes], binary=True):
            if hops < 0:
                edges.append(GraphEdge.model_validate_json(body, context=TRUSTED))
            else:
                nodes.append((int(hops), _node(body, vector)))
        nodes.sort(key=lambda pair: (pair[0], pair[1].id))
        edges.sort(key=lambda e: e.id)
        return TraversalResult(nodes=[n for _, n in nodes], edges=edges, depths={n.id: h for h, n in nodes})

    async def _shortest_path(self, walk: Walk, end: str) -> GraphPath | None:
        # a walk of K hops finds the paths of up to K + 1 (the last hop read from the end's side):
        # the first query walks 2 hops (and says which ends exist), each next one a hop more
        start, t = walk.start_ids[0], quote_ident(self.schema)
        first_depth = min(2, walk.max_depth - 1)
        for depth in range(first_depth, walk.max_depth):
            first = depth == first_depth
            step = replace(walk, max_depth=depth)
            follow_c, follow_params = walk_filter(step, t, alias="c")
            seen = "" if walk.scope_keys is None else " AND n.scope_key = ANY(%s)"
            exist = _EXIST.format(t=t, seen=seen) if first else ""
            sql, params = self._walk_query(PATH_SQL, step, exist=exist, follow_c=follow_c)
            params += [end, *walk_filter(step, t)[1], *follow_params, walk.fan_out, end]
            if first:
                params.append([start, end])
                if walk.scope_keys is not None:
                    params.append(sorted(walk.scope_keys))
            rows = await self._rows(sql, params, binary=True)
            if first and sum(1 for r in rows if r[0] < 0) < 2:
                return None  # an end is missing (or unseen)
            path = sorted((r for r in rows if r[0] >= 0), key=lambda r: (int(r[0]), bool(r[1]), r[2]))
            if path:
                edges = [GraphEdge.model_validate_json(b, context=TRUSTED) for _, e, b, _ in path if e]
                nodes = [_node(b, v) for _, e, b, v in path if not e]
                return GraphPath(nodes=nodes, edges=edges, total_weight=sum(e.weight for e in edges))
        return None

    async def _by_evidence(self, agent_id: str, entry_ids: frozenset[str]) -> tuple[list[GraphNode], list[GraphEdge]]:
        t = quote_ident(self.schema)
        entries = sorted(entry_ids)
        found = []
        for table, columns, edge in (("graph_nodes", "body, vector", False), ("graph_edges", "body", True)):
            found.append(
                await self._rows(
                    f"SELECT {columns} FROM {t}.{table} WHERE id IN (SELECT record_id FROM {t}.graph_evidence"
                    " WHERE agent_id = %s AND entry_id = ANY(%s) AND edge = %s)",
                    (agent_id, entries, edge),
                    binary=True,
                )
            )
        return _nodes(found[0]), [GraphEdge.model_validate_json(r[0], context=TRUSTED) for r in found[1]]

    async def _clear_graph(self, agent_id: str) -> tuple[int, int]:
        t = quote_ident(self.schema)

        async def op(conn: AsyncConnection[Any]) -> tuple[int, int]:
            async with conn.transaction():
                await conn.execute(
                    f"DELETE FROM {t}.graph_adjacency WHERE edge_id IN (SELECT id FROM {t}.graph_edges WHERE agent_id = %s)",
                    (agent_id,),
                )
                edges = (await conn.execute(f"DELETE FROM {t}.graph_edges WHERE agent_id = %s", (agent_id,))).rowcount
                await conn.execute(
                    f"DELETE FROM {t}.graph_node_names WHERE node_id IN (SELECT id FROM {t}.graph_nodes WHERE agent_id = %s)",
                    (agent_id,),
                )
                await conn.execute(f"DELETE FROM {t}.graph_evidence WHERE agent_id = %s", (agent_id,))
                nodes = (await conn.execute(f"DELETE FROM {t}.graph_nodes WHERE agent_id = %s", (agent_id,))).rowcount
                return nodes, edges

        return await self.run(op)

    async def _graph_counts(self, agent_id: str) -> tuple[dict[str, int], dict[str, int]]:
        t = quote_ident(self.schema)
        counts = []
        for table in ("graph_nodes", "graph_edges"):
            rows = await self._rows(
                f"SELECT type, count(*) FROM {t}.{table} WHERE agent_id = %s GROUP BY type", (agent_id,)
            )
            counts.append({str(r[0]): int(r[1]) for r in rows})
        return counts[0], counts[1]


__all__ = [
    "EVIDENCE_STATEMENTS",
    "GRAPH_TABLES",
    "NODE_BODY_STATEMENTS",
    "NODE_TEXT_STATEMENTS",
    "WALK_SQL",
    "PostgresGraph",
    "pack_node_vectors",
    "text_pattern",
    "walk_filter",
]
