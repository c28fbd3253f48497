"""The knowledge graph in SQLite: the primitives of :class:`~cogitator_memory.graph.base.GraphStoreMixin`
as SQL, mixed into :class:`~cogitator_memory.engines.sqlite.threads.SQLiteAdapter` (the same file as the threads).

Tables (migration ``m006_graph``): ``graph_nodes`` and ``graph_edges`` (indexed columns beside the
record's JSON ``body``), ``graph_node_names`` (each name and alias key to its node) and
``graph_adjacency``: two rows per edge, one from each end, saying whether the walk may go that way
along the edge (``out``) or against it (``inc``), with the columns a walk filters by. A walk is one
recursive query over ``graph_adjacency`` (see :data:`WALK_SQL`); a traversal is that query and one
more reading the bodies it keeps (:data:`NEIGHBOURHOOD_SQL`); every write is one
``BEGIN IMMEDIATE`` transaction.

A node's ``embedding`` is not kept in its JSON body but packed in the column ``embedding``
(migration ``m013_graph_node_vectors``, :func:`pack_vector`): float32 when every value is one
exactly (what embedding models give), float64 otherwise, so a vector reads back as it was
written; 384 floats take 1,537 bytes instead of about 8 KB of JSON text.

Migration ``m009_graph_node_text`` adds ``graph_node_text``, an FTS5 table with the trigram
tokenizer (:data:`NODE_TEXT_TABLES`) holding the casefolded text the
``text`` filter searches (:func:`~cogitator_memory.graph.rules.node_haystack`). A ``text`` of three characters or more is
first looked up there (a superset: every node whose text holds it has all its trigrams), then
checked exactly as before by :meth:`~cogitator_memory.graph.records.NodeQuery.matches`. When the
SQLite build has no trigram tokenizer the table is not made and the filter reads every node.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from itertools import zip_longest
from typing import TYPE_CHECKING, Any

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
from ...graph.records import (
    TRUSTED,
    EdgeQuery,
    GraphEdge,
    GraphNode,
    NodeQuery,
    TraversalResult,
    Walk,
    stored_edges,
    stored_nodes,
)
from ...graph.rules import neighbourhood_from_steps, node_haystack

#: The tables of the graph (migration ``m006_graph`` of :mod:`.schema`).
GRAPH_TABLES: tuple[str, ...] = (
    """CREATE TABLE graph_nodes (
        id TEXT PRIMARY KEY, agent_id TEXT NOT NULL, scope_key TEXT NOT NULL, type TEXT NOT NULL,
        confidence REAL NOT NULL, origin TEXT NOT NULL, body TEXT NOT NULL
    )""",
    "CREATE INDEX graph_nodes_by_agent ON graph_nodes (agent_id, type)",
    "CREATE INDEX graph_nodes_by_scope ON graph_nodes (scope_key)",
    """CREATE TABLE graph_node_names (
        name_key TEXT NOT NULL, node_id TEXT NOT NULL, PRIMARY KEY (name_key, node_id)
    ) WITHOUT ROWID""",
    "CREATE INDEX graph_node_names_by_node ON graph_node_names (node_id)",
    """CREATE TABLE graph_edges (
        id TEXT PRIMARY KEY, agent_id TEXT NOT NULL, source_id TEXT NOT NULL, target_id TEXT NOT NULL,
        type TEXT NOT NULL, confidence REAL NOT NULL, origin TEXT NOT NULL, body TEXT NOT NULL
    )""",
    "CREATE INDEX graph_edges_by_source ON graph_edges (source_id, target_id)",
    "CREATE INDEX graph_edges_by_target ON graph_edges (target_id)",
    "CREATE INDEX graph_edges_by_agent ON graph_edges (agent_id, type)",
    """CREATE TABLE graph_adjacency (
        node_id TEXT NOT NULL, edge_id TEXT NOT NULL, other_id TEXT NOT NULL, out INTEGER NOT NULL,
        inc INTEGER NOT NULL, type TEXT NOT NULL, confidence REAL NOT NULL, inferred INTEGER NOT NULL,
        PRIMARY KEY (node_id, edge_id)
    ) WITHOUT ROWID""",
)

#: A bounded walk as the CTE ``w`` of steps: ``{start}`` may filter the start nodes (``value``),
#: ``{follow}`` is the filter of the edges a node may be left by.
WALK_CTE = """
WITH RECURSIVE w(node, hops, prev, edge) AS (
    SELECT value, 0, NULL, NULL FROM json_each(?){start}
    UNION
    SELECT a.other_id, w.hops + 1, w.node, a.edge_id
    FROM w JOIN graph_adjacency AS a ON a.node_id = w.node
    WHERE w.hops < ? AND a.edge_id IN (
        SELECT b.edge_id FROM graph_adjacency AS b WHERE b.node_id = w.node {follow}
        ORDER BY b.confidence DESC, b.edge_id LIMIT ?
    )
)"""
#: The steps of a walk.
WALK_SQL = WALK_CTE + "\nSELECT node, hops, prev, edge FROM w"
#: The bodies a traversal returns, as two JSON arrays (one parse each; NULL for none): of the
#: nodes and of the edges whose ids are in two JSON lists, each looked up by its primary key;
#: and the nodes' packed vectors, as a JSON array of ``[id, hex]``.
NEIGHBOURHOOD_SQL = """SELECT
    (SELECT '[' || group_concat(n.body, ',') || ']' FROM graph_nodes AS n WHERE n.id IN (SELECT value FROM json_each(?1))),
    (SELECT '[' || group_concat(g.body, ',') || ']' FROM graph_edges AS g WHERE g.id IN (SELECT value FROM json_each(?2))),
    (SELECT json_group_array(json_array(v.id, hex(v.embedding))) FROM graph_nodes AS v
        WHERE v.id IN (SELECT value FROM json_each(?1)) AND v.embedding IS NOT NULL)"""

#: The trigram index of the nodes' text (migration ``m009_graph_node_text``), and which node each
#: of its rows is of (its own rowids: those of ``graph_nodes`` may change on ``VACUUM``).
NODE_TEXT_TABLES: tuple[str, ...] = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS graph_node_text USING fts5(hay, tokenize = 'trigram')",
    "CREATE TABLE IF NOT EXISTS graph_node_text_ids (text_rowid INTEGER PRIMARY KEY, node_id TEXT NOT NULL UNIQUE)",
    # a node's text goes with it (``INSERT OR REPLACE`` fires no delete trigger: see ``_put_node``)
    """CREATE TRIGGER IF NOT EXISTS graph_node_text_gone AFTER DELETE ON graph_nodes BEGIN
        DELETE FROM graph_node_text WHERE rowid IN (SELECT text_rowid FROM graph_node_text_ids WHERE node_id = old.id);
        DELETE FROM graph_node_text_ids WHERE node_id = old.id;
    END""",
)

#: Which entries each node's and edge's quotes name (migration ``m010_graph_evidence``), for
#: ``find_by_evidence``: written with the record, dropped with it by the triggers.
EVIDENCE_TABLES: tuple[str, ...] = (
    """CREATE TABLE IF NOT EXISTS graph_evidence (
        entry_id TEXT NOT NULL, edge INTEGER NOT NULL, record_id TEXT NOT NULL, PRIMARY KEY (entry_id, edge, record_id)
    ) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS graph_evidence_by_record ON graph_evidence (record_id, edge)",
    """CREATE TRIGGER IF NOT EXISTS graph_node_evidence_gone AFTER DELETE ON graph_nodes BEGIN
        DELETE FROM graph_evidence WHERE record_id = old.id AND edge = 0;
    END""",
    """CREATE TRIGGER IF NOT EXISTS graph_edge_evidence_gone AFTER DELETE ON graph_edges BEGIN
        DELETE FROM graph_evidence WHERE record_id = old.id AND edge = 1;
    END""",
    # the records written before
    "DELETE FROM graph_evidence",
    """INSERT OR IGNORE INTO graph_evidence
        SELECT json_extract(q.value, '$.entry_id'), 0, n.id FROM graph_nodes AS n, json_each(n.body, '$.evidence') AS q
        WHERE json_extract(q.value, '$.entry_id') IS NOT NULL""",
    """INSERT OR IGNORE INTO graph_evidence
        SELECT json_extract(q.value, '$.entry_id'), 1, e.id FROM graph_edges AS e, json_each(e.body, '$.evidence') AS q
        WHERE json_extract(q.value, '$.entry_id') IS NOT NULL""",
)

