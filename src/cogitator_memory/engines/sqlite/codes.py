"""Binary codes of the SQLite embedding store: what its vector search scans.

Each embedding's vector is also kept as one bit per dimension (its sign), packed, in the table
``embedding_codes`` of the same file (migration ``m012_embedding_codes``), in chunks of up to
:data:`CHUNK_ROWS` codes per *part*: the embeddings of one ``user_id`` (none: shared) and one
``index`` (the metadata value that names which of the package's indexes an embedding belongs
to: the message index's turns, the items' vectors; none for other embeddings), so that a search
of one index does not wade through another's codes. A chunk row holds the rowids of its embeddings (``int64``, ascending) and their codes,
and the generation of the write that last changed it (``version``). Chunks are written in the
same transaction as the embeddings they code: the file stays the one source of truth, and a
crash leaves both or neither.

A search (:class:`CodeCache`) holds the codes of the parts it searched (384 dimensions: 48
bytes a vector and 8 for its rowid; 56 MB for a million) and, when the file's generation moved,
reads again only the chunks whose version is newer than the newest it holds: a write of a few
turns costs the next search one chunk (at most 56 KB), whichever process wrote. It ranks the
codes by Hamming distance to the query's signs and the store rescores a shortlist of the
nearest exactly, from the float vectors read by rowid.
"""

from __future__ import annotations

import bisect
import sqlite3
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...vectors.matrix import load_numpy

#: The most codes a chunk holds.
CHUNK_ROWS = 1024

CODES_TABLES = (
    """CREATE TABLE IF NOT EXISTS embedding_codes (
        part TEXT NOT NULL,
        chunk INTEGER NOT NULL,
        first_rowid INTEGER NOT NULL,
        version INTEGER NOT NULL,
        rowids BLOB NOT NULL,
        codes BLOB NOT NULL,
        PRIMARY KEY (part, chunk)
    )""",
    "CREATE INDEX IF NOT EXISTS embedding_codes_by_version ON embedding_codes (part, version)",
    "CREATE INDEX IF NOT EXISTS embedding_codes_by_first ON embedding_codes (part, first_rowid)",
)


#: Between the user and the index of a part's name.
SEPARATOR = "\x1f"
#: The part of an embedding's row, in SQL (on ``embeddings``): the same as :func:`part_of`.
PART_SQL = (
    f"coalesce(user_id, '') || '{SEPARATOR}' ||"
    " coalesce(CASE WHEN json_type(metadata, '$.index') = 'text' THEN json_extract(metadata, '$.index') END, '')"
)


def part_of(user_id: object, index: object) -> str:
    """The part of an embedding of ``user_id`` (its ``user_id`` column) in ``index`` (its
    metadata's ``index`` when a string)."""
    user = "" if user_id is None else str(user_id)
    return user + SEPARATOR + (index if isinstance(index, str) else "")


def parts_for(user_id: str | None, index: object, every: Sequence[str]) -> list[str]:
    """The parts a search scans: the user's and the shared ones (every user's when not scoped
    by user), of ``index`` when the search asks for one (a string), of any otherwise; ``every``
    lists the parts the file holds."""
    if user_id is not None and isinstance(index, str):
        return list(dict.fromkeys([part_of(user_id, index), part_of(None, index)]))
    users = None if user_id is None else {"", user_id}
    out = []
    for part in every:
        user, _, held = part.partition(SEPARATOR)
        if (users is None or user in users) and (not isinstance(index, str) or held == index):
            out.append(part)
    return out


def sign_codes(vectors: Any) -> Any:
    """The packed sign bits (``uint8``, one row per vector) of a float matrix."""
    np = load_numpy("SQLiteEmbeddingAdapter")
    return np.packbits(np.asarray(vectors) > 0, axis=1)


