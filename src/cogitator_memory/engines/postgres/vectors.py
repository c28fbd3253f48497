"""The pgvector embedding store of :class:`~cogitator_memory.engines.postgres.adapter.PostgresAdapter`.

Embeddings live in ``<schema>.embeddings`` beside the threads: the vector in a pgvector column
(``vector(n)``; ``halfvec(n)`` for 2,001 to 4,000 dimensions, which ``vector`` cannot index), an
HNSW cosine index (usable from the first row: HNSW needs no training data), a ``tsvector`` of the
content's terms for keyword search, and the metadata as jsonb.

The table is set up at ``connect()``, after the thread schema is current: the ``vector``
extension is created when the server has it and the role may create it, then the table is created
(under the schema's advisory lock) at the configured size (``dimensions``, which ``Memory`` takes
from its embedding service) when it is missing, or an existing one is adopted with its vector
size. An adapter given no size makes no table: the first vectors added make it at their size (a
store opened for its threads alone, as the command line's thread commands do, leaves the size to
the embedder). An existing table of another size than configured fails the connect
(:class:`~cogitator_memory.errors.InvalidArgumentError` naming both sizes and the ways out). When
pgvector cannot be had, the store still connects: threads and entries work, every embedding call
returns a failed result naming the reason, and :meth:`vector_status` says why.

The table has btree indexes on the metadata keys searches filter by (``metadata->>'user_id'``,
``->>'thread_id'``, ``->>'agent_id'``, ``->>'index'``), added to an older table at connect: their
statistics tell the planner how many rows a filter keeps, so a user's search goes through the
HNSW index (without them it guessed 1% and compared every vector of the user), and a thread's, or
the item vectors' among many turns', reads its rows by index.

After a large write the table is analysed (``ANALYZE``) at once: when the rows this adapter
added since the last analyse reach :data:`ANALYZE_MIN_ROWS` and a fifth of the table. Until a
table has statistics the planner guesses how many rows a filter keeps, and right after a bulk
load it took the HNSW index for a selective filter, which found 90% of the matching rows;
autovacuum analyses only a minute or more later.

Searches run with ``hnsw.ef_search`` = ``ef_search`` (default 100), raised to the requested limit
when larger (at most 1,000, pgvector's ceiling), and, on pgvector 0.8+, with iterative index scans
(``relaxed_order``, the hits re-sorted after),
so a filtered search keeps scanning the index until it has ``limit`` matching rows. Keyword
search ranks with PostgreSQL's ``ts_rank`` over the terms of
:func:`~cogitator_memory.search.tokenizer.index_terms`, so it tokenizes as every other store
(CJK bigrams, stopwords dropped); its scores are ``ts_rank`` values, not BM25.

The SQL building and filter translation here are plain functions (no I/O).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, NotRequired, TypedDict, TypeVar

from ...errors import ConflictError, InvalidArgumentError, StoreUnavailableError
from ...search.tokenizer import index_terms
from ...threads.records import built_record
from ...vectors.base import EmbeddingStoreMixin
from ...vectors.records import SCOPE_KEYS, DeletionFilter, Embedding, EmbeddingFilter, ScoredEmbedding, VectorHit
from .schema import ADVISORY_LOCK_CLASS
from .sql import quote_ident

if TYPE_CHECKING:
    from psycopg import AsyncConnection

logger = logging.getLogger("cogitator_memory")

T = TypeVar("T")

#: Largest size pgvector indexes as ``vector``; as ``halfvec``; stores at all.
VECTOR_INDEX_MAX = 2000
HALFVEC_INDEX_MAX = 4000
PGVECTOR_MAX = 16000
#: pgvector's ceiling for ``hnsw.ef_search``; the adapter's default (pgvector's own is 40, which
#: measured recall@10 of 0.91 on 100,000 x 384 vectors here, against 0.97 at 100).
MAX_EF_SEARCH = 1000
DEFAULT_EF_SEARCH = 100
#: Terms longer than this are cut (a tsvector lexeme holds at most 2 KB).
MAX_TERM_CHARS = 256
#: tsvector positions stop at 16,383.
MAX_POSITION = 16383
#: Most terms in one ``tsquery`` of a keyword search (see :func:`keyword_query_sql`).
TSQUERY_CHUNK = 2000
#: The table is analysed when the rows this adapter added since the last analyse reach both this
#: many and :data:`ANALYZE_GROWTH` of the rows the table had then (see ``_analyze_if_grown``).
ANALYZE_MIN_ROWS = 1000
ANALYZE_GROWTH = 0.2
#: The filter indexes of the embeddings table (name -> metadata key): the scope keys a search
#: filters by, and ``index`` (which of the product's indexes a vector belongs to: a turn's of the
#: message index, an item's); made with a new table and added to an older one at connect (see
#: :meth:`VectorLayout.filter_index_statements`).
FILTER_INDEXES: dict[str, str] = {
    "embeddings_by_user": "user_id",
    "embeddings_by_thread": "thread_id",
    "embeddings_by_index": "index",
}
#: The metadata keys of :data:`FILTER_INDEXES` besides the scope keys: a filter on one of them with
#: a text value is also written as ``metadata->>key = value``, which those indexes serve.
INDEXED_METADATA_KEYS = frozenset({"index"})

Storage = Literal["vector", "halfvec"]


class VectorStatus(TypedDict):
    """What :meth:`PostgresVectors.vector_status` reports.

    ``available`` with ``dimensions``, ``storage`` (``vector`` or ``halfvec``), ``indexed`` (an
    HNSW index exists) and ``pgvector`` (the extension's version); or not ``available`` with the
    ``reason``.
    """

    available: bool
    dimensions: NotRequired[int]
    storage: NotRequired[Storage]
    indexed: NotRequired[bool]
    pgvector: NotRequired[str]
    reason: NotRequired[str]


def parse_version(text: str) -> tuple[int, ...]:
    """``"0.8.6"`` as ``(0, 8, 6)`` (non-numeric parts count as 0)."""
    return tuple(int(part) if part.isdigit() else 0 for part in text.split("."))


@dataclass(frozen=True, slots=True)
class VectorLayout:
    """How one schema keeps its vectors, and the statements that follow from it."""

    schema: str
    ext_schema: str
    dimensions: int
    storage: Storage
    indexed: bool
    iterative_scan: bool
    version: str

    @staticmethod
    def plan(schema: str, ext_schema: str, version: str, dimensions: int) -> VectorLayout:
        """The layout of a new table of ``dimensions`` on pgvector ``version``."""
        if dimensions > PGVECTOR_MAX:
            raise StoreUnavailableError(
                f"pgvector stores at most {PGVECTOR_MAX} dimensions, the adapter is configured for {dimensions}"
            )
        v = parse_version(version)
        storage: Storage = "vector"
        indexed = dimensions <= VECTOR_INDEX_MAX
        if not indexed and dimensions <= HALFVEC_INDEX_MAX and v >= (0, 7):
            storage, indexed = "halfvec", True
        return VectorLayout(schema, ext_schema, dimensions, storage, indexed, v >= (0, 8), version)

    @property
    def table(self) -> str:
        """The qualified embeddings table."""
        return f"{quote_ident(self.schema)}.embeddings"

    @property
    def column_type(self) -> str:
        """The qualified type of the vector column."""
        return f"{quote_ident(self.ext_schema)}.{self.storage}({self.dimensions})"

    @property
    def distance(self) -> str:
        """The cosine distance operator, qualified so no search_path is needed."""
        return f"OPERATOR({quote_ident(self.ext_schema)}.<=>)"

    def query_vector(self, param: str) -> str:
        """A parameter holding :func:`vector_literal` text, cast to the column's type."""
        return f"%({param})s::{quote_ident(self.ext_schema)}.{self.storage}"

    def create_statements(self) -> list[str]:
        """The table and its indexes."""
        s = quote_ident(self.schema)
        statements = [
            f"""CREATE TABLE {self.table} (
                id text PRIMARY KEY,
                source_id text NOT NULL,
                source_type text NOT NULL,
                content text NOT NULL,
                metadata jsonb NOT NULL DEFAULT '{{}}'::jsonb,
                embedding {self.column_type} NOT NULL,
                terms tsvector NOT NULL,
                created_at timestamptz NOT NULL
            )""",
            f"CREATE INDEX embeddings_by_source ON {s}.embeddings (source_id)",
            f"CREATE INDEX embeddings_by_agent ON {s}.embeddings ((metadata->>'agent_id'))",
            f"CREATE INDEX embeddings_terms ON {s}.embeddings USING gin (terms)",
            *self.filter_index_statements(),
        ]
        if self.indexed:
            statements.append(self.index_statement())
        return statements

    def filter_index_statements(self, names: Sequence[str] | None = None) -> list[str]:
        """The btree indexes on the metadata keys searches filter by (:data:`FILTER_INDEXES`).

        They give the planner the statistics of those keys: without them it guessed that a
        user's filter keeps 1% of the rows and searched them exactly (every vector of the user
        compared, linear in history) instead of through the HNSW index; and a filter that does
        keep few rows (a thread, a small user in a large table, the item vectors among a million
        turns') reads them by index instead of filtering every row."""
        return [
            f"CREATE INDEX IF NOT EXISTS {name} ON {self.table} ((metadata->>'{FILTER_INDEXES[name]}'))"
            for name in (FILTER_INDEXES if names is None else names)
        ]

    def index_statement(self) -> str:
        """The HNSW cosine index."""
        ops = f"{quote_ident(self.ext_schema)}.{self.storage}_cosine_ops"
        return f"CREATE INDEX embeddings_hnsw ON {self.table} USING hnsw (embedding {ops})"


def vector_literal(vector: Sequence[float]) -> str:
    """A vector as pgvector's text form (``[1.0,2.5]``): cheaper to send than a float8[] parameter."""
    return "[" + ",".join(map(repr, vector)) + "]"


# --- text search ----------------------------------------------------------------------------


def _lexeme(term: str) -> str:
    return "'" + term[:MAX_TERM_CHARS].replace("\\", "\\\\").replace("'", "''") + "'"


def tsvector_literal(text: str) -> str:
    """The ``tsvector`` of ``text``'s index terms, with their positions (so ``ts_rank`` counts them)."""
    positions: dict[str, list[int]] = defaultdict(list)
    for i, term in enumerate(index_terms(text), start=1):
        slots = positions[term[:MAX_TERM_CHARS]]
        if len(slots) < 256:  # a lexeme keeps at most 256 positions
            slots.append(min(i, MAX_POSITION))
    return " ".join(f"{_lexeme(term)}:{','.join(map(str, dict.fromkeys(p)))}" for term, p in positions.items())


def _query_lexemes(terms: Sequence[str]) -> list[str]:
    return [_lexeme(term) for term in dict.fromkeys(t[:MAX_TERM_CHARS] for t in terms)]


def _balanced_or(level: list[str]) -> str:
    while len(level) > 2:
        paired = [f"({level[i]} | {level[i + 1]})" for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            paired.append(level[-1])
        level = paired
    return " | ".join(level)


def tsquery_literal(terms: Sequence[str]) -> str:
    """A ``tsquery`` matching any of ``terms`` (already normalized by ``index_terms``).

    The ORs are grouped as a balanced tree (``('a' | 'b') | ('c' | 'd')``), so the expression
    nests about log2(terms) deep: PostgreSQL walks a tsquery recursively, and a flat chain of
    ``|`` (which it nests one level per term) overflows its stack at some 50,000 terms, which a
    query of CJK text (a term per character pair) reaches."""
    return _balanced_or(_query_lexemes(terms))


def keyword_query_sql(terms: Sequence[str]) -> tuple[str, str, str, dict[str, Any]]:
    """The parts of a keyword search for ``terms``: FROM items, the match condition, the score
    and their parameters.

    The terms go in ``tsquery`` values of at most :data:`TSQUERY_CHUNK` terms each (PostgreSQL
    parses a tsquery in time growing with the square of its terms: 100,000 terms take seconds
    as one, a tenth of a second in chunks). A row matches when it matches any chunk; its score is
    the ``ts_rank`` of the whole query, which for a query of ORs is the sum over the query's terms
    divided by their number, so the chunks' ranks weighted by their sizes add up to it.
    """
    lexemes = _query_lexemes(terms)
    chunks = [lexemes[i : i + TSQUERY_CHUNK] for i in range(0, len(lexemes), TSQUERY_CHUNK)]
    params: dict[str, Any] = {f"kq{i}": _balanced_or(chunk) for i, chunk in enumerate(chunks)}
    froms = ", ".join(f"CAST(%(kq{i})s AS tsquery) AS kq{i}" for i in range(len(chunks)))
    match = "(" + " OR ".join(f"terms @@ kq{i}" for i in range(len(chunks))) + ")"
    if len(chunks) == 1:
        score = "ts_rank(terms, kq0)"
    else:
        weighted = " + ".join(f"ts_rank(terms, kq{i}) * {len(chunk)}" for i, chunk in enumerate(chunks))
        score = f"({weighted}) / {len(lexemes)}.0"
    return froms, match, score, params


# --- filters --------------------------------------------------------------------------------


def _json(value: Any) -> str:
    import json

    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def search_filter_sql(flt: EmbeddingFilter) -> tuple[str, dict[str, Any]]:
    """A WHERE fragment (``true`` when empty) and its parameters for a search filter.

    Scope keys let through embeddings of that owner and shared ones (no owner or ``null``);
    ``metadata`` values match exactly by jsonb containment; a text value of a key of
    :data:`INDEXED_METADATA_KEYS` is also compared as ``metadata->>key`` (the same rows), which
    its btree index serves and estimates.
    """
    parts: list[str] = []
    params: dict[str, Any] = {}
    if flt.source_type is not None:
        parts.append("source_type = %(f_source_type)s")
        params["f_source_type"] = flt.source_type
    for key in SCOPE_KEYS:
        value = getattr(flt, key)
        if value is not None:
            parts.append(f"(metadata->>'{key}' IS NULL OR metadata->>'{key}' = %(f_{key})s)")
            params[f"f_{key}"] = value
    if flt.metadata:
        for i, (key, value) in enumerate(sorted(flt.metadata.items())):
            if key in INDEXED_METADATA_KEYS and isinstance(value, str):  # for the index (see FILTER_INDEXES)
                parts.append(f"metadata->>'{key}' = %(f_indexed{i})s")
                params[f"f_indexed{i}"] = value
        parts.append("metadata @> %(f_metadata)s::jsonb")
        params["f_metadata"] = _json(flt.metadata)
    for i, (key, unwanted) in enumerate(sorted(flt.excluded().items())):
        for j, value in enumerate(unwanted):  # containment matches the JSON type too, as ``metadata`` does
            parts.append(f"NOT (metadata @> %(f_not{i}_{j})s::jsonb)")
            params[f"f_not{i}_{j}"] = _json({key: value})
    return (" AND ".join(parts) or "true"), params


def deletion_filter_sql(flt: DeletionFilter) -> tuple[str, dict[str, Any]]:
    """A WHERE fragment and its parameters for :meth:`delete_by_filter` (every condition exact)."""
    parts: list[str] = []
    params: dict[str, Any] = {}
    if flt.source_type is not None:
        parts.append("source_type = %(f_source_type)s")
        params["f_source_type"] = flt.source_type
    exact = flt.exact_metadata()
    if exact:
        parts.append("metadata @> %(f_metadata)s::jsonb")
        params["f_metadata"] = _json(exact)
    return " AND ".join(parts), params


_EMB_COLS = "id, source_id, source_type, content, embedding::float4[], metadata, created_at"
#: The same columns with an empty vector, for searches that leave the vectors out.
_EMB_COLS_NO_VECTOR = "id, source_id, source_type, content, '{}'::float4[] AS embedding, metadata, created_at"


def _fields(row: Sequence[Any]) -> dict[str, Any]:
    return {
        "id": row[0],
        "source_id": row[1],
        "source_type": row[2],
        "content": row[3],
        "vector": row[4],
        "metadata": row[5],
        "created_at": row[6],
    }


def embedding_from_row(row: Sequence[Any]) -> Embedding:
    """An :class:`Embedding` from a row in ``_EMB_COLS`` order (valid when written: built
    without validating it again)."""
    return built_record(Embedding, _fields(row))


def scored_from_row(row: Sequence[Any], *, cosine: bool) -> ScoredEmbedding:
    """A :class:`ScoredEmbedding` from a row in ``_EMB_COLS`` order plus the score (a cosine is
    clamped to [-1, 1], which float32 rounding may overshoot), built as
    :func:`embedding_from_row` is (a search reads hundreds)."""
    fields = _fields(row)
    fields["score"] = max(-1.0, min(1.0, float(row[7]))) if cosine else float(row[7])
    return built_record(ScoredEmbedding, fields)


class PostgresVectors(EmbeddingStoreMixin):
    """The embedding half of :class:`~cogitator_memory.engines.postgres.adapter.PostgresAdapter`.

    Mixed into the adapter before :class:`~cogitator_memory.threads.base.BaseMemoryAdapter`; it
    uses the adapter's ``run`` (a call on a pooled connection within its deadline) and ``schema``.
    """

    _layout: VectorLayout | None = None
    #: ``(extension schema, pgvector version)`` while pgvector is there but no table is, and no
    #: size was configured: the first vectors added make the table at their size.
    _pending: tuple[str, str] | None = None
    _vector_reason: str | None = "not connected"
    #: The ``hnsw.ef_search`` of every search; a larger ``limit`` raises it for that search.
    ef_search: int = DEFAULT_EF_SEARCH
    _rows_at_analyze: float = 0.0
    _rows_since_analyze: int = 0
    _analyzing: bool = False

    if TYPE_CHECKING:
        schema: str

        async def run(
            self, operation: Callable[[AsyncConnection[Any]], Awaitable[T]], *, timeout: float | None = None
        ) -> T: ...

    # ----- status and setup ----------------------------------------------------------------

    def vector_status(self) -> VectorStatus:
        """Whether embeddings work here: ``{"available": True, "dimensions": n, ...}``, or
        ``{"available": False, "reason": ...}`` (no pgvector, no right to create it, a table of
        another size, not connected). Before a table exists (no size configured, no vector added
        yet) ``dimensions`` is left out: the first vectors added set it."""
        layout = self._layout
        if self._pending is not None and self._vector_reason is None:
            return {"available": True, "pgvector": self._pending[1]}
        if layout is None or self._vector_reason is not None:
            return {"available": False, "reason": self._vector_reason or "not connected"}
        return {
            "available": True,
            "dimensions": layout.dimensions,
            "storage": layout.storage,
            "indexed": layout.indexed,
            "pgvector": layout.version,
        }

    def _vectors(self) -> VectorLayout:
        layout = self._layout
        if layout is None or self._vector_reason is not None:
            raise StoreUnavailableError(
                f"postgres embeddings are unavailable: {self._vector_reason or 'not connected'}"
            )
        return layout

    def _vectors_off(self, reason: str) -> None:
        self._layout = None
        self._vector_reason = reason
        logger.warning("postgres embeddings unavailable in schema %r: %s", self.schema, reason)

    def _reset_vectors(self) -> None:
        self._layout = None
        self._pending = None
        self._vector_reason = "not connected"
        self._dimensions = self._configured_dimensions
        self._rows_at_analyze = 0.0
        self._rows_since_analyze = 0

    async def _setup_vectors(self, conn: AsyncConnection[Any]) -> None:
        """At connect, on the migration connection (autocommit): find or make pgvector and the table.

        Never raises for a missing pgvector or a size mismatch: those turn embeddings off with
        a reason. Connection failures propagate (the connect fails).
        """
        from psycopg import errors

        self._reset_vectors()
        cur = await conn.execute(
            "SELECT extversion, extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'vector'"
        )
        ext = await cur.fetchone()
        if ext is None:
            cur = await conn.execute("SELECT default_version FROM pg_available_extensions WHERE name = 'vector'")
            if await cur.fetchone() is None:
                self._vectors_off("the pgvector extension is not installed on this PostgreSQL server")
                return
            try:
                async with conn.transaction():
                    await conn.execute(
                        "SELECT pg_advisory_xact_lock(%s, hashtext('pgvector extension'))", (ADVISORY_LOCK_CLASS,)
                    )
                    await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            except errors.InsufficientPrivilege as exc:
                self._vectors_off(
                    f"this role may not create the pgvector extension ({exc.diag.message_primary}); "
                    "run CREATE EXTENSION vector as a superuser once"
                )
                return
            except errors.DatabaseError as exc:
                self._vectors_off(f"the pgvector extension could not be created: {exc}")
                return
            cur = await conn.execute(
                "SELECT extversion, extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'vector'"
            )
            ext = await cur.fetchone()
            assert ext is not None
        version, ext_schema = str(ext[0]), str(ext[1]).strip('"')
        existing = await self._existing_layout(conn, ext_schema, version)
        if existing is None:
            if self._configured_dimensions is None:
                # no size known yet: the table is made by the first vectors added, at their size
                # (a store opened for its threads alone must not fix the size for the embedder)
                self._pending = (ext_schema, version)
                self._vector_reason = None
                return
            try:
                planned = VectorLayout.plan(self.schema, ext_schema, version, self._configured_dimensions)
            except StoreUnavailableError as exc:
                self._vectors_off(str(exc))
                return
            existing = await self._create_table(conn, planned)
        elif existing.dimensions <= HALFVEC_INDEX_MAX and not existing.indexed:
            wanted = VectorLayout.plan(self.schema, ext_schema, version, existing.dimensions)
            if wanted.indexed and wanted.storage == existing.storage:  # pgvector was upgraded since
                async with conn.transaction():
                    await conn.execute(
                        "SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (ADVISORY_LOCK_CLASS, self.schema)
                    )
                    await conn.execute(wanted.index_statement().replace("CREATE INDEX", "CREATE INDEX IF NOT EXISTS"))
                existing = wanted
        self._check_size(existing, self._configured_dimensions)
        await self._add_filter_indexes(conn, existing)
        self._adopt_layout(existing)
        self._rows_at_analyze = await self._analyzed_rows(conn, existing)

    def _check_size(self, layout: VectorLayout, wanted: int | None) -> None:
        """Refuse a table whose vectors are not of the ``wanted`` size (the embedder's), naming
        both sizes and the ways out."""
        if wanted is None or wanted == layout.dimensions:
            return
        raise InvalidArgumentError(
            "dimensions",
            f"the embeddings table {layout.table} holds vectors of {layout.dimensions} dimensions, but the "
            f"embedding service makes vectors of {wanted}: configure an embedding model of {layout.dimensions} "
            f"dimensions, or use another schema (the store's 'schema' option), or drop the table "
            f"(DROP TABLE {layout.table}; its vectors are lost, and turns are embedded again when "
            "their thread is next used)",
        )

    def _adopt_layout(self, layout: VectorLayout) -> None:
        self._layout = layout
        self._pending = None
        self._vector_reason = None
        self._dimensions = layout.dimensions

    async def _create_table(self, conn: AsyncConnection[Any], planned: VectorLayout) -> VectorLayout:
        """Make the table of ``planned`` unless another connection made one first (under the
        schema's advisory lock); the table there now."""
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (ADVISORY_LOCK_CLASS, self.schema))
            existing = await self._existing_layout(conn, planned.ext_schema, planned.version)
            if existing is not None:
                return existing
            for statement in planned.create_statements():
                await conn.execute(statement)
        return planned

    async def _add_filter_indexes(self, conn: AsyncConnection[Any], layout: VectorLayout) -> None:
        """Give a table made before the filter indexes existed its missing ones (under the
        schema's advisory lock), then analyse it so the planner has their statistics at once."""
        cur = await conn.execute(
            "SELECT indexname FROM pg_indexes WHERE schemaname = %s AND tablename = 'embeddings'", (self.schema,)
        )
        have = {str(row[0]) for row in await cur.fetchall()}
        missing = [name for name in FILTER_INDEXES if name not in have]
        if not missing:
            return
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (ADVISORY_LOCK_CLASS, self.schema))
            for statement in layout.filter_index_statements(missing):
                await conn.execute(statement)
        await conn.execute(f"ANALYZE {layout.table}")

    async def _pending_layout(self) -> VectorLayout | None:
        """With no table yet (see :meth:`_setup_vectors`): the table another connection made
        since, adopted (refused when of another size than configured), or ``None``."""
        pending = self._pending
        if pending is None:
            return self._vectors()

        async def op(conn: AsyncConnection[Any]) -> VectorLayout | None:
            return await self._existing_layout(conn, *pending)

        found = await self.run(op)
        if found is not None and self._pending is not None:
            self._adopt_layout(found)
        return found

    @staticmethod
    async def _analyzed_rows(conn: AsyncConnection[Any], layout: VectorLayout) -> float:
        """The rows the table had when it was last analysed (0 when never: ``reltuples`` is -1)."""
        cur = await conn.execute("SELECT reltuples FROM pg_class WHERE oid = to_regclass(%s)", (layout.table,))
        row = await cur.fetchone()
        return max(0.0, float(row[0])) if row is not None else 0.0

    async def _analyze_if_grown(self, added: int) -> None:
        """Count ``added`` rows; past the bar (:data:`ANALYZE_MIN_ROWS` and :data:`ANALYZE_GROWTH`
        of the table) analyse the table. Never raises: the rows are committed already, and a
        failed analyse (a lock held elsewhere, no ownership) is logged and tried at the next write."""
        self._rows_since_analyze += added
        bar = max(ANALYZE_MIN_ROWS, ANALYZE_GROWTH * self._rows_at_analyze)
        layout = self._layout
        if self._rows_since_analyze < bar or self._analyzing or layout is None:
            return
        self._analyzing = True

        async def op(conn: AsyncConnection[Any]) -> float:
            async with conn.transaction():
                await conn.execute("SET LOCAL lock_timeout = '2s'")
                await conn.execute(f"ANALYZE {layout.table}")
                return await self._analyzed_rows(conn, layout)

        try:
            self._rows_at_analyze = await self.run(op)
            self._rows_since_analyze = 0
        except Exception as exc:
            logger.warning("postgres: analysing %s after a large write failed: %s", layout.table, exc)
        finally:
            self._analyzing = False

    async def _configure_vectors(self, conn: AsyncConnection[Any]) -> None:
        """On each new pooled connection: ``hnsw.ef_search`` and iterative index scans (pgvector
        0.8+) for the session, so filtered searches keep scanning until they have ``limit`` rows
        (``relaxed_order``: the search re-sorts its hits). Also before the table exists (it
        may be made while the connection is pooled)."""
        if self._vector_reason is not None:
            return
        layout = self._layout
        if self._pending is not None:
            iterative = parse_version(self._pending[1]) >= (0, 8)
        elif layout is not None and layout.indexed:
            iterative = layout.iterative_scan
        else:
            return
        await conn.execute(f"SET hnsw.ef_search = {int(self.ef_search)}")
        if iterative:
            await conn.execute("SET hnsw.iterative_scan = relaxed_order")

    async def _existing_layout(self, conn: AsyncConnection[Any], ext_schema: str, version: str) -> VectorLayout | None:
        cur = await conn.execute(
            "SELECT format_type(a.atttypid, a.atttypmod) FROM pg_attribute a"
            " WHERE a.attrelid = to_regclass(%s) AND a.attname = 'embedding' AND NOT a.attisdropped",
            (f"{quote_ident(self.schema)}.embeddings",),
        )
        row = await cur.fetchone()
        if row is None:
            return None
        kind, _, size = str(row[0]).rpartition(".")[2].partition("(")
        storage: Storage = "halfvec" if kind == "halfvec" else "vector"
        dims = int(size.rstrip(")")) if size else 0
        cur = await conn.execute(
            "SELECT 1 FROM pg_indexes WHERE schemaname = %s AND tablename = 'embeddings' AND indexdef LIKE %s",
            (self.schema, "%USING hnsw%"),
        )
        indexed = await cur.fetchone() is not None
        return VectorLayout(self.schema, ext_schema, dims, storage, indexed, parse_version(version) >= (0, 8), version)

    async def _stored_dimensions(self) -> int | None:
        layout = await self._pending_layout()
        return None if layout is None else layout.dimensions

    async def _layout_for(self, dimensions: int) -> VectorLayout:
        """The table to write vectors of ``dimensions`` to: made at that size when there is none
        yet (see :meth:`_setup_vectors`)."""
        pending = self._pending
        if pending is None:
            return self._vectors()
        planned = VectorLayout.plan(self.schema, pending[0], pending[1], dimensions)

        async def op(conn: AsyncConnection[Any]) -> VectorLayout:
            return await self._create_table(conn, planned)

        made = await self.run(op)
        if self._pending is not None:
            self._adopt_layout(made)
        if made.dimensions != dimensions:  # another connection made it first, at another size
            raise InvalidArgumentError(
                "embeddings", f"vectors must have {made.dimensions} dimensions (the table's), got {dimensions}"
            )
        return made

    # ----- primitives ----------------------------------------------------------------------

    async def _add_embeddings(self, embeddings: list[Embedding]) -> None:
        from psycopg import errors

        layout = await self._layout_for(len(embeddings[0].vector))
        sql = (
            f"INSERT INTO {layout.table} (id, source_id, source_type, content, metadata, embedding, terms, created_at)"
            f" VALUES (%(id)s, %(source_id)s, %(source_type)s, %(content)s, %(metadata)s::jsonb,"
            f" {layout.query_vector('vector')}, %(terms)s::tsvector, %(created_at)s)"
        )
        rows = [
            {
                "id": e.id,
                "source_id": e.source_id,
                "source_type": e.source_type,
                "content": e.content,
                "metadata": _json(e.metadata),
                "vector": vector_literal(e.vector),
                "terms": tsvector_literal(e.content),
                "created_at": e.created_at,
            }
            for e in embeddings
        ]

        async def op(conn: AsyncConnection[Any]) -> None:
            try:
                async with conn.transaction(), conn.cursor() as cur:
                    await cur.executemany(sql, rows)
            except errors.UniqueViolation as exc:
                detail = exc.diag.message_detail or str(exc)
                raise ConflictError(f"embedding id already stored: {detail}") from None

        await self.run(op)
        await self._analyze_if_grown(len(rows))

    async def _search(
        self, vector: list[float], limit: int, threshold: float, flt: EmbeddingFilter
    ) -> list[ScoredEmbedding]:
        return await self._search_hits(vector, limit, threshold, flt, True)

    async def _search_hits(
        self, vector: list[float], limit: int, threshold: float, flt: EmbeddingFilter, include_vectors: bool
    ) -> list[ScoredEmbedding]:
        cols = _EMB_COLS if include_vectors else _EMB_COLS_NO_VECTOR
        out = "id, source_id, source_type, content, embedding, metadata, created_at"
        rows = await self._nearest(vector, limit, threshold, flt, cols, out)
        return [scored_from_row(row, cosine=True) for row in rows]

    async def _search_ids(
        self, vector: list[float], limit: int, threshold: float, flt: EmbeddingFilter
    ) -> list[VectorHit]:
        """The nearest rows' ids, source ids and cosines only (a search of a few hundred turns
        otherwise reads each turn's text and metadata back, most of its time)."""
        rows = await self._nearest(vector, limit, threshold, flt, "id, source_id", "id, source_id")
        return [VectorHit(row[0], row[1], max(-1.0, min(1.0, float(row[2])))) for row in rows]

    async def _nearest(
        self, vector: list[float], limit: int, threshold: float, flt: EmbeddingFilter, cols: str, out: str
    ) -> list[Any]:
        """The rows (columns ``out`` of ``cols``, then the cosine) of the ``limit`` embeddings
        nearest ``vector`` passing ``flt`` with a cosine >= ``threshold``, best first (then by
        id). The session's ``hnsw.ef_search`` serves limits up to it; a larger limit raises it
        for this one transaction, sent in a pipeline (BEGIN, the setting and the search in one
        round trip, not one each)."""
        layout = self._vectors()
        where, params = search_filter_sql(flt)
        dist = f"embedding {layout.distance} {layout.query_vector('q')}"
        sql = (
            f"WITH hits AS MATERIALIZED (SELECT {cols}, {dist} AS dist FROM {layout.table}"
            f" WHERE {where} ORDER BY {dist} LIMIT %(limit)s)"
            f" SELECT {out}, 1 - dist FROM hits WHERE 1 - dist >= %(threshold)s ORDER BY dist, id"
        )
        params.update({"q": vector_literal(vector), "limit": limit, "threshold": threshold})
        raise_ef = layout.indexed and limit > self.ef_search
        ef = str(min(MAX_EF_SEARCH, limit))

        async def op(conn: AsyncConnection[Any]) -> list[Any]:
            if not raise_ef:
                cur = await conn.execute(sql, params)
                return await cur.fetchall()
            async with conn.pipeline(), conn.transaction():
                await conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (ef,))
                cur = await conn.execute(sql, params)
                return await cur.fetchall()

        return await self.run(op)

    async def _keyword_search(self, terms: list[str], limit: int, flt: EmbeddingFilter) -> list[ScoredEmbedding]:
        return await self._keyword_hits(terms, limit, flt, True)

    async def _keyword_hits(
        self, terms: list[str], limit: int, flt: EmbeddingFilter, include_vectors: bool
    ) -> list[ScoredEmbedding]:
        layout = await self._pending_layout()
        if layout is None:  # no table yet
            return []
        where, params = search_filter_sql(flt)
        froms, match, score, query_params = keyword_query_sql(terms)
        cols = _EMB_COLS if include_vectors else _EMB_COLS_NO_VECTOR
        sql = (
            f"SELECT {cols}, {score} AS score FROM {layout.table}, {froms}"
            f" WHERE {match} AND {where} ORDER BY score DESC, id LIMIT %(limit)s"
        )
        params.update(query_params)
        params["limit"] = limit

        async def op(conn: AsyncConnection[Any]) -> list[ScoredEmbedding]:
            cur = await conn.execute(sql, params)
            return [scored_from_row(row, cosine=False) for row in await cur.fetchall()]

        return await self.run(op)

    async def _get_embedding(self, embedding_id: str) -> Embedding | None:
        layout = await self._pending_layout()
        if layout is None:  # no table yet
            return None

        async def op(conn: AsyncConnection[Any]) -> Embedding | None:
            cur = await conn.execute(f"SELECT {_EMB_COLS} FROM {layout.table} WHERE id = %s", (embedding_id,))
            row = await cur.fetchone()
            return None if row is None else embedding_from_row(row)

        return await self.run(op)

    async def _delete_embedding(self, embedding_id: str) -> bool:
        layout = await self._pending_layout()
        if layout is None:  # no table yet
            return False

        async def op(conn: AsyncConnection[Any]) -> bool:
            cur = await conn.execute(f"DELETE FROM {layout.table} WHERE id = %s", (embedding_id,))
            return cur.rowcount > 0

        return await self.run(op)

    async def _delete_embeddings(self, embedding_ids: list[str]) -> int:
        layout = await self._pending_layout()
        if layout is None:  # no table yet
            return 0

        async def op(conn: AsyncConnection[Any]) -> int:
            cur = await conn.execute(f"DELETE FROM {layout.table} WHERE id = ANY(%s)", (embedding_ids,))
            return cur.rowcount

        return await self.run(op)

    async def _delete_by_filter(self, flt: DeletionFilter) -> int:
        layout = await self._pending_layout()
        if layout is None:  # no table yet
            return 0
        where, params = deletion_filter_sql(flt)

        async def op(conn: AsyncConnection[Any]) -> int:
            cur = await conn.execute(f"DELETE FROM {layout.table} WHERE {where}", params)
            return cur.rowcount

        return await self.run(op)

    async def _get_by_sources(self, source_ids: list[str]) -> list[Embedding]:
        layout = await self._pending_layout()
        if layout is None:  # no table yet
            return []

        async def op(conn: AsyncConnection[Any]) -> list[Embedding]:
            cur = await conn.execute(
                f"SELECT {_EMB_COLS} FROM {layout.table} WHERE source_id = ANY(%s::text[])", (source_ids,)
            )
            return [embedding_from_row(row) for row in await cur.fetchall()]

        return await self.run(op)


__all__ = [
    "ANALYZE_GROWTH",
    "ANALYZE_MIN_ROWS",
    "HALFVEC_INDEX_MAX",
    "PGVECTOR_MAX",
    "TSQUERY_CHUNK",
    "VECTOR_INDEX_MAX",
    "PostgresVectors",
    "VectorLayout",
    "VectorStatus",
    "deletion_filter_sql",
    "embedding_from_row",
    "keyword_query_sql",
    "parse_version",
    "scored_from_row",
    "search_filter_sql",
    "tsquery_literal",
    "tsvector_literal",
    "vector_literal",
]