#: The records of ``{table}`` quoting the entries of a JSON list (by the evidence index: the unary
#: ``+`` keeps the planner off the agent index, which would read every node of the agent).
BY_EVIDENCE_SQL = (
    "SELECT body FROM {table} WHERE +agent_id = ? AND id IN"
    " (SELECT record_id FROM graph_evidence WHERE edge = ? AND entry_id IN (SELECT value FROM json_each(?)))"
)

#: The node rows queries read: the body and the packed vector.
_NODE_COLUMNS = "body, embedding"

_CHUNK = 500
#: An edge's scope key (:func:`~cogitator_memory.items.records.scope_key`) read from its body.
_EDGE_SCOPE_KEY = " || char(31) || ".join(
    ["json_extract(e.body, '$.scope.agent_id')"]
    + [f"ifnull(json_extract(e.body, '$.scope.{part}'), '')" for part in ("user_id", "project_id", "thread_id")]
)


def _chunks(values: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(values), _CHUNK):
        yield values[start : start + _CHUNK]


def _node(body: str, blob: bytes | None) -> GraphNode:
    node = GraphNode.model_validate_json(body, context=TRUSTED)
    if blob is not None:
        node.embedding = unpack_vector(blob)
    return node


def _nodes(rows: Iterable[Sequence[Any]]) -> list[GraphNode]:
    """The nodes of ``(body, embedding)`` rows."""
    return [_node(body, blob) for body, blob in rows]