def add_codes(db: sqlite3.Connection, rows: Sequence[tuple[int, str, Any]], version: int) -> None:
    """Code new embeddings, given as ``(rowid, part, float vector)`` in ascending rowid order
    (rowids above every rowid the file holds): appended to the last chunk of their part, new
    chunks made when it is full. Inside the caller's write transaction."""
    if not rows:
        return
    np = load_numpy("SQLiteEmbeddingAdapter")
    by_part: dict[str, list[tuple[int, Any]]] = {}
    for rowid, part, vector in rows:
        by_part.setdefault(part, []).append((rowid, vector))
    for part, items in by_part.items():
        new_ids = np.array([r for r, _ in items], dtype="<i8")
        new_codes = sign_codes(np.stack([np.asarray(v, dtype="<f4") for _, v in items]))
        last = db.execute(
            "SELECT chunk, first_rowid, rowids, codes FROM embedding_codes WHERE part = ? ORDER BY chunk DESC LIMIT 1",
            (part,),
        ).fetchone()
        chunk = -1
        start = 0
        if last is not None:
            chunk = int(last[0])
            held = len(last[2]) // 8
            room = CHUNK_ROWS - held
            if room > 0:
                take = min(room, len(new_ids))
                ids = last[2] + new_ids[:take].tobytes()
                codes = last[3] + new_codes[:take].tobytes()
                db.execute(
                    "UPDATE embedding_codes SET version = ?, rowids = ?, codes = ? WHERE part = ? AND chunk = ?",
                    (version, ids, codes, part, chunk),
                )
                start = take
        while start < len(new_ids):
            chunk += 1
            end = min(start + CHUNK_ROWS, len(new_ids))
            db.execute(
                "INSERT INTO embedding_codes (part, chunk, first_rowid, version, rowids, codes) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    part,
                    chunk,
                    int(new_ids[start]),
                    version,
                    new_ids[start:end].tobytes(),
                    new_codes[start:end].tobytes(),
                ),
            )
            start = end


def drop_codes(db: sqlite3.Connection, rows: Iterable[tuple[int, str]], version: int) -> None:
    """Take embeddings, given as ``(rowid, part)``, out of their chunks (a chunk left empty is
    deleted). Inside the caller's write transaction, before or after the embeddings go."""
    np = load_numpy("SQLiteEmbeddingAdapter")
    by_part: dict[str, list[int]] = {}
    for rowid, part in rows:
        by_part.setdefault(part, []).append(rowid)
    for part, gone in by_part.items():
        firsts = db.execute(
            "SELECT first_rowid, chunk FROM embedding_codes WHERE part = ? ORDER BY first_rowid", (part,)
        ).fetchall()
        if not firsts:
            continue
        starts = [f for f, _ in firsts]
        touched: dict[int, list[int]] = {}
        for rowid in gone:
            at = bisect.bisect_right(starts, rowid) - 1
            if at >= 0:
                touched.setdefault(int(firsts[at][1]), []).append(rowid)
        for chunk, rowids in touched.items():
            row = db.execute(
                "SELECT rowids, codes FROM embedding_codes WHERE part = ? AND chunk = ?", (part, chunk)
            ).fetchone()
            ids = np.frombuffer(row[0], dtype="<i8")
            codes = np.frombuffer(row[1], dtype=np.uint8).reshape(len(ids), -1) if len(ids) else None
            keep = ~np.isin(ids, np.array(rowids, dtype="<i8"))
            if keep.all():
                continue
            if not keep.any():
                db.execute("DELETE FROM embedding_codes WHERE part = ? AND chunk = ?", (part, chunk))
                continue
            assert codes is not None
            db.execute(
                "UPDATE embedding_codes SET version = ?, first_rowid = ?, rowids = ?, codes = ? WHERE part = ? AND chunk = ?",
                (version, int(ids[keep][0]), ids[keep].tobytes(), codes[keep].tobytes(), part, chunk),
            )


def code_all(db: sqlite3.Connection, version: int = 0) -> None:
    """Code every embedding the file holds (the migration of a file made before the codes)."""
    db.execute("DELETE FROM embedding_codes")
    if db.execute("SELECT 1 FROM embeddings LIMIT 1").fetchone() is None:
        return  # nothing to code (and numpy, the [vectors] extra, not needed)
    np = load_numpy("SQLiteEmbeddingAdapter")
    last = 0
    while True:
        batch = db.execute(
            f"SELECT rowid, {PART_SQL}, vector FROM embeddings WHERE rowid > ? ORDER BY rowid LIMIT 4096", (last,)
        ).fetchall()
        if not batch:
            return
        add_codes(db, [(r, part, np.frombuffer(v, dtype="<f4")) for r, part, v in batch], version)
        last = int(batch[-1][0])


