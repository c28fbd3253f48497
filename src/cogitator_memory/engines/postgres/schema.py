"""The PostgreSQL schema as named migrations, tracked in ``<schema>.cogitator_schema_migrations``.

Migration ``n`` moves a schema from version ``n - 1`` to ``n``. :func:`migrate` first reads the
version without taking any lock or changing anything; only when it is behind does it take a
transaction-scoped advisory lock on the schema (``pg_advisory_xact_lock``), read the version
again (another process may have upgraded it meanwhile) and apply what is still pending, each
migration recorded with its name in the same transaction. So a ``connect()`` changes tables
only after an upgrade, and two processes connecting at once to a new database do not race:
one migrates, the other waits on the lock and then finds nothing to do.

Versions:

1. ``m001_initial``: threads and entries, entries ordered by ``seq`` (no tree yet).
2. ``m002_trees``: ``entries.parent_id``, ``threads.active_leaf_id`` and ``threads.next_seq``;
   the entries written before trees are chained in the order they were added and each thread's
   active leaf becomes its newest entry.
3. ``m003_memory_items``: ``memory_items`` (:mod:`cogitator_memory.engines.postgres.items`), the
   fields item queries filter by as indexed columns beside the item's JSON ``body``.
4. ``m004_memory_files``: ``memory_file_versions`` (:mod:`cogitator_memory.engines.postgres.files`),
   one row per version, unique by scope, path and sequence, heads under a partial unique index.
5. to 8.: the knowledge graph (``m005_graph``), threads by user (``m006_user_threads``), graph
   node text (``m007_graph_node_text``) and evidence (``m008_graph_evidence``).
9. ``m009_recall_index``: the recall index (:mod:`cogitator_memory.engines.postgres.recall`).
10. ``m010_recall_terms_text``: a recall record's terms as one text (read back in one piece).
11. ``m011_recall_records_inline``: recall records kept uncompressed in their rows (read back
    without decompressing).
12. ``m012_recall_not_turns``: the recall records that are not turns under a partial index (a
    keyword search of items and facts does not read turns' rows).
13. ``m013_items_by_start``: memory items by scope, kind and start (the latest started of a scope
    read from an index's end).
14. ``m014_graph_node_vectors``: a graph node's vector packed in a column of its own, and its sign
    code under an index (a search by meaning reads those, not every node's body).
15. ``m015_recall_term_freqs``: a recall record's terms each once, their counts packed beside them.
16. ``m016_graph_node_bodies_without_vectors``: a graph node's vector kept packed alone, no longer
    also in its JSON body (which every read parsed): the nodes written before m014 packed (a
    Python step), then the vectors taken out of the other bodies.

The SQL here (the migrations, and :class:`ThreadSql`, the statements of the thread store) is
plain text built from a quoted schema name; nothing in this module but :func:`migrate`,
:func:`schema_version` and :func:`applied_migrations` does I/O (and a migration's Python
``step``, which :func:`migrate` runs).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...errors import InvalidArgumentError, StoreUnavailableError
from .graph import EVIDENCE_STATEMENTS, GRAPH_TABLES, NODE_BODY_STATEMENTS, NODE_TEXT_STATEMENTS, pack_node_vectors
from .recall import RECALL_NOT_TURNS, RECALL_RECORDS_INLINE, RECALL_TABLES, RECALL_TERM_FREQS, RECALL_TERMS_TEXT
from .sql import quote_ident

if TYPE_CHECKING:
    from psycopg import AsyncConnection

MIGRATIONS_TABLE = "cogitator_schema_migrations"
#: First key of the advisory lock a migration holds (the second is a hash of the schema name).
ADVISORY_LOCK_CLASS = 0x636F67  # "cog"

_SCHEMA_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_$]{0,62}$")


def check_schema_name(name: object) -> str:
    """A schema name: a letter or ``_``, then letters, digits, ``_`` or ``$``; at most 63 characters."""
    if not isinstance(name, str) or not _SCHEMA_NAME.match(name):
        raise InvalidArgumentError(
            "schema", f"must be a PostgreSQL identifier (letters, digits, _ and $, at most 63), got {name!r}"
        )
    return name


@dataclass(frozen=True, slots=True)
class Migration:
    """One step of the schema: its version, its name, and the statements it runs (``{s}`` is the
    schema); ``step``, when given, is Python run first (given the connection and the schema, in
    the migration's transaction), for what SQL cannot do as well (see ``m016``)."""

    version: int
    name: str
    statements: tuple[str, ...]
    step: Callable[[AsyncConnection[Any], str], Awaitable[None]] | None = None

    def sql(self, schema: str) -> list[str]:
        """The statements with the quoted schema filled in."""
        quoted = quote_ident(schema)
        return [statement.replace("{s}", quoted) for statement in self.statements]


M001_INITIAL = Migration(
    1,
    "m001_initial",
    (
        """CREATE TABLE {s}.threads (
            id text PRIMARY KEY,
            agent_id text NOT NULL,
            metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
            created_at timestamptz NOT NULL,
            updated_at timestamptz NOT NULL
        )""",
        "CREATE INDEX threads_by_update ON {s}.threads (updated_at DESC, id DESC)",
        "CREATE INDEX threads_by_agent ON {s}.threads (agent_id, updated_at DESC, id DESC)",
        """CREATE TABLE {s}.entries (
            id text PRIMARY KEY,
            thread_id text NOT NULL,
            seq bigint NOT NULL,
            type text NOT NULL,
            content jsonb NOT NULL,
            created_at timestamptz NOT NULL
        )""",
        "CREATE UNIQUE INDEX entries_by_thread ON {s}.entries (thread_id, seq)",
    ),
)

M002_TREES = Migration(
    2,
    "m002_trees",
    (
        "ALTER TABLE {s}.entries ADD COLUMN parent_id text",
        "ALTER TABLE {s}.threads ADD COLUMN active_leaf_id text, ADD COLUMN next_seq bigint NOT NULL DEFAULT 1",
        # Entries written before trees: chained in the order they were added.
        """UPDATE {s}.entries AS e SET parent_id = chained.prev_id
           FROM (SELECT id, lag(id) OVER (PARTITION BY thread_id ORDER BY seq) AS prev_id FROM {s}.entries) AS chained
           WHERE e.id = chained.id AND chained.prev_id IS NOT NULL""",
        """UPDATE {s}.threads AS t SET active_leaf_id = newest.id, next_seq = newest.seq + 1
           FROM (SELECT DISTINCT ON (thread_id) thread_id, id, seq FROM {s}.entries
                 ORDER BY thread_id, seq DESC) AS newest
           WHERE t.id = newest.thread_id""",
        "CREATE INDEX entries_by_parent ON {s}.entries (parent_id) WHERE parent_id IS NOT NULL",
    ),
)

M003_MEMORY_ITEMS = Migration(
    3,
    "m003_memory_items",
    (
        # Keys compare byte by byte (COLLATE "C"): ids order as in Python, and btrees stay cheap.
        # ``start_at`` is valid_from, else recorded_at; ``entry_ids`` the entries the evidence quotes;
        # ``body`` the whole item as JSON text (text, not jsonb, which refuses "\u0000") but for
        # the retrieval counters and version, which are columns of their own.
        """CREATE TABLE {s}.memory_items (
            id text COLLATE "C" PRIMARY KEY,
            agent_id text COLLATE "C" NOT NULL,
            user_id text COLLATE "C",
            project_id text COLLATE "C",
            thread_id text COLLATE "C",
            scope_key text COLLATE "C" NOT NULL,
            subject_key text COLLATE "C" NOT NULL,
            slot_key text COLLATE "C" NOT NULL,
            kind text COLLATE "C" NOT NULL,
            status text COLLATE "C" NOT NULL,
            start_at timestamptz NOT NULL,
            valid_to timestamptz,
            recorded_at timestamptz NOT NULL,
            expired_at timestamptz,
            entry_ids text[] COLLATE "C" NOT NULL DEFAULT '{}',
            times_retrieved bigint NOT NULL DEFAULT 0,
            last_retrieved_at timestamptz,
            version integer NOT NULL,
            body text NOT NULL
        )""",
        "CREATE INDEX memory_items_by_scope ON {s}.memory_items (scope_key, status, start_at)",
        "CREATE INDEX memory_items_by_slot ON {s}.memory_items (scope_key, slot_key, status)",
        "CREATE INDEX memory_items_by_subject ON {s}.memory_items (scope_key, subject_key)",
        "CREATE INDEX memory_items_by_agent ON {s}.memory_items (agent_id, user_id, recorded_at)",
        "CREATE INDEX memory_items_by_project ON {s}.memory_items (agent_id, project_id) WHERE project_id IS NOT NULL",
        "CREATE INDEX memory_items_by_thread ON {s}.memory_items (agent_id, thread_id) WHERE thread_id IS NOT NULL",
        "CREATE INDEX memory_items_by_entry ON {s}.memory_items USING gin (entry_ids)",
    ),
)

M004_MEMORY_FILES = Migration(
    4,
    "m004_memory_files",
    (
        # One row per version (:mod:`cogitator_memory.engines.postgres.files`). Paths compare byte
        # by byte (COLLATE "C"), so the paths under a directory are one range of an index; the
        # text is a column of its own (heads read without it skip it), the rest JSON text.
        """CREATE TABLE {s}.memory_file_versions (
            id text COLLATE "C" PRIMARY KEY,
            agent_id text COLLATE "C" NOT NULL,
            user_id text COLLATE "C",
            project_id text COLLATE "C",
            thread_id text COLLATE "C",
            scope_key text COLLATE "C" NOT NULL,
            path text COLLATE "C" NOT NULL,
            sequence bigint NOT NULL,
            head boolean NOT NULL,
            place_entry_id text COLLATE "C",
            renamed_from text COLLATE "C",
            created_at timestamptz NOT NULL,
            content text,
            body text NOT NULL
        )""",
        # A second version at one sequence is refused, whichever process writes it.
        "CREATE UNIQUE INDEX memory_file_versions_by_path ON {s}.memory_file_versions (scope_key, path, sequence)",
        # The newest version of each scope and path: what stands is read through this alone.
        "CREATE UNIQUE INDEX memory_file_heads ON {s}.memory_file_versions (scope_key, path) WHERE head",
        "CREATE INDEX memory_file_versions_by_agent ON {s}.memory_file_versions (agent_id, user_id, project_id)",
        "CREATE INDEX memory_file_versions_by_thread ON {s}.memory_file_versions (agent_id, thread_id)"
        " WHERE thread_id IS NOT NULL",
        "CREATE INDEX memory_file_versions_by_entry ON {s}.memory_file_versions (place_entry_id)"
        " WHERE place_entry_id IS NOT NULL",
        "CREATE INDEX memory_file_versions_by_origin ON {s}.memory_file_versions (scope_key, renamed_from)"
        " WHERE renamed_from IS NOT NULL",
    ),
)


M005_GRAPH = Migration(5, "m005_graph", GRAPH_TABLES)

M006_USER_THREADS = Migration(
    6,
    "m006_user_threads",
    (
        # A user's threads without reading every thread (what a user's erasure deletes).
        "CREATE INDEX IF NOT EXISTS threads_by_user ON {s}.threads ((metadata->>'user_id'))",
        "CREATE INDEX IF NOT EXISTS threads_with_users ON {s}.threads"
        " USING gin ((metadata->'memory_user_ids') jsonb_path_ops)",
    ),
)


#: The casefolded text of each graph node beside it, trigram-indexed when ``pg_trgm`` can be had,
#: so the ``text`` filter of ``query_nodes`` reads only the nodes that may hold the text.
M007_GRAPH_NODE_TEXT = Migration(7, "m007_graph_node_text", NODE_TEXT_STATEMENTS)


#: Which entries the graph's quotes name, so deleting entries finds the nodes and edges quoting
#: them without reading the agent's whole graph.
M008_GRAPH_EVIDENCE = Migration(8, "m008_graph_evidence", EVIDENCE_STATEMENTS)


#: The recall index (:mod:`cogitator_memory.engines.postgres.recall`): its records, their inverted
#: index of terms with each term's record count, its counters and its writers' state. What the
#: schema held before is indexed by the indexer (``cogitator-memory reindex``, or its catch-up).
M009_RECALL_INDEX = Migration(9, "m009_recall_index", RECALL_TABLES)


#: A recall record's terms as one text (see :data:`~cogitator_memory.engines.postgres.recall.RECALL_TERMS_TEXT`).
M010_RECALL_TERMS_TEXT = Migration(10, "m010_recall_terms_text", RECALL_TERMS_TEXT)

#: Recall records kept whole in their rows (see :data:`~cogitator_memory.engines.postgres.recall.RECALL_RECORDS_INLINE`).
M011_RECALL_RECORDS_INLINE = Migration(11, "m011_recall_records_inline", RECALL_RECORDS_INLINE)

#: Records other than turns under a partial index (see :data:`~cogitator_memory.engines.postgres.recall.RECALL_NOT_TURNS`).
M012_RECALL_NOT_TURNS = Migration(12, "m012_recall_not_turns", RECALL_NOT_TURNS)

#: Memory items by scope, kind and when each started to hold: the latest started of a scope are
#: read from the index's end (a build's facts: ``order="start"``), not by a sort of the scope.
M013_ITEMS_BY_START = Migration(
    13,
    "m013_items_by_start",
    (
        "CREATE INDEX IF NOT EXISTS memory_items_by_start ON {s}.memory_items (scope_key, kind, start_at, recorded_at, id)",
    ),
)

#: A node's vector packed in a column of its own (:func:`~cogitator_memory.graph.nearest.pack_vector`;
#: empty: none) and its sign code (:func:`~cogitator_memory.graph.nearest.vector_code`), under an
#: index a search by meaning reads the codes from, instead of every node's body. Nodes written
#: before kept ``NULL`` in both until their first search packed them; ``m016`` packs the rest.
M014_GRAPH_NODE_VECTORS = Migration(
    14,
    "m014_graph_node_vectors",
    (
        "ALTER TABLE {s}.graph_nodes ADD COLUMN IF NOT EXISTS vector bytea",
        "ALTER TABLE {s}.graph_nodes ADD COLUMN IF NOT EXISTS code bytea",
        "CREATE INDEX IF NOT EXISTS graph_nodes_codes ON {s}.graph_nodes (agent_id, scope_key)"
        " INCLUDE (id, type, origin, confidence, code)",
        "CREATE INDEX IF NOT EXISTS graph_nodes_unpacked ON {s}.graph_nodes (agent_id) WHERE vector IS NULL",
    ),
)

#: A recall record's terms each once, their counts packed beside them (see
#: :data:`~cogitator_memory.engines.postgres.recall.RECALL_TERM_FREQS`).
M015_RECALL_TERM_FREQS = Migration(15, "m015_recall_term_freqs", RECALL_TERM_FREQS)

#: A node's vector kept packed alone, no longer also in its JSON body, which every read of the
#: node parsed (384 floats as text). First, in Python, the nodes written before ``m014`` (``vector``
#: NULL) are read and written again as a write writes them now, 1,000 a statement
#: (:func:`~cogitator_memory.engines.postgres.graph.pack_node_vectors`: the vector packed by
#: :func:`~cogitator_memory.graph.nearest.pack_vector`, float32 or float64 as its values allow,
#: which SQL would have to redo); then, in SQL, the vectors packed since ``m014`` are taken out of
#: their bodies (:data:`~cogitator_memory.engines.postgres.graph.NODE_BODY_STATEMENTS`). 10,000
#: nodes of 384 dimensions took 3.0 s written before ``m014``, 2.0 s written since.
M016_GRAPH_NODE_BODIES_WITHOUT_VECTORS = Migration(
    16, "m016_graph_node_bodies_without_vectors", NODE_BODY_STATEMENTS, step=pack_node_vectors
)

MIGRATIONS: tuple[Migration, ...] = (
    M001_INITIAL,
    M002_TREES,
    M003_MEMORY_ITEMS,
    M004_MEMORY_FILES,
    M005_GRAPH,
    M006_USER_THREADS,
    M007_GRAPH_NODE_TEXT,
    M008_GRAPH_EVIDENCE,
    M009_RECALL_INDEX,
    M010_RECALL_TERMS_TEXT,
    M011_RECALL_RECORDS_INLINE,
    M012_RECALL_NOT_TURNS,
    M013_ITEMS_BY_START,
    M014_GRAPH_NODE_VECTORS,
    M015_RECALL_TERM_FREQS,
    M016_GRAPH_NODE_BODIES_WITHOUT_VECTORS,
)
SCHEMA_VERSION = MIGRATIONS[-1].version


def _table_sql(schema: str) -> str:
    return (
        f"CREATE TABLE IF NOT EXISTS {quote_ident(schema)}.{MIGRATIONS_TABLE} ("
        " version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
    )


async def schema_version(conn: AsyncConnection[Any], schema: str) -> int:
    """The schema's version: 0 when it has no migrations table (or does not exist)."""
    cur = await conn.execute("SELECT to_regclass(%s)", (f"{quote_ident(schema)}.{MIGRATIONS_TABLE}",))
    row = await cur.fetchone()
    if row is None or row[0] is None:
        return 0
    cur = await conn.execute(f"SELECT coalesce(max(version), 0) FROM {quote_ident(schema)}.{MIGRATIONS_TABLE}")
    found = await cur.fetchone()
    return int(found[0]) if found is not None else 0


async def migrate(
    conn: AsyncConnection[Any], schema: str, migrations: Sequence[Migration] = MIGRATIONS
) -> tuple[int, int]:
    """Bring ``schema`` to the newest version of ``migrations``; returns (version before, after).

    ``conn`` must be in autocommit mode. Nothing is written when the schema is up to date; a
    schema newer than this package knows is refused, since an older process would misread it.
    """
    newest = migrations[-1].version if migrations else 0
    start = await schema_version(conn, schema)
    if start > newest:
        raise StoreUnavailableError(
            f"postgres schema {schema!r} is at version {start}, newer than this cogitator-memory knows "
            f"({newest}): upgrade the package"
        )
    if start == newest:
        return start, start
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (ADVISORY_LOCK_CLASS, schema))
        await conn.execute(f"CREATE SCHEMA IF NOT EXISTS {quote_ident(schema)}")
        await conn.execute(_table_sql(schema))
        current = await schema_version(conn, schema)
        if current > newest:
            raise StoreUnavailableError(f"postgres schema {schema!r} was moved to version {current} meanwhile")
        for migration in migrations:
            if migration.version <= current:
                continue
            if migration.step is not None:
                await migration.step(conn, schema)
            for statement in migration.sql(schema):
                await conn.execute(statement)
            await conn.execute(
                f"INSERT INTO {quote_ident(schema)}.{MIGRATIONS_TABLE} (version, name) VALUES (%s, %s)",
                (migration.version, migration.name),
            )
    return start, newest