def pack_node_vectors(db: sqlite3.Connection) -> None:
    """Add the column ``embedding`` to ``graph_nodes`` and move the vectors of the nodes written
    before into it, packed (migration ``m013_graph_node_vectors``; it may run again)."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(graph_nodes)")}
    if "embedding" not in columns:  # it may run again on a file that has it
        db.execute("ALTER TABLE graph_nodes ADD COLUMN embedding BLOB")
    rows = db.execute("SELECT id, body FROM graph_nodes WHERE json_extract(body, '$.embedding') IS NOT NULL")
    for node_id, body in rows.fetchall():
        data = json.loads(body)
        vector = data.pop("embedding")
        db.execute(
            "UPDATE graph_nodes SET body = ?, embedding = ? WHERE id = ?",
            (json.dumps(data, ensure_ascii=False, separators=(",", ":")), pack_vector(vector), node_id),
        )


#: The index a search by meaning reads the nodes' sign codes from (migration
#: ``m016_graph_node_codes``): every column its conditions name, and the code.
NODE_CODES_INDEX = (
    "CREATE INDEX IF NOT EXISTS graph_nodes_codes ON graph_nodes (agent_id, scope_key, type, origin, confidence, code)"
)


def code_node_vectors(db: sqlite3.Connection) -> None:
    """Add the column ``code`` to ``graph_nodes`` (a node's sign code,
    :func:`~cogitator_memory.graph.nearest.vector_code`), code the vectors of the nodes written
    before and index the codes (migration ``m016_graph_node_codes``; it may run again)."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(graph_nodes)")}
    if "code" not in columns:
        db.execute("ALTER TABLE graph_nodes ADD COLUMN code BLOB")
    last = 0
    while True:
        batch = db.execute(
            "SELECT rowid, embedding FROM graph_nodes WHERE rowid > ? AND embedding IS NOT NULL ORDER BY rowid LIMIT 4096",
            (last,),
        ).fetchall()
        if not batch:
            break
        db.executemany(
            "UPDATE graph_nodes SET code = ? WHERE rowid = ?",
            [(vector_code(unpack_vector(blob)), rowid) for rowid, blob in batch],
        )
        last = int(batch[-1][0])
    db.execute(NODE_CODES_INDEX)


