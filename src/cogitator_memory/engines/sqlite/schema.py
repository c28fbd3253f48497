"""The SQLite schema as named migrations, tracked by ``PRAGMA user_version``.

Migration ``n`` moves a file from version ``n - 1`` to ``n``; each runs in its own
``BEGIN IMMEDIATE`` transaction with the version bump and a row in ``cogitator_migrations``,
so a file is never left between versions and two processes opening a new file do not both
migrate it. Later capabilities (memory items, files, vectors) append migrations here.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ...errors import StoreUnavailableError
from ...search.tokenizer import index_terms


@dataclass(frozen=True, slots=True)
class Migration:
    """One step of the schema: its version, a name, and what it does."""

    version: int
    name: str
    apply: Callable[[sqlite3.Connection], None]


def _m001_initial(db: sqlite3.Connection) -> None:
    for statement in (
        """CREATE TABLE IF NOT EXISTS cogitator_migrations (
            version INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            applied_at TEXT NOT NULL
        )""",
        """CREATE TABLE threads (
            id TEXT PRIMARY KEY,
            agent_id TEXT NOT NULL,
            metadata TEXT NOT NULL DEFAULT '{}',
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            active_leaf_id TEXT,
            next_seq INTEGER NOT NULL DEFAULT 1
        )""",
        "CREATE INDEX threads_by_update ON threads (updated_at DESC, id DESC)",
        "CREATE INDEX threads_by_agent ON threads (agent_id, updated_at DESC, id DESC)",
        """CREATE TABLE entries (
            id TEXT PRIMARY KEY,
            thread_id TEXT NOT NULL,
            parent_id TEXT,
            seq INTEGER NOT NULL,
            type TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            body TEXT NOT NULL
        )""",
        "CREATE UNIQUE INDEX entries_by_thread ON entries (thread_id, seq)",
        "CREATE INDEX entries_by_parent ON entries (parent_id) WHERE parent_id IS NOT NULL",
    ):
        db.execute(statement)


def _m002_embeddings(db: sqlite3.Connection) -> None:
    """The embedding store of :class:`~cogitator_memory.engines.sqlite.vectors.SQLiteEmbeddingAdapter`.

    Vectors are float32 BLOBs; the scope keys of the metadata are copied into columns so that
    scoped searches use indexes; ``embeddings_fts`` (FTS5) holds the tokenized content under
    the same rowid; ``embedding_state`` keeps the vector size and a generation number that
    every write moves, so caches of any connection know when to reload.
    """
    for statement in (
        """CREATE TABLE embeddings (
            rowid INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            source_id TEXT NOT NULL,
            source_type TEXT NOT NULL,
            content TEXT NOT NULL,
            vector BLOB NOT NULL,
            metadata TEXT NOT NULL DEFAULT '{}',
            agent_id TEXT,
            user_id TEXT,
            thread_id TEXT,
            created_at INTEGER NOT NULL
        )""",
        "CREATE INDEX embeddings_by_source ON embeddings (source_id, created_at)",
        "CREATE INDEX embeddings_by_type ON embeddings (source_type)",
        "CREATE INDEX embeddings_by_agent ON embeddings (agent_id)",
        "CREATE INDEX embeddings_by_user ON embeddings (user_id)",
        "CREATE INDEX embeddings_by_thread ON embeddings (thread_id)",
        "CREATE VIRTUAL TABLE embeddings_fts USING fts5(terms, tokenize = 'unicode61 remove_diacritics 0')",
        "CREATE TABLE embedding_state (key TEXT PRIMARY KEY, value INTEGER NOT NULL)",
        "INSERT INTO embedding_state (key, value) VALUES ('generation', 0)",
    ):
        db.execute(statement)


def index_embedding_terms(db: sqlite3.Connection, rows: Iterable[tuple[int, list[str]]]) -> None:
    """Index embeddings for keyword search, given as ``(rowid, terms of the content)``: one
    ``embedding_terms`` row per distinct term with its count (their length in terms goes in
    ``embeddings.term_count``, which the caller writes)."""
    postings = [(term, rowid, tf) for rowid, terms in rows for term, tf in Counter(terms).items()]
    postings.sort()  # in key order: a batch then walks the index once instead of jumping about
    db.executemany("INSERT INTO embedding_terms (term, rid, tf) VALUES (?, ?, ?)", postings)


def drop_embedding_terms(db: sqlite3.Connection, where: str, args: Sequence[Any] = ()) -> None:
    """Take the embeddings matching ``where`` (SQL conditions on ``embeddings``, with their
    ``args``) out of the keyword index, through the index of the terms by embedding
    (``embedding_terms_by_rid``, migration m008): their content is not read again. Call it
    before the embeddings themselves are deleted, in the same transaction."""
    db.execute(f"DELETE FROM embedding_terms WHERE rid IN (SELECT rowid FROM embeddings WHERE {where})", tuple(args))


def _m003_keyword_index(db: sqlite3.Connection) -> None:
    """Keyword search ranked by the package's own BM25, whose ``k1`` and ``b`` can be chosen
    (FTS5's ``bm25()`` fixes them): ``embedding_terms`` holds how often each term occurs in each
    embedding, ``embeddings.term_count`` each embedding's length in terms. They replace the FTS5
    table of m002; the embeddings already stored are indexed from their content.
    """
    db.execute(
        """CREATE TABLE embedding_terms (
            term TEXT NOT NULL,
            rid INTEGER NOT NULL,
            tf INTEGER NOT NULL,
            PRIMARY KEY (term, rid)
        ) WITHOUT ROWID"""
    )
    db.execute("ALTER TABLE embeddings ADD COLUMN term_count INTEGER NOT NULL DEFAULT 0")
    last = 0
    while True:
        chunk = db.execute(
            "SELECT rowid, content FROM embeddings WHERE rowid > ? ORDER BY rowid LIMIT 1000", (last,)
        ).fetchall()
        if not chunk:
            break
        indexed = [(rowid, index_terms(content)) for rowid, content in chunk]
        index_embedding_terms(db, indexed)
        db.executemany("UPDATE embeddings SET term_count = ? WHERE rowid = ?", [(len(t), r) for r, t in indexed])
        last = chunk[-1][0]
    db.execute("DROP TABLE embeddings_fts")


def _m004_memory_items(db: sqlite3.Connection) -> None:
    """Memory items (:mod:`cogitator_memory.engines.sqlite.items`): the fields queries filter by as
    indexed columns (times in microseconds; ``start_us`` is ``valid_from``, else ``recorded_at``),
    the retrieval counters and version as columns, the rest as JSON in ``body``; and
    ``memory_item_evidence``, which entries each item quotes, for the cascades that follow entries.
    """
    for statement in (
        """CREATE TABLE memory_items (
            rid INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            agent_id TEXT NOT NULL,
            user_id TEXT,
            project_id TEXT,
            thread_id TEXT,
            scope_key TEXT NOT NULL,
            subject_key TEXT NOT NULL,
            slot_key TEXT NOT NULL,
            kind TEXT NOT NULL,
            status TEXT NOT NULL,
            start_us INTEGER NOT NULL,
            valid_to_us INTEGER,
            recorded_us INTEGER NOT NULL,
            expired_us INTEGER,
            times_retrieved INTEGER NOT NULL DEFAULT 0,
            last_retrieved_us INTEGER,
            version INTEGER NOT NULL,
            body TEXT NOT NULL
        )""",
        "CREATE INDEX memory_items_by_scope ON memory_items (scope_key, recorded_us)",
        "CREATE INDEX memory_items_by_slot ON memory_items (scope_key, slot_key)",
        "CREATE INDEX memory_items_by_subject ON memory_items (scope_key, subject_key)",
        "CREATE INDEX memory_items_by_agent ON memory_items (agent_id, user_id, recorded_us)",
        "CREATE INDEX memory_items_by_thread ON memory_items (thread_id) WHERE thread_id IS NOT NULL",
        """CREATE TABLE memory_item_evidence (
            entry_id TEXT NOT NULL,
            rid INTEGER NOT NULL,
            PRIMARY KEY (entry_id, rid)
        ) WITHOUT ROWID""",
        "CREATE INDEX memory_item_evidence_by_item ON memory_item_evidence (rid)",
    ):
        db.execute(statement)


def _m005_memory_files(db: sqlite3.Connection) -> None:
    """Memory files (:mod:`cogitator_memory.engines.sqlite.files`): one row per version, the fields
    queries filter by as indexed columns, the text in ``content`` and the rest as JSON in ``body``.
    ``(scope_key, path, sequence)`` is unique, so a store never keeps two versions at one
    sequence; ``head`` marks the newest of each scope and path, under a partial unique index that
    heads are read through without reading history.
    """
    for statement in (
        """CREATE TABLE memory_file_versions (
            rid INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            agent_id TEXT NOT NULL,
            user_id TEXT,
            project_id TEXT,
            thread_id TEXT,
            scope_key TEXT NOT NULL,
            path TEXT NOT NULL,
            sequence INTEGER NOT NULL,
            head INTEGER NOT NULL,
            place_entry_id TEXT,
            renamed_from TEXT,
            created_us INTEGER NOT NULL,
            content TEXT,
            body TEXT NOT NULL
        )""",
        "CREATE UNIQUE INDEX memory_file_versions_by_path ON memory_file_versions (scope_key, path, sequence)",
        "CREATE UNIQUE INDEX memory_file_heads ON memory_file_versions (scope_key, path) WHERE head = 1",
        "CREATE INDEX memory_file_versions_by_agent ON memory_file_versions (agent_id, user_id, project_id)",
        "CREATE INDEX memory_file_versions_by_thread ON memory_file_versions (thread_id) WHERE thread_id IS NOT NULL",
        "CREATE INDEX memory_file_versions_by_entry ON memory_file_versions (place_entry_id)"
        " WHERE place_entry_id IS NOT NULL",
        "CREATE INDEX memory_file_versions_by_origin ON memory_file_versions (scope_key, renamed_from)"
        " WHERE renamed_from IS NOT NULL",
    ):
        db.execute(statement)


def _m006_graph(db: sqlite3.Connection) -> None:
    """The knowledge graph of :mod:`cogitator_memory.engines.sqlite.graph` (its ``GRAPH_TABLES``)."""
    from .graph import GRAPH_TABLES

    for statement in GRAPH_TABLES:
        db.execute(statement)


#: The thread metadata's ``user_id`` and "lists users in ``memory_user_ids``", as indexed by
#: :func:`_m007_user_threads` (queries must use the same expressions for the indexes to serve).
USER_ID_EXPR = "json_extract(metadata, '$.user_id')"
USERS_LISTED_EXPR = "json_type(metadata, '$.memory_user_ids') = 'array'"


def _m007_user_threads(db: sqlite3.Connection) -> None:
    """Find a user's threads without reading every thread (what a user's erasure deletes)."""
    db.execute(f"CREATE INDEX IF NOT EXISTS threads_by_user ON threads ({USER_ID_EXPR})")
    db.execute(f"CREATE INDEX IF NOT EXISTS threads_with_users ON threads (id) WHERE {USERS_LISTED_EXPR}")


def _m008_terms_by_embedding(db: sqlite3.Connection) -> None:
    """Find an embedding's keyword-index terms by its rowid, so a delete takes them without
    tokenizing its content again (before, each went by its ``(term, rid)`` key)."""
    db.execute("CREATE INDEX IF NOT EXISTS embedding_terms_by_rid ON embedding_terms (rid)")


def _m009_graph_node_text(db: sqlite3.Connection) -> None:
    """A trigram index of the graph nodes' text, so the ``text`` filter of ``query_nodes`` reads
    only the nodes that may hold it (:func:`~cogitator_memory.engines.sqlite.graph.index_node_texts`)."""
    from .graph import index_node_texts

    index_node_texts(db)


def _m010_graph_evidence(db: sqlite3.Connection) -> None:
    """Which entries the graph's quotes name, so deleting entries finds the nodes and edges
    quoting them without reading the agent's whole graph (filled from the records written before)."""
    from .graph import EVIDENCE_TABLES

    for statement in EVIDENCE_TABLES:
        db.execute(statement)