@dataclass
class PartCodes:
    """The codes of one part held by a process: one slot of :data:`CHUNK_ROWS` rows per chunk.

    Held as 64-bit words, word-major (``words[w]`` is word ``w`` of every code, zero-padded
    past the code's bytes), so that a distance is a few passes over contiguous arrays."""

    width: int
    words: Any = None
    rowids: Any = None
    #: chunk -> (version, slot)
    chunks: dict[int, tuple[int, int]] = field(default_factory=dict)
    free: list[int] = field(default_factory=list)
    slots: int = 0
    newest: int = -1
    generation: int = -1
    #: Positions of the rows that hold no code (rowid 0), whose distance is set past any.
    empty: Any = None

    @property
    def nwords(self) -> int:
        """64-bit words a code takes."""
        return (self.width + 7) // 8

    def reserve(self, more: int) -> None:
        """Make room for ``more`` new chunks at once (doubling at least)."""
        np = load_numpy("SQLiteEmbeddingAdapter")
        needed = (self.slots + max(0, more - len(self.free))) * CHUNK_ROWS
        held = 0 if self.rowids is None else len(self.rowids)
        if needed <= held and self.words is not None:
            return
        grown = max(needed, 2 * held, 4 * CHUNK_ROWS)
        words = np.zeros((self.nwords, grown), dtype="<u8")
        rowids = np.zeros(grown, dtype="<i8")
        if self.words is not None:
            words[:, : self.words.shape[1]] = self.words
            rowids[: len(self.rowids)] = self.rowids
        self.words, self.rowids = words, rowids

    def _slot(self) -> int:
        if self.free:
            return self.free.pop()
        self.reserve(1)
        self.slots += 1
        return self.slots - 1

    def put(self, chunk: int, version: int, rowids: bytes, codes: bytes) -> None:
        """Hold the codes of ``chunk`` as of ``version``."""
        np = load_numpy("SQLiteEmbeddingAdapter")
        held = self.chunks.get(chunk)
        slot = self._slot() if held is None else held[1]
        ids = np.frombuffer(rowids, dtype="<i8")
        base = slot * CHUNK_ROWS
        self.rowids[base : base + CHUNK_ROWS] = 0
        self.rowids[base : base + len(ids)] = ids
        if len(ids):
            if self.width % 8:
                padded = np.zeros((len(ids), self.nwords * 8), dtype=np.uint8)
                padded[:, : self.width] = np.frombuffer(codes, dtype=np.uint8).reshape(len(ids), self.width)
                rows = padded.view("<u8")
            else:
                rows = np.frombuffer(codes, dtype="<u8").reshape(len(ids), self.nwords)
            self.words[:, base : base + len(ids)] = rows.T
        self.chunks[chunk] = (version, slot)
        self.newest = max(self.newest, version)

    def drop(self, chunk: int) -> None:
        """Forget ``chunk`` (deleted from the file)."""
        _, slot = self.chunks.pop(chunk)
        self.rowids[slot * CHUNK_ROWS : (slot + 1) * CHUNK_ROWS] = 0
        self.free.append(slot)

    @property
    def count(self) -> int:
        """How many codes are held."""
        return 0 if self.empty is None else self.slots * CHUNK_ROWS - len(self.empty)

    def seal(self) -> None:
        """Note the empty rows after the chunks changed."""
        np = load_numpy("SQLiteEmbeddingAdapter")
        used = self.slots * CHUNK_ROWS
        self.empty = None if self.rowids is None else np.flatnonzero(self.rowids[:used] == 0)

    def distances(self, query_words: Any) -> tuple[Any, Any]:
        """The Hamming distance of every held code to the query's words, and the rows' rowids."""
        np = load_numpy("SQLiteEmbeddingAdapter")
        used = self.slots * CHUNK_ROWS
        dist = np.zeros(used, dtype=np.uint16)
        scratch = np.empty(used, dtype="<u8")
        for w in range(self.nwords):
            np.bitwise_xor(self.words[w, :used], query_words[w], out=scratch)
            np.add(dist, np.bitwise_count(scratch), out=dist)
        if self.empty is not None and len(self.empty):
            dist[self.empty] = np.iinfo(np.uint16).max
        return dist, self.rowids[:used]

    def held_bytes(self) -> int:
        """The bytes of the codes and rowids held."""
        return 0 if self.words is None else int(self.words.nbytes + self.rowids.nbytes)