def text_match(text: str) -> str | None:
    """The FTS5 trigram query of nodes whose text may hold ``text`` (a phrase: the substring),
    or None when ``text`` is under three characters (trigrams cannot find it)."""
    words = text.casefold()
    if len(words) < 3:
        return None
    return '"' + words.replace('"', '""') + '"'


def index_node_texts(db: sqlite3.Connection) -> None:
    """Make ``graph_node_text`` (when this SQLite has the trigram tokenizer) and fill it from
    the nodes already written (migration ``m009_graph_node_text``)."""
    try:
        db.execute(NODE_TEXT_TABLES[0])
    except sqlite3.OperationalError:  # no FTS5 or no trigram tokenizer: the filter scans
        return
    for statement in NODE_TEXT_TABLES[1:]:
        db.execute(statement)
    db.execute("DELETE FROM graph_node_text")  # made from scratch, even when run again
    db.execute("DELETE FROM graph_node_text_ids")
    for (body,) in db.execute("SELECT body FROM graph_nodes").fetchall():
        _index_text(db, GraphNode.model_validate_json(body, context=TRUSTED))


def _index_text(db: sqlite3.Connection, node: GraphNode) -> None:
    """Index ``node``'s text, in place of what it had (its rows are written in this order)."""
    row = db.execute("SELECT text_rowid FROM graph_node_text_ids WHERE node_id = ?", (node.id,)).fetchone()
    if row is None:
        rowid = db.execute("INSERT INTO graph_node_text_ids (node_id) VALUES (?)", (node.id,)).lastrowid
    else:
        rowid = row[0]
        db.execute("DELETE FROM graph_node_text WHERE rowid = ?", (rowid,))
    db.execute("INSERT INTO graph_node_text (rowid, hay) VALUES (?, ?)", (rowid, node_haystack(node)))


def _put_evidence(db: sqlite3.Connection, record: GraphNode | GraphEdge, edge: int) -> None:
    db.execute("DELETE FROM graph_evidence WHERE record_id = ? AND edge = ?", (record.id, edge))
    entries = sorted({q.entry_id for q in record.evidence if q.entry_id is not None})
    db.executemany("INSERT INTO graph_evidence VALUES (?, ?, ?)", [(e, edge, record.id) for e in entries])


def _marks(count: int) -> str:
    return ",".join("?" * count)


def walk_filter(walk: Walk) -> tuple[str, list[Any]]:
    """The SQL filter on ``b`` (a ``graph_adjacency`` row) of the edges ``walk`` follows."""
    sql = {"outgoing": " AND b.out = 1", "incoming": " AND b.inc = 1", "both": ""}[walk.direction]
    params: list[Any] = []
    if walk.types is not None:
        sql += f" AND b.type IN ({_marks(len(walk.types))})"
        params.extend(sorted(walk.types))
    if walk.min_confidence > 0:
        sql += " AND b.confidence >= ?"
        params.append(walk.min_confidence)
    if not walk.include_inferred:
        sql += " AND b.inferred = 0"
    if walk.scope_keys is not None:
        keys = sorted(walk.scope_keys)
        marks = _marks(len(keys))
        sql += (
            f" AND b.other_id IN (SELECT n.id FROM graph_nodes AS n WHERE n.id = b.other_id AND n.scope_key IN ({marks}))"
            f" AND b.edge_id IN (SELECT e.id FROM graph_edges AS e WHERE e.id = b.edge_id AND {_EDGE_SCOPE_KEY} IN ({marks}))"
        )
        params.extend([*keys, *keys])
    return sql, params


