"""``SQLiteEmbeddingAdapter``: embeddings in the same SQLite file as :class:`~cogitator_memory.SQLiteAdapter`.

The table comes from migration ``m002_embeddings`` of
:mod:`cogitator_memory.engines.sqlite.schema`, so one file holds threads and vectors. Vectors
are float32 BLOBs (a vector reads back rounded to float32); search is numpy brute force over
the matrix of the searched scope, cached per store and reloaded when the file's embedding
generation (moved by every write, of any connection or process) changes. Keyword search is
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
from ...vectors.matrix import Matrix, ScopeCache, VectorMatrix, load_numpy, unit_rows
from ...vectors.records import (
    SCOPE_KEYS,
    DeletionFilter,
    Embedding,
    EmbeddingFilter,
    MetadataValue,
    ScoredEmbedding,
    packed_embedding,
    without_vectors,
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


def where_clause(
    *,
    source_type: str | None,
    scope: dict[str, str],
    exact: dict[str, MetadataValue],
    alias: str = "",
) -> tuple[str, list[Any]]:
    """SQL conditions (joined by AND, ``"1"`` when none) and their parameters.

    ``scope`` keys follow the scoping rule (NULL is shared); ``exact`` keys must hold exactly
    that JSON value (type included).
    """
    p = f"{alias}." if alias else ""
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
        parts.append(f"EXISTS (SELECT 1 FROM json_each({p}metadata) j WHERE j.key = ? AND j.type = ? AND j.value = ?)")
        args.extend([key, kind, stored])
    return (" AND ".join(parts) if parts else "1"), args


def _search_where(flt: EmbeddingFilter, alias: str = "") -> tuple[str, list[Any]]:
    return where_clause(source_type=flt.source_type, scope=flt.scope(), exact=dict(flt.metadata or {}), alias=alias)


#: The most hits read by one statement (by rowid, with the generation) after a search.
_ONE_READ = 500


class _FileMatrix(VectorMatrix):
    """A scope's matrix with each embedding's rowid (where its row is in the file)."""

    def __init__(self, ids: list[str], rowids: dict[str, int], matrix: Matrix | None) -> None:
        super().__init__(ids, matrix)
        self.rowids = rowids


class SQLiteEmbeddingAdapter(BaseEmbeddingAdapter):
    """An embedding store in a SQLite file, beside the threads of :class:`~cogitator_memory.SQLiteAdapter`.

    Give ``path`` (its own connection, WAL mode) or ``store``, a :class:`SQLiteAdapter` whose open
    connection it shares (connect the store first). ``dimensions`` fixes the vector size;
    otherwise the file's stored size, or the first vector added, sets it. ``bm25`` sets the
    keyword scoring, as on the in-memory store (default ``BM25(k1=1.2, b=0.75)``; for chat
    messages of very uneven length ``BM25(k1=3, b=1)`` measured better, see
    ``docs/embeddings.md``). Needs numpy (the ``[vectors]`` extra).
    """

    provider: ClassVar[str] = "sqlite"

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
        self._cache = ScopeCache(cache_scopes)
        self._cache_generation = -1
        #: Documents and their total length in terms, for BM25, and the generation they are of.
        self._corpus: tuple[int, int, int] | None = None

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
        self._cache.clear()
        self._cache_generation = -1

    def _choose_backend(self, db: sqlite3.Connection) -> str:
        if self.requested_backend != "sqlite-vec":
            return "numpy"
        if not hasattr(db, "enable_load_extension"):
            raise StoreUnavailableError(
                "sqlite-vec cannot be loaded: this Python's sqlite3 was built without extension loading "
                "(use vector_backend='auto', or a Python whose sqlite3 has enable_load_extension)"
            )
        try:
            import sqlite_vec  # type: ignore[import-not-found, unused-ignore]
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
        self._cache.clear()
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
    def _write(self) -> Iterator[sqlite3.Connection]:
        with write_transaction(self.connection) as db:
            yield db
            db.execute("UPDATE embedding_state SET value = value + 1 WHERE key = 'generation'")
        self._cache.clear()

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
        with self._write() as db:
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
            index_embedding_terms(db, indexed)

    async def _delete_embedding(self, embedding_id: str) -> bool:
        with self._write() as db:
            drop_embedding_terms(db, "id = ?", (embedding_id,))
            return bool(db.execute("DELETE FROM embeddings WHERE id = ?", (embedding_id,)).rowcount)

    async def _delete_embeddings(self, embedding_ids: list[str]) -> int:
        gone = 0
        with self._write() as db:  # one transaction for all of them
            for start in range(0, len(embedding_ids), 500):
                part = embedding_ids[start : start + 500]
                marks = ", ".join("?" * len(part))
                drop_embedding_terms(db, f"id IN ({marks})", tuple(part))
                gone += db.execute(f"DELETE FROM embeddings WHERE id IN ({marks})", part).rowcount
        return gone

    async def _delete_by_filter(self, flt: DeletionFilter) -> int:
        where, args = where_clause(source_type=flt.source_type, scope={}, exact=flt.exact_metadata())
        with self._write() as db:
            drop_embedding_terms(db, where, args)
            return db.execute(f"DELETE FROM embeddings WHERE {where}", args).rowcount

    # ----- reads -----------------------------------------------------------------------------

    def _generation(self) -> int:
        row = self.connection.execute("SELECT value FROM embedding_state WHERE key = 'generation'").fetchone()
        return int(row[0])

    def _scope_matrix(self, flt: EmbeddingFilter) -> VectorMatrix:
        generation = self._generation()
        if generation != self._cache_generation:
            self._cache.clear()
            self._cache_generation = generation
        key = flt.cache_key()
        found = self._cache.get(key)
        if found is not None:
            return found
        np = load_numpy("SQLiteEmbeddingAdapter")
        where, args = _search_where(flt)
        rows = self.connection.execute(f"SELECT rowid, id, vector FROM embeddings WHERE {where}", args).fetchall()
        matrix = None
        if rows:
            raw = np.frombuffer(b"".join(r[2] for r in rows), dtype="<f4").reshape(len(rows), -1)
            matrix = unit_rows(raw)
        built = _FileMatrix([r[1] for r in rows], {r[1]: r[0] for r in rows}, matrix)
        self._cache.put(key, built)
        return built

    def _rows_as_of(self, matrix: _FileMatrix, ids: list[str], vectors: bool) -> dict[str, Sequence[Any]] | None:
        """The rows of these embeddings of ``matrix`` read by rowid, with the store's generation
        in the same statement (one read of the file): ``None`` when the file changed since the
        matrix was built (its rowids may then name other rows)."""
        columns = _COLUMNS if vectors else _COLUMNS_NO_VECTOR
        rowids = [matrix.rowids[i] for i in ids]
        sql = (
            f"SELECT {columns}, (SELECT value FROM embedding_state WHERE key = 'generation') FROM embeddings"
            f" WHERE rowid IN ({','.join('?' * len(rowids))})"
        )
        found = self.connection.execute(sql, rowids).fetchall()
        if len(found) != len(ids) or int(found[0][-1]) != self._cache_generation:
            return None
        return {row[0]: row for row in found}

    def _rows_by_id(self, ids: list[str], *, vectors: bool = True) -> dict[str, Sequence[Any]]:
        """The rows of these embeddings by id (``vectors=False``: the vector column read as ``NULL``)."""
        out: dict[str, Sequence[Any]] = {}
        db = self.connection
        columns = _COLUMNS if vectors else _COLUMNS_NO_VECTOR
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            sql = f"SELECT {columns} FROM embeddings WHERE id IN ({','.join('?' * len(chunk))})"
            for row in db.execute(sql, chunk):
                out[row[0]] = row
        return out

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
        cached = self._cache.get(flt.cache_key())
        if isinstance(cached, _FileMatrix) and limit <= _ONE_READ:
            # The matrix of the last generation seen, and the hits' rows read with the store's
            # generation: the hits stand when the file has not changed since (one statement in
            # all); otherwise the search is made again on the file as it is now.
            top = cached.top(vector, limit, threshold)
            if not top:
                if self._generation() == self._cache_generation:
                    return []
            else:
                rows = self._rows_as_of(cached, [i for i, _ in top], include_vectors)
                if rows is not None:
                    return self._scored_rows([(rows[i], s) for i, s in top])
        top = self._scope_matrix(flt).top(vector, limit, threshold)
        rows = self._rows_by_id([i for i, _ in top], vectors=include_vectors)
        return self._scored_rows([(rows[i], s) for i, s in top if i in rows])

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