def query_words(query: Any) -> Any:
    """A query vector's sign code as the 64-bit words :meth:`PartCodes.distances` takes."""
    np = load_numpy("SQLiteEmbeddingAdapter")
    code = sign_codes(np.asarray(query).reshape(1, -1))[0]
    padded = np.zeros(((len(code) + 7) // 8) * 8, dtype=np.uint8)
    padded[: len(code)] = code
    return padded.view("<u8")


class CodeCache:
    """The codes of the most recently searched ``capacity`` parts, kept in step with the file."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._parts: OrderedDict[str, PartCodes] = OrderedDict()
        #: How many chunks were read from the file (all of a part's at its first search, then
        #: those a write changed).
        self.chunks_read = 0

    def clear(self) -> None:
        """Forget every part."""
        self._parts.clear()

    def held_bytes(self) -> int:
        """The bytes of the codes and rowids held."""
        return sum(p.held_bytes() for p in self._parts.values())

    def part(self, db: sqlite3.Connection, part: str, generation: int, width: int) -> PartCodes:
        """The codes of ``part`` as the file holds them at ``generation`` (read if not held;
        when the generation moved, only the chunks changed since)."""
        held = self._parts.get(part)
        if held is None or held.width != width:
            held = PartCodes(width)
            self._parts[part] = held
        self._parts.move_to_end(part)
        while len(self._parts) > self.capacity:
            self._parts.popitem(last=False)
        if held.generation == generation:
            return held
        fresh = db.execute(
            "SELECT count(*) FROM embedding_codes WHERE part = ? AND version > ?", (part, held.newest)
        ).fetchone()[0]
        if fresh:
            held.reserve(int(fresh))
            # one chunk at a time (not fetchall: a million codes are 56 MB of blobs at once)
            for chunk, version, rowids, codes in db.execute(
                "SELECT chunk, version, rowids, codes FROM embedding_codes WHERE part = ? AND version > ?",
                (part, held.newest),
            ):
                held.put(int(chunk), int(version), rowids, codes)
                self.chunks_read += 1
        if held.chunks:
            present = {int(r[0]) for r in db.execute("SELECT chunk FROM embedding_codes WHERE part = ?", (part,))}
            for chunk in [c for c in held.chunks if c not in present]:
                held.drop(chunk)
        held.seal()
        held.generation = generation
        return held


def nearest_rows(parts: Sequence[PartCodes], query: Any, count: int) -> list[int]:
    """The rowids of ``count`` codes of ``parts`` nearest ``query`` (:func:`query_words`) by
    Hamming distance, nearest first (equal distances in the order held); all of them when they
    hold no more."""
    np = load_numpy("SQLiteEmbeddingAdapter")
    dists, ids = [], []
    for p in parts:
        if p.words is None:
            continue
        d, r = p.distances(query)
        dists.append(d)
        ids.append(r)
    if not dists:
        return []
    dist = dists[0] if len(dists) == 1 else np.concatenate(dists)
    rowids = ids[0] if len(ids) == 1 else np.concatenate(ids)
    valid = sum(p.count for p in parts)
    if count >= valid:
        picked = np.flatnonzero(rowids != 0)
    else:
        # distances are small integers: the cut is found by counting, not by sorting
        counts = np.bincount(dist, minlength=1)
        cut = int(np.searchsorted(np.cumsum(counts), count))
        under = np.flatnonzero(dist < cut)
        at = np.flatnonzero(dist == cut)[: count - len(under)]
        picked = np.concatenate((under, at))
    order = np.argsort(dist[picked], kind="stable")
    out: list[int] = rowids[picked[order]].tolist()
    return out


__all__ = [
    "CHUNK_ROWS",
    "CODES_TABLES",
    "PART_SQL",
    "CodeCache",
    "PartCodes",
    "add_codes",
    "code_all",
    "drop_codes",
    "nearest_rows",
    "part_of",
    "parts_for",
    "query_words",
    "sign_codes",
]