def _adjacency(edge: GraphEdge) -> list[tuple[Any, ...]]:
    both = int(edge.bidirectional)
    common = (edge.type, edge.confidence, int(edge.inferred))
    return [
        (edge.source_id, edge.id, edge.target_id, 1, both, *common),
        (edge.target_id, edge.id, edge.source_id, both, 1, *common),
    ]


class SQLiteGraph(GraphStoreMixin):
    """The graph part of :class:`~cogitator_memory.engines.sqlite.threads.SQLiteAdapter`."""

    if TYPE_CHECKING:  # provided by the adapter

        @property
        def connection(self) -> sqlite3.Connection: ...

        def _write(self) -> AbstractContextManager[sqlite3.Connection]: ...

    def _has_text_index(self, db: sqlite3.Connection) -> bool:
        found = getattr(self, "_text_index", None)
        if found is None:
            row = db.execute("SELECT 1 FROM sqlite_master WHERE name = 'graph_node_text'").fetchone()
            found = row is not None
            self._text_index = found
        return found

    def _put_node(self, db: sqlite3.Connection, node: GraphNode) -> None:
        db.execute(
            "INSERT OR REPLACE INTO graph_nodes (id, agent_id, scope_key, type, confidence, origin, body, embedding,"
            " code) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                node.id,
                node.agent_id,
                node.scope_key,
                node.type,
                node.confidence,
                node.origin,
                node_body(node),
                None if node.embedding is None else pack_vector(node.embedding),
                None if node.embedding is None else vector_code(node.embedding),
            ),
        )
        if self._has_text_index(db):
            _index_text(db, node)
        _put_evidence(db, node, 0)
        db.execute("DELETE FROM graph_node_names WHERE node_id = ?", (node.id,))
        db.executemany(
            "INSERT INTO graph_node_names (name_key, node_id) VALUES (?, ?)", [(k, node.id) for k in node.name_keys]
        )

    @staticmethod
    def _put_edge(db: sqlite3.Connection, edge: GraphEdge) -> None:
        db.execute(
            "INSERT OR REPLACE INTO graph_edges (id, agent_id, source_id, target_id, type, confidence, origin, body)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                edge.id,
                edge.agent_id,
                edge.source_id,
                edge.target_id,
                edge.type,
                edge.confidence,
                edge.origin,
                edge.dump_json(),
            ),
        )
        db.execute(
            "DELETE FROM graph_adjacency WHERE edge_id = ? AND node_id IN (?, ?)",
            (edge.id, edge.source_id, edge.target_id),
        )
        db.executemany("INSERT OR REPLACE INTO graph_adjacency VALUES (?, ?, ?, ?, ?, ?, ?, ?)", _adjacency(edge))
        _put_evidence(db, edge, 1)

    @staticmethod
    def _delete_edges(db: sqlite3.Connection, where: str, params: Sequence[Any]) -> int:
        rows = db.execute(f"SELECT id, source_id, target_id FROM graph_edges WHERE {where}", params).fetchall()
        db.executemany(
            "DELETE FROM graph_adjacency WHERE node_id = ? AND edge_id = ?",
            [(r[n], r[0]) for r in rows for n in (1, 2)],
        )
        db.executemany("DELETE FROM graph_edges WHERE id = ?", [(r[0],) for r in rows])
        return len(rows)

    async def _write_graph(self, changes: GraphChanges) -> None:
        with self._write() as db:
            for table, records in (("graph_nodes", changes.add_nodes), ("graph_edges", changes.add_edges)):
                for chunk in _chunks([r.id for r in records]):
                    taken = db.execute(f"SELECT id FROM {table} WHERE id IN ({_marks(len(chunk))})", chunk).fetchone()
                    if taken is not None:
                        raise ConflictError(f"graph {table[6:-1]} id is taken: {taken[0]}")
            for table, records in (("graph_nodes", changes.put_nodes), ("graph_edges", changes.put_edges)):
                for record in records:
                    row = db.execute(
                        f"SELECT ifnull(json_extract(body, '$.version'), 1) FROM {table} WHERE id = ?", (record.id,)
                    ).fetchone()
                    if row is None:
                        raise NotFoundError(f"graph {table[6:-1]} not found: {record.id}")
                    check_next_version(table[6:-1], record.id, int(row[0]), record.version)
            for node in [*changes.add_nodes, *changes.put_nodes]:
                self._put_node(db, node)
            for edge in [*changes.add_edges, *changes.put_edges]:
                self._put_edge(db, edge)
            for chunk in _chunks(changes.delete_edges):
                self._delete_edges(db, f"id IN ({_marks(len(chunk))})", chunk)
            for chunk in _chunks(changes.delete_nodes):
                marks = _marks(len(chunk))
                self._delete_edges(db, f"source_id IN ({marks}) OR target_id IN ({marks})", [*chunk, *chunk])
                db.execute(f"DELETE FROM graph_node_names WHERE node_id IN ({marks})", chunk)
                db.execute(f"DELETE FROM graph_nodes WHERE id IN ({marks})", chunk)

    def _read(self, sql: str, params: Sequence[Any]) -> list[str]:
        return [row[0] for row in self.connection.execute(sql, params)]

    async def _get_nodes(self, ids: list[str]) -> list[GraphNode]:
        db = self.connection
        return [
            node
            for c in _chunks(ids)
            for node in _nodes(db.execute(f"SELECT {_NODE_COLUMNS} FROM graph_nodes WHERE id IN ({_marks(len(c))})", c))
        ]

    async def _get_edges(self, ids: list[str]) -> list[GraphEdge]:
        bodies = [
            b
            for c in _chunks(ids)
            for b in self._read(f"SELECT body FROM graph_edges WHERE id IN ({_marks(len(c))})", c)
        ]
        return [GraphEdge.model_validate_json(b, context=TRUSTED) for b in bodies]

    def _node_where(self, query: NodeQuery) -> tuple[str, list[Any]]:
        """The SQL conditions on ``graph_nodes`` of ``query`` (its text through the text index
        when the file has one; :meth:`NodeQuery.matches` checks the text again)."""
        match = None if query.text is None else text_match(query.text)
        indexed = match is not None and self._has_text_index(self.connection)
        # with the text index or a name, a unary + keeps the planner on that index (not on the
        # agent's or scope's index, which would visit every node in scope)
        plus = "+" if indexed or query.name_key is not None else ""
        where, params = [f"{plus}agent_id = ?", "confidence >= ?"], [query.agent_id, query.min_confidence]
        for column, values in (("scope_key", query.scope_keys), ("type", query.types), ("origin", query.origins)):
            if values is not None:
                where.append(f"{plus}{column} IN ({_marks(len(values))})")
                params.extend(sorted(values))
        if query.name_key is not None:
            where.append("id IN (SELECT node_id FROM graph_node_names WHERE name_key = ?)")
            params.append(query.name_key)
        if indexed:
            where.append(
                "id IN (SELECT i.node_id FROM graph_node_text AS f JOIN graph_node_text_ids AS i"
                " ON i.text_rowid = f.rowid WHERE f.hay MATCH ?)"
            )
            params.append(match)
        return " AND ".join(where), params

    async def _query_nodes(self, query: NodeQuery) -> list[GraphNode]:
        where, params = self._node_where(query)
        nodes = _nodes(self.connection.execute(f"SELECT {_NODE_COLUMNS} FROM graph_nodes WHERE {where}", params))
        return [n for n in nodes if query.matches(n)] if query.text is not None else nodes

    async def _count_nodes(self, query: NodeQuery) -> int:
        if query.text is not None:  # the text filter's last check is made on the nodes read
            return await super()._count_nodes(query)
        where, params = self._node_where(query)
        return int(self.connection.execute(f"SELECT count(*) FROM graph_nodes WHERE {where}", params).fetchone()[0])

    async def _nearest_nodes(
        self, query: NodeQuery, vector: list[float], limit: int, least: float
    ) -> list[tuple[GraphNode, float]]:
        # the ids and packed vectors alone are read and scored (graph.nearest), and only the
        # nodes kept are read whole: with 100,000 facts every node was read and scored one by
        # one, 18-26 s a recall
        if query.text is not None:
            return await super()._nearest_nodes(query, vector, limit, least)
        where, params = self._node_where(query)
        db = self.connection
        hint = " INDEXED BY graph_nodes_codes" if query.name_key is None else ""
        coded = db.execute(
            f"SELECT rowid, code FROM graph_nodes{hint} WHERE {where} AND code IS NOT NULL", params
        ).fetchall()
        if len(coded) > EXACT_UP_TO:  # the vectors of the codes' shortlist alone
            keep = code_shortlist(coded, vector, shortlist_size(limit))
            rows = []
            for start in range(0, len(keep), _CHUNK):
                chunk = keep[start : start + _CHUNK]
                sql = f"SELECT id, embedding FROM graph_nodes WHERE rowid IN ({_marks(len(chunk))})"
                rows += db.execute(sql, chunk).fetchall()
        else:
            rows = db.execute(
                f"SELECT id, embedding FROM graph_nodes WHERE {where} AND embedding IS NOT NULL", params
            ).fetchall()
        chosen = nearest_packed(rows, vector, limit, least)
        if chosen is None:  # pragma: no cover (numpy missing)
            return await super()._nearest_nodes(query, vector, limit, least)
        by_id = {n.id: n for n in await self._get_nodes([node_id for node_id, _ in chosen])}
        return [(by_id[i], score) for i, score in chosen if i in by_id and query.matches(by_id[i])]

    async def _query_edges(self, query: EdgeQuery) -> list[GraphEdge]:
        where, params = ["agent_id = ?", "confidence >= ?"], [query.agent_id, query.min_confidence]
        for column, values in (("type", query.types), ("origin", query.origins)):
            if values is not None:
                where.append(f"{column} IN ({_marks(len(values))})")
                params.extend(sorted(values))
        if query.between is not None:
            where.append("source_id = ? AND target_id = ?")
            params.extend(query.between)
        if query.node_ids is not None:
            ids = sorted(query.node_ids)
            ends = {"outgoing": ["source_id"], "incoming": ["target_id"], "both": ["source_id", "target_id"]}[
                query.direction
            ]
            where.append("(" + " OR ".join(f"{end} IN (SELECT value FROM json_each(?))" for end in ends) + ")")
            params.extend([json.dumps(ids)] * len(ends))
        bodies = self._read(f"SELECT body FROM graph_edges WHERE {' AND '.join(where)}", params)
        return [GraphEdge.model_validate_json(b, context=TRUSTED) for b in bodies]

    async def _walk_steps(self, walk: Walk) -> list[tuple[str, int, str | None, str | None]]:
        follow, params = walk_filter(walk)
        sql = WALK_SQL.format(start="", follow=follow)
        rows = self.connection.execute(sql, [json.dumps(list(walk.start_ids)), walk.max_depth, *params, walk.fan_out])
        return [(r[0], int(r[1]), r[2], r[3]) for r in rows]

    async def _neighbourhood(self, walk: Walk) -> TraversalResult:
        # Two queries: the walk's steps from the start nodes that exist (and that the scope sees),
        # what it keeps of them worked out here (quicker than in SQL), then the bodies it keeps.
        follow, params = walk_filter(walk)
        start = " WHERE EXISTS (SELECT 1 FROM graph_nodes AS n WHERE n.id = value{seen})"
        keys = [] if walk.scope_keys is None else sorted(walk.scope_keys)
        seen = f" AND n.scope_key IN ({_marks(len(keys))})" if keys else ""
        sql = WALK_SQL.format(start=start.format(seen=seen), follow=follow)
        starts = json.dumps(list(walk.start_ids))
        db = self.connection
        steps = db.execute(sql, [starts, *keys, walk.max_depth, *params, walk.fan_out]).fetchall()
        if not steps:
            return TraversalResult(nodes=[], edges=[], depths={})
        kept, depths, edge_ids = neighbourhood_from_steps(steps, walk.max_nodes)
        found: dict[str, GraphNode] = {}
        edges: list[GraphEdge] = []
        # in chunks, so that no array nears SQLite's longest string (large bodies, many of them)
        for node_ids, edge_chunk in zip_longest(_chunks(kept), _chunks(edge_ids), fillvalue=()):
            node_array, edge_array, vectors = db.execute(
                NEIGHBOURHOOD_SQL, (json.dumps(list(node_ids)), json.dumps(list(edge_chunk)))
            ).fetchone()
            found.update((n.id, n) for n in stored_nodes(node_array))
            edges.extend(stored_edges(edge_array))
            for node_id, packed in json.loads(vectors):
                if node_id in found:
                    found[node_id].embedding = unpack_vector(bytes.fromhex(packed))
        nodes = [found[n] for n in kept if n in found]
        edges.sort(key=lambda e: e.id)
        return TraversalResult(nodes=nodes, edges=edges, depths={n.id: depths[n.id] for n in nodes})

    async def _by_evidence(self, agent_id: str, entry_ids: frozenset[str]) -> tuple[list[GraphNode], list[GraphEdge]]:
        entries = json.dumps(sorted(entry_ids))
        db = self.connection
        node_sql = BY_EVIDENCE_SQL.format(table="graph_nodes").replace("SELECT body", f"SELECT {_NODE_COLUMNS}", 1)
        nodes = db.execute(node_sql, (agent_id, 0, entries))
        edges = self._read(BY_EVIDENCE_SQL.format(table="graph_edges"), (agent_id, 1, entries))
        return _nodes(nodes), [GraphEdge.model_validate_json(b, context=TRUSTED) for b in edges]

    async def _clear_graph(self, agent_id: str) -> tuple[int, int]:
        with self._write() as db:
            edges = self._delete_edges(db, "agent_id = ?", (agent_id,))
            db.execute(
                "DELETE FROM graph_node_names WHERE node_id IN (SELECT id FROM graph_nodes WHERE agent_id = ?)",
                (agent_id,),
            )
            nodes = db.execute("DELETE FROM graph_nodes WHERE agent_id = ?", (agent_id,)).rowcount
        return nodes, edges

    async def _graph_counts(self, agent_id: str) -> tuple[dict[str, int], dict[str, int]]:
        db = self.connection
        nodes = db.execute("SELECT type, count(*) FROM graph_nodes WHERE agent_id = ? GROUP BY type", (agent_id,))
        node_counts = {str(t): int(c) for t, c in nodes}
        edges = db.execute("SELECT type, count(*) FROM graph_edges WHERE agent_id = ? GROUP BY type", (agent_id,))
        return node_counts, {str(t): int(c) for t, c in edges}


__all__ = [
    "BY_EVIDENCE_SQL",
    "EVIDENCE_TABLES",
    "GRAPH_TABLES",
    "NEIGHBOURHOOD_SQL",
    "NODE_TEXT_TABLES",
    "WALK_CTE",
    "WALK_SQL",
    "SQLiteGraph",
    "code_node_vectors",
    "index_node_texts",
    "pack_node_vectors",
    "pack_vector",
    "text_match",
    "unpack_vector",
    "walk_filter",
]
