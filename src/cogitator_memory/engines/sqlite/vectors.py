"""``SQLiteEmbeddingAdapter``: embeddings in the same SQLite file as :class:`~cogitator_memory.SQLiteAdapter`.

The table comes from migration ``m002_embeddings`` of
:mod:`cogitator_memory.engines.sqlite.schema`, so one file holds threads and vectors. Vectors
are float32 BLOBs (a vector reads back rounded to float32). Vector search scans binary codes
(one sign bit per dimension, :mod:`cogitator_memory.engines.sqlite.codes`) kept in the same file
in chunks per user, written in the same transaction as the vectors: the process holds the codes
of the users it searched (56 bytes an embedding at 384 dimensions) and, when the file's embedding
generation (moved by every write, of any connection or process) changes, reads again only the
chunks written since. The nearest codes by Hamming distance (:data:`OVERSAMPLE` times the limit,
at least :data:`SHORTLIST_MIN`) are rescored exactly from their float vectors, read by rowid with
the search's filter: a scope that holds no more than the shortlist is searched exactly, and
recall@10 against exact cosine on MiniLM vectors is in ``docs/vectors.md``. A search of one thread
that few rows can pass (:data:`THREAD_EXACT_MAX`: the thread's and those of no thread) scores
them exactly along the thread index and reads no code. Keyword search is
BM25 computed in SQL over the package's own term index (``embedding_terms``, migration
``m003_keyword_index``), so it scores exactly as the in-memory store does, with any ``k1`` and ``b``.

``sqlite-vec`` is used only when ``vector_backend="sqlite-vec"`` is asked for and the
extension loads; the default ``"auto"`` uses numpy, which measured faster (see
``docs/vectors.md``). Python builds without ``enable_load_extension`` (like the one this
package is tested on) cannot load it: asking for it then fails ``connect()``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar

from pydantic_core import from_json

from ...clock import from_micros, to_micros
from ...errors import ConflictError, InvalidArgumentError, MemoryStoreError, NotConnectedError, StoreUnavailableError
from ...search.bm25 import BM25
from ...search.tokenizer import index_terms
from ...threads.records import built_record
from ...vectors.base import BaseEmbeddingAdapter, check_bm25
from ...vectors.matrix import load_numpy, unit_rows, unit_vector
from ...vectors.records import (
    SCOPE_KEYS,
    DeletionFilter,
    Embedding,
    EmbeddingFilter,
    MetadataValue,
    ScoredEmbedding,
    VectorHit,
    holds_excluded,
    packed_embedding,
    without_vectors,
)
from .codes import (
    PART_SQL,
    SEPARATOR,
    CodeCache,
    add_codes,
    drop_codes,
    nearest_rows,
    part_of,
    parts_for,
    query_words,
)
from .db import normalize_path, open_database, write_transaction
from .schema import drop_embedding_terms, index_embedding_terms, migrate

if TYPE_CHECKING:
    from .threads import SQLiteAdapter

VectorBackend = Literal["auto", "numpy", "sqlite-vec"]
_E = TypeVar("_E", bound=Embedding)

_COLUMNS = "id, source_id, source_type, content, vector, metadata, created_at"
_COLUMNS_NO_VECTOR = _COLUMNS.replace("vector", "NULL")
_E_COLUMNS = ", ".join(f"e.{c.strip()}" for c in _COLUMNS.split(","))


def _json_type(value: MetadataValue) -> tuple[str, Any]:
    if value is True:
        return "true", 1
    if value is False:
        return "false", 0
    if isinstance(value, int):
        return "integer", value
    return "text", value


def metadata_matches(metadata: dict[str, Any], exact: dict[str, MetadataValue]) -> bool:
    """Whether ``metadata`` holds exactly these values, of the same JSON type (as the
    ``json_each`` conditions of :func:`where_clause` check them in SQL)."""
    for key, wanted in exact.items():
        got = metadata.get(key)
        if type(got) is not type(wanted) or got != wanted:
            return False
    return True


def where_clause(
    *,
    source_type: str | None,
    scope: dict[str, str],
    exact: dict[str, MetadataValue],
    alias: str = "",
    excluded: dict[str, list[MetadataValue]] | None = None,
) -> tuple[str, list[Any]]:
    """SQL conditions (joined by AND, ``"1"`` when none) and their parameters.

    ``scope`` keys follow the scoping rule (NULL is shared); ``exact`` keys must hold exactly
    that JSON value (type included); ``excluded`` keys must hold none of their values.
    """
    p = f"{alias}." if alias else ""
    # the metadata holds the key with exactly this JSON type and value
    holds = f"EXISTS (SELECT 1 FROM json_each({p}metadata) j WHERE j.key = ? AND j.type = ? AND j.value = ?)"
    parts: list[str] = []
    args: list[Any] = []
    if source_type is not None:
        parts.append(f"{p}source_type = ?")
        args.append(source_type)
    for key, value in scope.items():
        parts.append(f"({p}{key} IS NULL OR {p}{key} = ?)")
        args.append(value)
    for key, wanted in exact.items():
        kind, stored = _json_type(wanted)
        if key in SCOPE_KEYS and isinstance(wanted, str):
            # the column copied from the metadata narrows the rows by its index first
            parts.append(f"{p}{key} = ?")
            args.append(wanted)
        parts.append(holds)
        args.extend([key, kind, stored])
    for key, unwanted in (excluded or {}).items():
        for unwanted_value in unwanted:
            kind, stored = _json_type(unwanted_value)
            parts.append(f"NOT {holds}")
            args.extend([key, kind, stored])
    return (" AND ".join(parts) if parts else "1"), args


def _search_where(flt: EmbeddingFilter, alias: str = "") -> tuple[str, list[Any]]:
    return where_clause(
        source_type=flt.source_type,
        scope=flt.scope(),
        exact=dict(flt.metadata or {}),
        alias=alias,
        excluded=flt.excluded(),
    )


#: A vector search rescores exactly this many times its ``limit`` of the nearest codes...
OVERSAMPLE = 2
#: ... and at least this many.
SHORTLIST_MIN = 200
#: A shortlist is widened (4x) while fewer than ``limit`` of it pass the search's filter; past
#: this many the filter's rows are scanned exactly instead (a filter that few of the scope's
#: embeddings pass, such as one thread's).
SHORTLIST_MAX = 20_000
#: A search of one thread that at most this many embeddings can pass (the thread's, and those of no
#: thread) scores them all exactly, read along the thread index, instead of ranking codes: a thread
#: is small beside the codes of its user (or of every user: a thread's search names no user), and
#: most of a shortlist of those would be other threads' (at 1,000,000 turns it widened four times
#: before it found enough, then scanned the thread anyway).
THREAD_EXACT_MAX = 2000
#: Rowids read by one statement.
_ONE_READ = 500


class SQLiteEmbeddingAdapter(BaseEmbeddingAdapter):
    """An embedding store in a SQLite file, beside the threads of :class:`~cogitator_memory.SQLiteAdapter`.

    Give ``path`` (its own connection, WAL mode) or ``store``, a :class:`SQLiteAdapter` whose open
    connection it shares (connect the store first). ``dimensions`` fixes the vector size;
    otherwise the file's stored size, or the first vector added, sets it. ``bm25`` sets the
    keyword scoring, as on the in-memory store (default ``BM25(k1=1.2, b=0.75)``; for chat
    messages of very uneven length ``BM25(k1=3, b=1)`` measured better, see
    ``docs/embeddings.md``). ``cache_scopes`` is how many users' binary codes the process holds
    for vector search (the least recently searched dropped first). Needs numpy (the
    ``[vectors]`` extra).
    """

    provider: ClassVar[str] = "sqlite"
    cheap_metadata_not: ClassVar[bool] = True

    def __init__(
        self,
        *,
        path: str | Path | None = None,
        store: SQLiteAdapter | None = None,
        dimensions: int | None = None,
        busy_timeout: float = 5.0,
        vector_backend: VectorBackend = "auto",
        cache_scopes: int = 32,
        bm25: BM25 | None = None,
        provider: str | None = None,
    ) -> None:
        if provider not in (None, "sqlite"):
            raise InvalidArgumentError("provider", f"must be 'sqlite', got {provider!r}")
        if (path is None) == (store is None):
            raise InvalidArgumentError("path", "give either path= or store= (a SQLiteAdapter), not both or neither")
        if path is not None and (not isinstance(path, str | Path) or not str(path)):
            raise InvalidArgumentError("path", "must be a file path or ':memory:'")
        if vector_backend not in ("auto", "numpy", "sqlite-vec"):
            raise InvalidArgumentError("vector_backend", f"must be auto, numpy or sqlite-vec, got {vector_backend!r}")
        if isinstance(cache_scopes, bool) or not isinstance(cache_scopes, int) or cache_scopes < 1:
            raise InvalidArgumentError("cache_scopes", f"must be a positive integer, got {cache_scopes!r}")
        scoring = check_bm25(bm25)
        super().__init__(dimensions=dimensions)
        #: The keyword scoring (its ``k1`` and ``b``).
        self.bm25 = scoring
        self.path = None if path is None else normalize_path(path)
        self.store = store
        self.busy_timeout = float(busy_timeout)
        self.requested_backend: VectorBackend = vector_backend
        #: The backend in use once connected: ``"numpy"`` or ``"sqlite-vec"``.
        self.vector_backend: str | None = None
        self._db: sqlite3.Connection | None = None
        self._owns_db = False
        self._codes = CodeCache(cache_scopes)
        #: Every part of the codes, and the generation it was read at.
        self._all_parts: tuple[int, list[str]] | None = None
        #: Documents and their total length in terms, for BM25, and the generation they are of.
        self._corpus: tuple[int, int, int] | None = None

    @property
    def code_cache(self) -> CodeCache:
        """The binary codes this process holds for vector search (see the module docstring)."""
        return self._codes

    # ----- lifecycle -------------------------------------------------------------------------

    @property
    def connection(self) -> sqlite3.Connection:
        """The ``sqlite3`` connection in use."""
        if self._db is None:
            raise NotConnectedError("sqlite embedding store is not connected: call connect() first")
        return self._db

    async def _connect(self) -> None:
        load_numpy("SQLiteEmbeddingAdapter")
        if self.store is not None:
            db = self.store.connection  # raises NotConnectedError when the store is not connected
            migrate(db)
            owns = False
        else:
            assert self.path is not None
            db = open_database(self.path, busy_timeout=self.busy_timeout)
            owns = True
        try:
            self.vector_backend = self._choose_backend(db)
            row = db.execute("SELECT value FROM embedding_state WHERE key = 'dimensions'").fetchone()
            self._adopt_dimensions(None if row is None else int(row[0]))
        except BaseException:
            if owns:
                db.close()
            raise
        self._db, self._owns_db = db, owns
        self._codes.clear()
        self._all_parts = None

    def _choose_backend(self, db: sqlite3.Connection) -> str:
        if self.requested_backend != "sqlite-vec":
            return "numpy"
        if not hasattr(db, "enable_load_extension"):
            raise StoreUnavailableError(
                "sqlite-vec cannot be loaded: this Python's sqlite3 was built without extension loading "
                "(use vector_backend='auto', or a Python whose sqlite3 has enable_load_extension)"
            )
        try:
            import sqlite_vec  # type: ignore[import-not-found, import-untyped, unused-ignore]
        except ImportError:
            raise StoreUnavailableError("sqlite-vec is not installed: pip install sqlite-vec") from None
        db.enable_load_extension(True)
        try:
            sqlite_vec.load(db)
        finally:
            db.enable_load_extension(False)
        return "sqlite-vec"

    async def _disconnect(self) -> None:
        db, self._db = self._db, None
        self._codes.clear()
        if db is not None and self._owns_db:
            db.close()

    async def _ping(self) -> None:
        self.connection.execute("SELECT 1").fetchone()

    def _map_error(self, operation: str, exc: Exception) -> MemoryStoreError:
        if isinstance(exc, sqlite3.IntegrityError):
            return ConflictError(f"sqlite {operation}: {exc}")
        if isinstance(exc, sqlite3.ProgrammingError) and "closed" in str(exc):
            return NotConnectedError(f"sqlite {operation}: the shared connection was closed")
        where = self.path if self.path is not None else "the shared SQLiteAdapter file"
        return StoreUnavailableError(f"sqlite {operation} failed on {where}: {type(exc).__name__}: {exc}")

    @contextmanager
    def _write(self) -> Iterator[tuple[sqlite3.Connection, int]]:
        """A write transaction and the generation it moves the file to (the version of the code
        chunks it changes)."""
        with write_transaction(self.connection) as db:
            db.execute("UPDATE embedding_state SET value = value + 1 WHERE key = 'generation'")
            row = db.execute("SELECT value FROM embedding_state WHERE key = 'generation'").fetchone()
            yield db, int(row[0])

    @staticmethod
    def _drop_codes(db: sqlite3.Connection, where: str, args: Sequence[Any], version: int) -> None:
        """Take the embeddings matching ``where`` out of the binary codes (before they are deleted)."""
        rows = db.execute(f"SELECT rowid, {PART_SQL} FROM embeddings WHERE {where}", tuple(args)).fetchall()
        drop_codes(db, rows, version)

    async def _stored_dimensions(self) -> int | None:
        row = self.connection.execute("SELECT value FROM embedding_state WHERE key = 'dimensions'").fetchone()
        return None if row is None else int(row[0])

    # ----- rows ------------------------------------------------------------------------------

    @staticmethod
    def _record(cls: type[_E], row: Sequence[Any], **more: Any) -> _E:
        """An embedding of ``cls`` read as ``_COLUMNS`` (and ``more`` fields): its vector made a
        list when first read (a ``NULL`` vector, left unread, is ``[]``)."""
        blob = row[4]
        fields = {"id": row[0], "source_id": row[1], "source_type": row[2], "content": row[3]}
        if blob is None:
            fields["vector"] = []
        fields["metadata"] = from_json(row[5])  # pydantic-core's parser: a tenth of json.loads' time on "{}"
        fields["created_at"] = from_micros(row[6])
        fields.update(more)
        return built_record(cls, fields) if blob is None else packed_embedding(cls, fields, blob)

    def _embedding(self, row: Sequence[Any]) -> Embedding:
        return self._record(Embedding, row)

    def _scored(self, row: Sequence[Any], score: float) -> ScoredEmbedding:
        return self._record(ScoredEmbedding, row, score=score)

    def _scored_rows(self, found: list[tuple[Sequence[Any], float]]) -> list[ScoredEmbedding]:
        """:meth:`_scored` of each (row, score)."""
        return [self._record(ScoredEmbedding, row, score=score) for row, score in found]

    # ----- writes ----------------------------------------------------------------------------

    async def _add_embeddings(self, embeddings: list[Embedding]) -> None:
        np = load_numpy("SQLiteEmbeddingAdapter")
        dims = len(embeddings[0].vector)
        with self._write() as (db, version):
            ids = [e.id for e in embeddings]
            taken: list[str] = []
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                rows = db.execute(f"SELECT id FROM embeddings WHERE id IN ({','.join('?' * len(chunk))})", chunk)
                taken.extend(r[0] for r in rows)
            if taken:
                raise ConflictError(f"embedding id(s) already stored: {', '.join(taken)}")
            stored = db.execute("SELECT value FROM embedding_state WHERE key = 'dimensions'").fetchone()
            if stored is None:
                db.execute("INSERT INTO embedding_state (key, value) VALUES ('dimensions', ?)", (dims,))
            elif int(stored[0]) != dims:
                raise ConflictError(f"the file holds vectors of {stored[0]} dimensions, not {dims}")
            indexed: list[tuple[int, list[str]]] = []
            coded: list[tuple[int, str, Any]] = []
            for e in embeddings:
                terms = index_terms(e.content)
                cur = db.execute(
                    "INSERT INTO embeddings (id, source_id, source_type, content, vector, metadata,"
                    " agent_id, user_id, thread_id, created_at, term_count) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        e.id,
                        e.source_id,
                        e.source_type,
                        e.content,
                        np.asarray(e.vector, dtype="<f4").tobytes(),
                        json.dumps(e.metadata),
                        *(e.metadata.get(k) for k in SCOPE_KEYS),
                        to_micros(e.created_at),
                        len(terms),
                    ),
                )
                assert cur.lastrowid is not None
                indexed.append((cur.lastrowid, terms))
                part = part_of(e.metadata.get("user_id"), e.metadata.get("index"))
                coded.append((cur.lastrowid, part, e.vector))
            index_embedding_terms(db, indexed)
            add_codes(db, coded, version)

    async def _delete_embedding(self, embedding_id: str) -> bool:
        with self._write() as (db, version):
            self._drop_codes(db, "id = ?", (embedding_id,), version)
            drop_embedding_terms(db, "id = ?", (embedding_id,))
            return bool(db.execute("DELETE FROM embeddings WHERE id = ?", (embedding_id,)).rowcount)

    async def _delete_embeddings(self, embedding_ids: list[str]) -> int:
        gone = 0
        with self._write() as (db, version):  # one transaction for all of them
            for start in range(0, len(embedding_ids), 500):
                part = embedding_ids[start : start + 500]
                marks = ", ".join("?" * len(part))
                self._drop_codes(db, f"id IN ({marks})", tuple(part), version)
                drop_embedding_terms(db, f"id IN ({marks})", tuple(part))
                gone += db.execute(f"DELETE FROM embeddings WHERE id IN ({marks})", part).rowcount
        return gone

    async def _delete_by_filter(self, flt: DeletionFilter) -> int:
        where, args = where_clause(source_type=flt.source_type, scope={}, exact=flt.exact_metadata())
        with self._write() as (db, version):
            self._drop_codes(db, where, args, version)
            drop_embedding_terms(db, where, args)
            return db.execute(f"DELETE FROM embeddings WHERE {where}", args).rowcount

    # ----- reads -----------------------------------------------------------------------------

    def _generation(self) -> int:
        row = self.connection.execute("SELECT value FROM embedding_state WHERE key = 'generation'").fetchone()
        return int(row[0])

    async def _search(
        self, vector: list[float], limit: int, threshold: float, flt: EmbeddingFilter
    ) -> list[ScoredEmbedding]:
        return await self._search_hits(vector, limit, threshold, flt, True)

    async def _search_hits(
        self, vector: list[float], limit: int, threshold: float, flt: EmbeddingFilter, include_vectors: bool
    ) -> list[ScoredEmbedding]:
        # Hits without vectors leave the vector column unread.
        if self.vector_backend == "sqlite-vec":
            hits = self._search_sqlite_vec(vector, limit, threshold, flt)
            return hits if include_vectors else without_vectors(hits)
        return self._search_codes(vector, limit, threshold, flt, include_vectors)

    def _parts(self, flt: EmbeddingFilter, generation: int) -> list[str]:
        """The parts of the codes a search of ``flt`` scans (:func:`parts_for`; the file's
        parts listed again when the generation moved, and only when the search names no user
        or no index)."""
        index = (flt.metadata or {}).get("index")
        every: list[str] = []
        if flt.user_id is None or not isinstance(index, str):
            if self._all_parts is None or self._all_parts[0] != generation:
                parts = [r[0] for r in self.connection.execute("SELECT DISTINCT part FROM embedding_codes")]
                self._all_parts = (generation, parts)
            every = self._all_parts[1]
        skipped = {v for v in flt.excluded().get("index", ()) if isinstance(v, str)}
        return [p for p in parts_for(flt.user_id, index, every) if p.partition(SEPARATOR)[2] not in skipped]

    def _rescore(self, rowids: list[int], query: Any, flt: EmbeddingFilter, into: dict[int, tuple[str, float]]) -> None:
        """The exact cosines of these embeddings that pass ``flt``, put in ``into`` (rowid -> (id, cosine))."""
        np = load_numpy("SQLiteEmbeddingAdapter")
        # the metadata's exact values checked here on the few rows read (json_each in SQL
        # doubled the statement's time)
        where, args = where_clause(source_type=flt.source_type, scope=flt.scope(), exact={})
        exact = dict(flt.metadata or {})
        excluded = flt.excluded()
        db = self.connection
        for start in range(0, len(rowids), _ONE_READ):
            chunk = rowids[start : start + _ONE_READ]
            sql = (
                f"SELECT rowid, id, vector, metadata FROM embeddings"
                f" WHERE rowid IN ({','.join('?' * len(chunk))}) AND {where}"
            )
            rows = db.execute(sql, [*chunk, *args]).fetchall()
            if exact or excluded:
                rows = [
                    r
                    for r in rows
                    if metadata_matches(meta := from_json(r[3]), exact) and not holds_excluded(meta, excluded)
                ]
            if not rows:
                continue
            matrix = unit_rows(np.frombuffer(b"".join(r[2] for r in rows), dtype="<f4").reshape(len(rows), -1))
            for row, score in zip(rows, (matrix @ query).tolist(), strict=True):
                into[row[0]] = (row[1], min(1.0, max(-1.0, score)))

    def _scan_exact(self, query: Any, limit: int, flt: EmbeddingFilter, into: dict[int, tuple[str, float]]) -> None:
        """Every embedding passing ``flt`` scored exactly, a batch at a time, the best ``limit``
        kept in ``into`` (a filter too narrow for the shortlist)."""
        np = load_numpy("SQLiteEmbeddingAdapter")
        where, args = _search_where(flt)
        cur = self.connection.execute(f"SELECT rowid, id, vector FROM embeddings WHERE {where}", args)
        while rows := cur.fetchmany(4096):
            matrix = unit_rows(np.frombuffer(b"".join(r[2] for r in rows), dtype="<f4").reshape(len(rows), -1))
            for row, score in zip(rows, (matrix @ query).tolist(), strict=True):
                into[row[0]] = (row[1], min(1.0, max(-1.0, score)))
            if len(into) > 4 * limit:
                best = sorted(into.items(), key=lambda kv: (-kv[1][1], kv[1][0]))[:limit]
                into.clear()
                into.update(best)

    def _search_codes(
        self, vector: list[float], limit: int, threshold: float, flt: EmbeddingFilter, include_vectors: bool
    ) -> list[ScoredEmbedding]:
        """The binary codes' shortlist rescored exactly (see the module docstring)."""
        hits = self._best_rowids(vector, limit, threshold, flt)
        rows = self._rows_by_rowid([r for r, _ in hits], vectors=include_vectors)
        return self._scored_rows([(rows[r], s) for r, s in hits if r in rows])

    async def _search_ids(
        self, vector: list[float], limit: int, threshold: float, flt: EmbeddingFilter
    ) -> list[VectorHit]:
        """The codes' hits as ids, source ids and cosines: the rows' text and metadata unread."""
        if self.vector_backend == "sqlite-vec":
            return await super()._search_ids(vector, limit, threshold, flt)
        hits = self._best_rowids(vector, limit, threshold, flt)
        found: dict[int, tuple[str, str]] = {}
        rowids = [r for r, _ in hits]
        for start in range(0, len(rowids), _ONE_READ):
            chunk = rowids[start : start + _ONE_READ]
            sql = f"SELECT rowid, id, source_id FROM embeddings WHERE rowid IN ({','.join('?' * len(chunk))})"
            for rowid, embedding_id, source_id in self.connection.execute(sql, chunk):
                found[rowid] = (embedding_id, source_id)
        return [VectorHit(found[r][0], found[r][1], s) for r, s in hits if r in found]

    def _best_rowids(
        self, vector: list[float], limit: int, threshold: float, flt: EmbeddingFilter
    ) -> list[tuple[int, float]]:
        """The rowids and cosines of the ``limit`` best embeddings passing ``flt`` (cosine >=
        ``threshold``), best first, then by id: the codes' shortlist rescored exactly."""
        query = unit_vector(vector)
        scored: dict[int, tuple[str, float]] = {}
        if flt.thread_id is not None and self._thread_is_small(flt.thread_id):
            self._scan_exact(query, limit, flt, scored)
        else:
            self._rank_codes(len(vector), query, limit, flt, scored)
        best = sorted(scored.items(), key=lambda kv: (-kv[1][1], kv[1][0]))
        return [(rowid, score) for rowid, (_, score) in best[:limit] if score >= threshold]

    def _rank_codes(
        self, dims: int, query: Any, limit: int, flt: EmbeddingFilter, scored: dict[int, tuple[str, float]]
    ) -> None:
        """The codes' shortlist rescored exactly into ``scored``, widened 4x while fewer than
        ``limit`` of it pass ``flt``, the filter's rows scanned exactly past :data:`SHORTLIST_MAX`."""
        db = self.connection
        generation = self._generation()
        width = (dims + 7) // 8
        held = [self._codes.part(db, part, generation, width) for part in self._parts(flt, generation)]
        total = sum(p.count for p in held)
        code = query_words(query)
        done: set[int] = set()
        want = max(limit * OVERSAMPLE, SHORTLIST_MIN)
        while True:
            if want > SHORTLIST_MAX:
                scored.clear()
                self._scan_exact(query, limit, flt, scored)
                break
            shortlist = [r for r in nearest_rows(held, code, want) if r not in done]
            self._rescore(shortlist, query, flt, scored)
            done.update(shortlist)
            if len(scored) >= limit or len(done) >= total:
                break
            want *= 4

    def _thread_is_small(self, thread_id: str) -> bool:
        """Whether at most :data:`THREAD_EXACT_MAX` embeddings are the thread's or shared by
        every thread (no thread: the scoping rule lets a thread's search see them), counted along
        the thread index (the rows an exact scan reads), no further than one past that."""
        row = self.connection.execute(
            "SELECT count(*) FROM (SELECT 1 FROM embeddings WHERE thread_id IS NULL OR thread_id = ? LIMIT ?)",
            (thread_id, THREAD_EXACT_MAX + 1),
        ).fetchone()
        return int(row[0]) <= THREAD_EXACT_MAX

    def _rows_by_rowid(self, rowids: list[int], *, vectors: bool) -> dict[int, Sequence[Any]]:
        """The rows of these embeddings by rowid."""
        columns = _COLUMNS if vectors else _COLUMNS_NO_VECTOR
        out: dict[int, Sequence[Any]] = {}
        for start in range(0, len(rowids), _ONE_READ):
            chunk = rowids[start : start + _ONE_READ]
            sql = f"SELECT rowid, {columns} FROM embeddings WHERE rowid IN ({','.join('?' * len(chunk))})"
            for row in self.connection.execute(sql, chunk):
                out[row[0]] = row[1:]
        return out

    def _search_sqlite_vec(
        self, vector: list[float], limit: int, threshold: float, flt: EmbeddingFilter
    ) -> list[ScoredEmbedding]:
        np = load_numpy("SQLiteEmbeddingAdapter")
        where, args = _search_where(flt)
        blob = np.asarray(vector, dtype="<f4").tobytes()
        sql = (
            f"SELECT {_COLUMNS}, 1.0 - vec_distance_cosine(vector, ?) AS score FROM embeddings"
            f" WHERE {where} AND 1.0 - vec_distance_cosine(vector, ?) >= ? ORDER BY score DESC LIMIT ?"
        )
        rows = self.connection.execute(sql, [blob, *args, blob, threshold, limit]).fetchall()
        return [self._scored(r, float(r[7])) for r in rows]

    def _corpus_size(self) -> tuple[int, int]:
        """How many embeddings the file holds and their total length in terms (BM25's ``N`` and
        ``avgdl`` cover the whole store, as on the in-memory store), read again after a write."""
        generation = self._generation()
        if self._corpus is None or self._corpus[0] != generation:
            count, total = self.connection.execute("SELECT count(*), total(term_count) FROM embeddings").fetchone()
            self._corpus = (generation, int(count), int(total))
        return self._corpus[1], self._corpus[2]

    async def _keyword_search(self, terms: list[str], limit: int, flt: EmbeddingFilter) -> list[ScoredEmbedding]:
        db = self.connection
        n_docs, total = self._corpus_size()
        if n_docs == 0:
            return []
        marks = ",".join("?" * len(terms))
        found = db.execute(f"SELECT term, count(*) FROM embedding_terms WHERE term IN ({marks}) GROUP BY term", terms)
        doc_freq = dict(found.fetchall())
        present = [t for t in terms if doc_freq.get(t)]
        if not present:
            return []
        scoring = self.bm25
        avg = total / n_docs
        # term_score of BM25: idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avg))
        per_length = scoring.b / avg if avg > 0 else 0.0
        fixed = 1.0 - scoring.b + (0.0 if avg > 0 else scoring.b)
        idfs = [x for t in present for x in (t, BM25.idf(n_docs, doc_freq[t]))]
        where, args = _search_where(flt, alias="e")
        sql = (
            f"WITH q (term, idf) AS (VALUES {','.join('(?, ?)' for _ in present)}),"
            f" top AS (SELECT t.rid AS rid, sum(q.idf * t.tf * ? / (t.tf + ? * (? + ? * e.term_count))) AS score"
            f" FROM q JOIN embedding_terms t ON t.term = q.term JOIN embeddings e ON e.rowid = t.rid"
            f" WHERE {where} GROUP BY t.rid ORDER BY score DESC, min(e.id) LIMIT ?)"
            f" SELECT {_E_COLUMNS}, top.score FROM top JOIN embeddings e ON e.rowid = top.rid"
        )
        params = [*idfs, scoring.k1 + 1.0, scoring.k1, fixed, per_length, *args, limit]
        rows = db.execute(sql, params).fetchall()
        return [self._scored(r, float(r[7])) for r in rows if r[7] > 0]

    async def _get_embedding(self, embedding_id: str) -> Embedding | None:
        row = self.connection.execute(f"SELECT {_COLUMNS} FROM embeddings WHERE id = ?", (embedding_id,)).fetchone()
        return None if row is None else self._embedding(row)

    async def _get_by_sources(self, source_ids: list[str]) -> list[Embedding]:
        out: list[Embedding] = []
        db = self.connection
        for start in range(0, len(source_ids), 500):
            chunk = source_ids[start : start + 500]
            sql = f"SELECT {_COLUMNS} FROM embeddings WHERE source_id IN ({','.join('?' * len(chunk))})"
            out.extend(self._embedding(row) for row in db.execute(sql, chunk))
        return out


__all__ = ["SQLiteEmbeddingAdapter", "VectorBackend", "where_clause"]