def _m011_recall_index(db: sqlite3.Connection) -> None:
    """The recall index (:mod:`cogitator_memory.engines.sqlite.recall`): its records, their
    inverted index of terms, its statistics and its writers' state. The records of what the file
    held before are written by the indexer (``cogitator-memory reindex``, or the catch-up that
    :class:`~cogitator_memory.index.RecallIndexer` runs when memory connects)."""
    from .recall import RECALL_TABLES

    for statement in RECALL_TABLES:
        db.execute(statement)


def _m012_embedding_codes(db: sqlite3.Connection) -> None:
    """The binary codes the embedding store's vector search scans
    (:mod:`cogitator_memory.engines.sqlite.codes`), written for the embeddings already stored."""
    from .codes import CODES_TABLES, code_all

    for statement in CODES_TABLES:
        db.execute(statement)
    code_all(db)


def _m013_graph_node_vectors(db: sqlite3.Connection) -> None:
    """Graph nodes keep their vectors packed in a column of their own, out of the JSON body
    (:func:`~cogitator_memory.engines.sqlite.graph.pack_node_vectors`)."""
    from .graph import pack_node_vectors

    pack_node_vectors(db)


def _m014_recall_search_indexes(db: sqlite3.Connection) -> None:
    """What a keyword search joins its postings to, under indexes of its own: the records' scope
    and length, and the records that are not turns (see
    :data:`~cogitator_memory.engines.sqlite.recall.RECALL_SEARCH_INDEXES`). Built in one pass over
    ``recall_records``."""
    from .recall import RECALL_SEARCH_INDEXES

    for statement in RECALL_SEARCH_INDEXES:
        db.execute(statement)