#: Columns every thread read selects, in the order ``thread_from_row`` expects.
THREAD_COLUMNS = "id, agent_id, metadata, created_at, updated_at, active_leaf_id"
#: Columns every entry read selects, in the order ``entry_from_row`` expects.
ENTRY_COLUMNS = "id, thread_id, parent_id, seq, created_at, content"


class ThreadSql:
    """The thread-store statements of one schema, built once (plain strings, so psycopg prepares them)."""

    def __init__(self, schema: str) -> None:
        s = quote_ident(schema)
        self.threads = f"{s}.threads"
        self.entries = f"{s}.entries"
        self.upsert_thread = (
            f"INSERT INTO {s}.threads AS t (id, agent_id, metadata, created_at, updated_at)"
            " VALUES (%s, %s, %s::jsonb, %s, %s)"
            " ON CONFLICT (id) DO UPDATE SET metadata = t.metadata || EXCLUDED.metadata, updated_at = EXCLUDED.updated_at"
            f" RETURNING {THREAD_COLUMNS}"
        )
        self.get_thread = f"SELECT {THREAD_COLUMNS} FROM {s}.threads WHERE id = %s"
        self.lock_thread = f"SELECT {THREAD_COLUMNS} FROM {s}.threads WHERE id = %s FOR UPDATE"
        self.update_thread = (
            f"UPDATE {s}.threads SET metadata = CASE WHEN %s THEN %s::jsonb ELSE metadata || %s::jsonb END,"
            f" updated_at = %s WHERE id = %s RETURNING {THREAD_COLUMNS}"
        )
        self.add_entry = f"""
            WITH t AS (
                SELECT active_leaf_id, next_seq FROM {s}.threads WHERE id = %(tid)s FOR UPDATE
            ), p AS (
                SELECT CASE WHEN %(root)s THEN NULL ELSE coalesce(%(parent)s::text, t.active_leaf_id) END AS parent_id,
                       t.next_seq AS seq,
                       (SELECT e.thread_id FROM {s}.entries e WHERE e.id = %(parent)s::text FOR KEY SHARE)
                           AS parent_owner
                FROM t
            ), ins AS (
                INSERT INTO {s}.entries (id, thread_id, parent_id, seq, type, content, created_at)
                SELECT %(id)s, %(tid)s, p.parent_id, p.seq, %(type)s, %(content)s::jsonb, %(now)s FROM p
                WHERE %(parent)s::text IS NULL OR p.parent_owner = %(tid)s
                RETURNING seq
            ), upd AS (
                UPDATE {s}.threads AS th SET next_seq = ins.seq + 1,
                    active_leaf_id = CASE WHEN %(activate)s THEN %(id)s ELSE th.active_leaf_id END
                FROM ins WHERE th.id = %(tid)s
                RETURNING 1
            )
            SELECT p.parent_id, p.seq, p.parent_owner, (SELECT count(*) FROM upd) FROM p"""
        self.get_entry = f"SELECT {ENTRY_COLUMNS} FROM {s}.entries WHERE id = %s"
        self.get_entries_by_id = f"SELECT {ENTRY_COLUMNS} FROM {s}.entries WHERE id = ANY(%s::text[])"
        self.entry_owner = f"SELECT thread_id FROM {s}.entries WHERE id = %s"
        self.thread_exists = f"SELECT active_leaf_id FROM {s}.threads WHERE id = %s"
        self.lock_entry_thread = (
            f"SELECT t.id FROM {s}.threads t JOIN {s}.entries e ON e.thread_id = t.id WHERE e.id = %s FOR UPDATE OF t"
        )
        self.delete_entry = f"DELETE FROM {s}.entries WHERE id = %s RETURNING {ENTRY_COLUMNS}"
        self.reparent = f"UPDATE {s}.entries SET parent_id = %s WHERE thread_id = %s AND parent_id = %s"
        self.move_leaf = f"UPDATE {s}.threads SET active_leaf_id = %s WHERE id = %s AND active_leaf_id = %s"
        self.delete_entries = f"DELETE FROM {s}.entries WHERE thread_id = %s"
        self.delete_thread = f"DELETE FROM {s}.threads WHERE id = %s"
        self.clear_leaf = f"UPDATE {s}.threads SET active_leaf_id = NULL WHERE id = %s"
        self.set_leaf = f"UPDATE {s}.threads SET active_leaf_id = %s WHERE id = %s RETURNING {THREAD_COLUMNS}"
        # Branch walks stop after as many steps as the thread has seq numbers: a healthy branch is
        # shorter, so a row that deep (flagged) means parent links that loop (threads/damage.py).
        bound = f"bound AS (SELECT coalesce(max(seq), 0) + 1 AS most FROM {s}.entries WHERE thread_id = %(tid)s)"
        self.is_ancestor = (
            f"WITH RECURSIVE {bound}, up(id, parent_id, depth) AS ("
            f" SELECT id, parent_id, 1 FROM {s}.entries WHERE id = %(leaf)s AND thread_id = %(tid)s"
            f" UNION ALL SELECT e.id, e.parent_id, up.depth + 1 FROM {s}.entries e JOIN up ON e.id = up.parent_id"
            f" WHERE up.depth < (SELECT most FROM bound)"
            f") SELECT id = %(entry)s, depth FROM up WHERE id = %(entry)s OR depth >= (SELECT most FROM bound) LIMIT 1"
        )
        self._bound = bound
        self.replace_entry = f"UPDATE {s}.entries SET content = %s::jsonb WHERE id = %s"
        self.insert_fork = (
            f"INSERT INTO {s}.threads (id, agent_id, metadata, created_at, updated_at, active_leaf_id, next_seq)"
            f" VALUES (%s, %s, %s::jsonb, %s, %s, %s, %s) ON CONFLICT (id) DO NOTHING RETURNING {THREAD_COLUMNS}"
        )
        self.insert_entry = (
            f"INSERT INTO {s}.entries (id, thread_id, parent_id, seq, type, content, created_at)"
            " VALUES (%s, %s, %s, %s, %s, %s::jsonb, %s)"
        )
        self.set_metadata = f"UPDATE {s}.threads SET metadata = %s::jsonb, updated_at = %s WHERE id = %s"
        self._cache: dict[tuple[Any, ...], str] = {}

    def path(self, *, by_leaf: bool, typed: bool, before: bool, limited: bool) -> str:
        """The recursive read of one branch, leaf first, with the filters asked for; each row ends
        with whether the walk went deeper than a healthy branch can, and its depth."""
        key = ("path", by_leaf, typed, before, limited)
        found = self._cache.get(key)
        if found is not None:
            return found
        if by_leaf:
            anchor = f"SELECT {ENTRY_COLUMNS}, type, 1 AS depth FROM {self.entries} WHERE id = %(leaf)s AND thread_id = %(tid)s"
        else:
            anchor = (
                f"SELECT {ENTRY_COLUMNS}, type, 1 AS depth FROM {self.entries}"
                f" WHERE id = (SELECT active_leaf_id FROM {self.threads} WHERE id = %(tid)s) AND thread_id = %(tid)s"
            )
        cols = ", ".join(f"e.{c.strip()}" for c in ENTRY_COLUMNS.split(","))
        deep = "depth >= (SELECT most FROM bound)"
        sql = (
            f"WITH RECURSIVE {self._bound}, path AS ({anchor}"
            f" UNION ALL SELECT {cols}, e.type, p.depth + 1 FROM {self.entries} e"
            f" JOIN path p ON e.id = p.parent_id AND e.thread_id = p.thread_id"
            f" WHERE p.depth < (SELECT most FROM bound)"
            f") SELECT {ENTRY_COLUMNS}, {deep}, depth FROM path WHERE (true"
        )
        if typed:
            sql += " AND type = ANY(%(types)s::text[])"
        if before:
            sql += " AND created_at < %(before)s"
        sql += f") OR {deep}"
        if limited:
            sql += " LIMIT %(limit)s"
        self._cache[key] = sql
        return sql

    def entries_of(self, *, typed: bool, after: bool, before: bool, limited: bool) -> str:
        """The read of a thread's entries (every branch), newest first when limited."""
        key = ("entries", typed, after, before, limited)
        found = self._cache.get(key)
        if found is not None:
            return found
        sql = f"SELECT {ENTRY_COLUMNS} FROM {self.entries} WHERE thread_id = %(tid)s"
        if typed:
            sql += " AND type = ANY(%(types)s::text[])"
        if after:
            sql += " AND created_at > %(after)s"
        if before:
            sql += " AND created_at < %(before)s"
        sql += " ORDER BY seq DESC LIMIT %(limit)s" if limited else " ORDER BY seq"
        self._cache[key] = sql
        return sql

    def scan_threads(self, *, agent: bool, after_t: bool, before_t: bool, cursor: bool) -> str:
        """A page of threads in (updated_at desc, id desc) order."""
        key = ("scan", agent, after_t, before_t, cursor)
        found = self._cache.get(key)
        if found is not None:
            return found
        sql = f"SELECT {THREAD_COLUMNS} FROM {self.threads} WHERE true"
        if agent:
            sql += " AND agent_id = %(agent)s"
        if after_t:
            sql += " AND updated_at > %(updated_after)s"
        if before_t:
            sql += " AND updated_at < %(updated_before)s"
        if cursor:
            sql += " AND (updated_at, id) < (%(cursor_t)s, %(cursor_id)s)"
        sql += " ORDER BY updated_at DESC, id DESC LIMIT %(limit)s"
        self._cache[key] = sql
        return sql


async def applied_migrations(conn: AsyncConnection[Any], schema: str) -> list[tuple[int, str]]:
    """The (version, name) of every migration the schema went through, oldest first."""
    if await schema_version(conn, schema) == 0:
        return []
    cur = await conn.execute(f"SELECT version, name FROM {quote_ident(schema)}.{MIGRATIONS_TABLE} ORDER BY version")
    return [(int(v), str(n)) for v, n in await cur.fetchall()]


__all__ = [
    "ADVISORY_LOCK_CLASS",
    "ENTRY_COLUMNS",
    "MIGRATIONS",
    "MIGRATIONS_TABLE",
    "SCHEMA_VERSION",
    "THREAD_COLUMNS",
    "Migration",
    "ThreadSql",
    "applied_migrations",
    "check_schema_name",
    "migrate",
    "quote_ident",
    "schema_version",
]