def _m015_items_by_start(db: sqlite3.Connection) -> None:
    """Memory items by scope, kind and when each started to hold, so the latest started of a
    scope are read from the index's end (a build's facts: ``order="start"``), not by a sort of
    the whole scope."""
    db.execute(ITEMS_BY_START)


def _m016_graph_node_codes(db: sqlite3.Connection) -> None:
    """Graph nodes keep their vectors' sign codes in a column of their own, under an index a
    search by meaning reads them from (:func:`~cogitator_memory.engines.sqlite.graph.code_node_vectors`)."""
    from .graph import code_node_vectors

    code_node_vectors(db)


def _m017_recall_term_freqs(db: sqlite3.Connection) -> None:
    """A recall record's terms each once with their counts packed beside them (see
    :data:`~cogitator_memory.engines.sqlite.recall.RECALL_TERM_FREQS`); records written before
    are read as they are."""
    from .recall import RECALL_TERM_FREQS

    columns = {row[1] for row in db.execute("PRAGMA table_info(recall_records)")}
    if "term_freqs" not in columns:  # it may run again on a file that has it
        db.execute(RECALL_TERM_FREQS)


#: The index :func:`_m015_items_by_start` adds.
ITEMS_BY_START = (
    "CREATE INDEX IF NOT EXISTS memory_items_by_start ON memory_items (scope_key, kind, start_us, recorded_us, id)"
)

MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "m001_initial", _m001_initial),
    Migration(2, "m002_embeddings", _m002_embeddings),
    Migration(3, "m003_keyword_index", _m003_keyword_index),
    Migration(4, "m004_memory_items", _m004_memory_items),
    Migration(5, "m005_memory_files", _m005_memory_files),
    Migration(6, "m006_graph", _m006_graph),
    Migration(7, "m007_user_threads", _m007_user_threads),
    Migration(8, "m008_terms_by_embedding", _m008_terms_by_embedding),
    Migration(9, "m009_graph_node_text", _m009_graph_node_text),
    Migration(10, "m010_graph_evidence", _m010_graph_evidence),
    Migration(11, "m011_recall_index", _m011_recall_index),
    Migration(12, "m012_embedding_codes", _m012_embedding_codes),
    Migration(13, "m013_graph_node_vectors", _m013_graph_node_vectors),
    Migration(14, "m014_recall_search_indexes", _m014_recall_search_indexes),
    Migration(15, "m015_items_by_start", _m015_items_by_start),
    Migration(16, "m016_graph_node_codes", _m016_graph_node_codes),
    Migration(17, "m017_recall_term_freqs", _m017_recall_term_freqs),
)
SCHEMA_VERSION = MIGRATIONS[-1].version


def migrate(db: sqlite3.Connection, migrations: tuple[Migration, ...] = MIGRATIONS) -> int:
    """Bring the file to the newest version; returns the version it was at.

    A file newer than this package knows is refused, since an older process would misread it.
    """
    start = int(db.execute("PRAGMA user_version").fetchone()[0])
    newest = migrations[-1].version if migrations else 0
    if start > newest:
        raise StoreUnavailableError(
            f"the SQLite file is at schema version {start}, newer than this cogitator-memory knows "
            f"({newest}): upgrade the package"
        )
    for migration in migrations:
        if migration.version <= start:
            continue
        db.execute("BEGIN IMMEDIATE")
        try:
            current = int(db.execute("PRAGMA user_version").fetchone()[0])
            if current >= migration.version:  # another process got here first
                db.execute("ROLLBACK")
                continue
            migration.apply(db)
            db.execute(
                "INSERT INTO cogitator_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                (migration.version, migration.name, datetime.now(UTC).isoformat()),
            )
            db.execute(f"PRAGMA user_version = {int(migration.version)}")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
    return start


def applied_migrations(db: sqlite3.Connection) -> list[tuple[int, str]]:
    """The (version, name) of every migration the file went through."""
    return [(int(v), str(n)) for v, n in db.execute("SELECT version, name FROM cogitator_migrations ORDER BY version")]


__all__ = [
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "USERS_LISTED_EXPR",
    "USER_ID_EXPR",
    "Migration",
    "applied_migrations",
    "drop_embedding_terms",
    "index_embedding_terms",
    "migrate",
]
