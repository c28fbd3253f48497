"""The recall index in MongoDB: the primitives of :class:`~cogitator_memory.index.base.RecallIndexMixin`
as pymongo calls, mixed into :class:`~cogitator_memory.engines.mongodb.adapter.MongoDBAdapter`.

A record is one document of ``<prefix>recall_records`` (``_id`` is the record id). The fields a
search filters by are fields of their own: the scope (``agent_id``, ``user_id``, ``thread_id``,
``None`` when the record has none), ``kind``, ``status``, ``source_id``, the times as integer
microseconds (``said_us``, ``time_start_us``, ``time_end_us``), the length in terms ``len``,
the postings ``post``: one ``{"t": term, "f": count}`` per distinct term, and ``wseq``, the
record's write sequence: written later, a larger number (the records of one put in their order;
a record written again takes a new one). The rest of the record (its text, ordered terms,
lineage...) is one JSON string ``body``. A document written before ``wseq`` existed has none and
counts as written first.

The inverted index is the multikey index on ``post.t``: a keyword search reads the index entries
of the query's terms only, filtered by scope in the same ``$match``, and sums BM25 over the
matched postings in an aggregation (``$filter`` and ``$reduce`` over ``post``), sorted and cut
at ``limit`` by the server; then it reads those ``limit`` records by id. A search of the
postings indexed last (``newest``) reads the ``(post.t, wseq)`` index instead: of the term's
documents, the ``newest`` of the highest ``wseq`` whatever their scope, then filters and scores
those. A term's document frequency is a ``count_documents`` on the ``post.t`` index. The time
channel reads ``(said_us, _id)`` and ``time_start_us`` (two bounded queries, merged).
``<prefix>recall_meta`` holds the ``stats`` document (record count and total length, BM25's
``N`` and ``avgdl``, moved by ``$inc`` in every write), the ``wseq`` document (the last write
sequence given, moved by ``$inc`` in every put) and the index's state strings (``state:<key>``).

Atomicity: a record, with its postings, is one document, so each record is written or deleted
whole and a search never sees half of one. A batch (a put, a delete) runs in a multi-document
transaction when the adapter uses them (see ``MongoDBAdapter.uses_transactions``), a put's
write sequence taken in it too, so that puts hold theirs in the order they commit. Without them
the batch reads the documents it replaces or deletes first, writes, then moves the stats; if any
step fails it puts those documents back (and deletes the ones it added) before raising, so a
failed batch leaves nothing. A reader may see the middle of a batch; a client that dies in the
middle of one leaves the records it wrote whole and the stats short of them. A scope delete runs
in chunks of :data:`SCOPE_CHUNK` records, each one such batch.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from ...clock import from_micros, to_micros
from ...index.base import RECALL_BM25, RecallIndexMixin
from ...index.records import RecallFilter, RecallRecord

if TYPE_CHECKING:
    from pymongo.asynchronous.client_session import AsyncClientSession
    from pymongo.asynchronous.collection import AsyncCollection
    from pymongo.asynchronous.database import AsyncDatabase
    from pymongo.asynchronous.mongo_client import AsyncMongoClient

T = TypeVar("T")
Doc = dict[str, Any]

#: The indexes of ``<prefix>recall_records``: name and keys.
RECALL_INDEXES: tuple[tuple[str, list[tuple[str, int]]], ...] = (
    ("terms", [("post.t", 1)]),
    ("terms_wseq", [("post.t", 1), ("wseq", -1)]),
    ("said", [("said_us", -1), ("_id", 1)]),
    ("user_said", [("user_id", 1), ("said_us", -1)]),
    ("thread", [("thread_id", 1)]),
    ("named_time", [("time_start_us", 1)]),
)
#: The id of the stats document in ``<prefix>recall_meta``.
STATS_ID = "stats"
#: The id of the write sequence's document in ``<prefix>recall_meta`` (``{"value": last given}``).
WSEQ_ID = "wseq"
#: What a state key's document id starts with in ``<prefix>recall_meta``.
STATE_PREFIX = "state:"
#: Records a scope delete takes in one batch.
SCOPE_CHUNK = 1000
#: Most ids in one ``$in`` list.
_CHUNK = 5000
#: The fields of a record kept in its JSON body (the others are fields of their own).
_BODY_FIELDS = {"role", "name", "seq", "text", "terms", "term_counts", "said_at", "valid_from", "valid_to", "lineage"}
#: What a read fetches of a document (everything but the postings).
_READ: Doc = {"post": 0, "len": 0}


# --- documents (no I/O) -------------------------------------------------------------------


def _micros(value: datetime | None) -> int | None:
    return None if value is None else to_micros(value)


def recall_document(record: RecallRecord) -> Doc:
    """The stored form of a record: its filtered fields, length, postings and JSON body (the write
    sequence ``wseq`` is set by the put)."""
    return {
        "_id": record.id,
        "kind": record.kind,
        "source_id": record.source_id,
        "agent_id": record.agent_id,
        "user_id": record.user_id,
        "thread_id": record.thread_id,
        "status": record.status,
        "said_us": to_micros(record.said_at),
        "time_start_us": _micros(record.time_start),
        "time_end_us": _micros(record.time_end),
        "len": record.term_total,
        "post": [{"t": term, "f": tf} for term, tf in zip(record.terms, record.term_counts, strict=True)],
        "body": record.model_dump_json(include=_BODY_FIELDS, exclude_none=True),
    }


def record_from_document(doc: Doc) -> RecallRecord:
    """The :class:`RecallRecord` a stored document holds."""
    fields: Doc = json.loads(doc["body"])
    start, end = doc.get("time_start_us"), doc.get("time_end_us")
    fields.update(
        id=doc["_id"],
        kind=doc["kind"],
        source_id=doc["source_id"],
        agent_id=doc.get("agent_id"),
        user_id=doc.get("user_id"),
        thread_id=doc.get("thread_id"),
        status=doc["status"],
        time_start=None if start is None else from_micros(start),
        time_end=None if end is None else from_micros(end),
    )
    return RecallRecord.model_validate(fields)


def scope_filter(flt: RecallFilter) -> Doc:
    """The MongoDB conditions of :func:`~cogitator_memory.index.records.record_in_scope`: a
    record of no agent, user or thread (``None``) is shared."""
    out: Doc = {}
    for key in ("agent_id", "user_id", "thread_id"):
        value = getattr(flt, key)
        if value is not None:
            out[key] = {"$in": [None, value]}
    if flt.kinds is not None:
        out["kind"] = {"$in": list(flt.kinds)}
    out["status"] = {"$in": list(flt.statuses)}
    return out


def bm25_pipeline(
    weights: list[tuple[str, float]], avg_len: float, flt: RecallFilter, limit: int, newest: int | None = None
) -> list[Doc]:
    """The aggregation that scores the records in scope holding any term of ``weights`` by BM25
    (``k1``, ``b`` of :data:`~cogitator_memory.index.base.RECALL_BM25`) and keeps the ``limit``
    best (ties by id): ``[{"_id": id, "score": score}]``. With ``newest`` (``weights`` then holds
    one term) only the ``newest`` documents holding the term written last (highest ``wseq``)
    are scored, taken before the scope filter."""
    k1, b = RECALL_BM25.k1, RECALL_BM25.b
    per_length = b / avg_len if avg_len > 0 else 0.0
    fixed = 1.0 - b if avg_len > 0 else 1.0
    terms = [term for term, _ in weights]
    idf: Doc = {
        "$switch": {
            "branches": [{"case": {"$eq": ["$$this.t", term]}, "then": weight} for term, weight in weights],
            "default": 0.0,
        }
    }
    # sum over the record's postings of the query's terms: idf * f * (k1 + 1) / (f + norm)
    score: Doc = {
        "$let": {
            "vars": {"norm": {"$multiply": [k1, {"$add": [fixed, {"$multiply": [per_length, "$len"]}]}]}},
            "in": {
                "$reduce": {
                    "input": {"$filter": {"input": "$post", "cond": {"$in": ["$$this.t", terms]}}},
                    "initialValue": 0.0,
                    "in": {
                        "$add": [
                            "$$value",
                            {
                                "$divide": [
                                    {"$multiply": [idf, "$$this.f", k1 + 1.0]},
                                    {"$add": ["$$this.f", "$$norm"]},
                                ]
                            },
                        ]
                    },
                }
            },
        }
    }
    if newest is None:
        head: list[Doc] = [{"$match": {"post.t": {"$in": terms}, **scope_filter(flt)}}]
    else:
        # the (post.t, wseq) index in order; a document without wseq (written before it existed)
        # sorts last in this descending sort (a missing field sorts as null, below numbers, in
        # MongoDB and in the mongoeco emulator), so it counts as written first
        [term] = terms
        head = [
            {"$match": {"post.t": term}},
            {"$sort": {"wseq": -1}},
            {"$limit": newest},
            {"$match": scope_filter(flt)},
        ]
    return [
        *head,
        {"$project": {"_id": 1, "score": score}},
        {"$match": {"score": {"$gt": 0}}},
        {"$sort": {"score": -1, "_id": 1}},
        {"$limit": limit},
    ]


def _chunks(ids: list[str], size: int = _CHUNK) -> list[list[str]]:
    return [ids[start : start + size] for start in range(0, len(ids), size)]


def _newest_first(doc: Doc) -> tuple[int, str]:
    return (-int(doc["said_us"]), str(doc["_id"]))


# --- the mixin ----------------------------------------------------------------------------


class MongoDBRecallIndex(RecallIndexMixin):
    """The recall-index half of :class:`~cogitator_memory.engines.mongodb.adapter.MongoDBAdapter`:
    records in ``<prefix>recall_records``, stats and state in ``<prefix>recall_meta`` (see the
    module docstring)."""

    _recall_col: AsyncCollection[Doc] | None = None
    _recall_meta_col: AsyncCollection[Doc] | None = None

    if TYPE_CHECKING:  # provided by the adapter
        collection_prefix: str
        _client: AsyncMongoClient[Doc] | None

        async def _atomic(self, work: Callable[[AsyncClientSession | None], Awaitable[T]]) -> T: ...

    @property
    def recall_collection(self) -> AsyncCollection[Doc]:
        """The collection of recall records."""
        from ...errors import NotConnectedError

        if self._client is None or self._recall_col is None:
            raise NotConnectedError("mongodb store is not connected: call connect() first")
        return self._recall_col

    @property
    def recall_meta_collection(self) -> AsyncCollection[Doc]:
        """The collection of the recall index's stats and state."""
        from ...errors import NotConnectedError

        if self._client is None or self._recall_meta_col is None:
            raise NotConnectedError("mongodb store is not connected: call connect() first")
        return self._recall_meta_col

    async def _prepare_recall(self, db: AsyncDatabase[Doc]) -> None:
        """Create the recall collections' indexes and the stats document (at ``connect()``)."""
        records = db[f"{self.collection_prefix}recall_records"]
        meta = db[f"{self.collection_prefix}recall_meta"]
        for name, keys in RECALL_INDEXES:
            await records.create_index(keys, name=name)
        await meta.update_one({"_id": STATS_ID}, {"$setOnInsert": {"records": 0, "total": 0}}, upsert=True)
        self._recall_col, self._recall_meta_col = records, meta

    # ----- writes --------------------------------------------------------------------------

    async def _restore(self, old: list[Doc], added: list[str]) -> None:
        """Put back the documents ``old`` a failed batch replaced or deleted, and delete the ids
        ``added`` it inserted (without a transaction)."""
        from pymongo import DeleteMany, ReplaceOne

        ops: list[Any] = [ReplaceOne({"_id": doc["_id"]}, doc, upsert=True) for doc in old]
        if added:
            ops.append(DeleteMany({"_id": {"$in": added}}))
        if ops:
            await self.recall_collection.bulk_write(ops, ordered=False)

    async def _move_stats(self, records: int, total: int, session: AsyncClientSession | None) -> None:
        if records or total:
            await self.recall_meta_collection.update_one(
                {"_id": STATS_ID}, {"$inc": {"records": records, "total": total}}, upsert=True, session=session
            )

    async def _recall_put(self, records: list[RecallRecord]) -> None:
        from pymongo import ReplaceOne, ReturnDocument

        collection = self.recall_collection
        docs = [recall_document(r) for r in records]
        ids = [d["_id"] for d in docs]

        async def work(session: AsyncClientSession | None) -> None:
            # Without a transaction the documents replaced are read whole, to be put back on a failure.
            projection = None if session is None else {"len": 1}
            old: list[Doc] = []
            for chunk in _chunks(ids):
                old += await collection.find({"_id": {"$in": chunk}}, projection, session=session).to_list()
            had = {d["_id"] for d in old}
            # the write sequence, in the transaction when there is one: a failed put leaves a
            # gap at most, and of two puts the one that commits later holds the larger numbers
            counter = await self.recall_meta_collection.find_one_and_update(
                {"_id": WSEQ_ID},
                {"$inc": {"value": len(docs)}},
                upsert=True,
                return_document=ReturnDocument.AFTER,
                session=session,
            )
            assert counter is not None  # upserted and returned after the update
            first = int(counter["value"]) - len(docs) + 1
            for offset, doc in enumerate(docs):
                doc["wseq"] = first + offset
            try:
                ops = [ReplaceOne({"_id": d["_id"]}, d, upsert=True) for d in docs]
                await collection.bulk_write(ops, ordered=True, session=session)
                grown = sum(d["len"] for d in docs) - sum(int(d["len"]) for d in old)
                await self._move_stats(len(docs) - len(old), grown, session)
            except BaseException:
                if session is None:
                    await self._restore(old, [i for i in ids if i not in had])
                raise

        await self._atomic(work)

    async def _drop(self, ids: list[str]) -> int:
        """Delete the records with ``ids`` (at most :data:`_CHUNK`) and move the stats, as one batch."""
        collection = self.recall_collection

        async def work(session: AsyncClientSession | None) -> int:
            # Without a transaction the documents are read whole, to be put back on a failure.
            projection = None if session is None else {"len": 1}
            old = await collection.find({"_id": {"$in": ids}}, projection, session=session).to_list()
            if not old:
                return 0
            try:
                gone = await collection.delete_many({"_id": {"$in": [d["_id"] for d in old]}}, session=session)
                await self._move_stats(-len(old), -sum(int(d["len"]) for d in old), session)
            except BaseException:
                if session is None:
                    await self._restore(old, [])
                raise
            return int(gone.deleted_count)

        return await self._atomic(work)

    async def _recall_delete(self, ids: list[str]) -> int:
        count = 0
        for chunk in _chunks(ids):
            count += await self._drop(chunk)
        return count

    async def _recall_delete_scope(self, key: str, value: str) -> int:
        field = {"thread_id": "thread_id", "user_id": "user_id"}[key]
        count = 0
        while True:
            found = await self.recall_collection.find({field: value}, {"_id": 1}).limit(SCOPE_CHUNK).to_list()
            if not found:
                return count
            count += await self._drop([d["_id"] for d in found])

    # ----- reads ---------------------------------------------------------------------------

    async def _recall_get(self, ids: list[str]) -> list[RecallRecord]:
        out: list[RecallRecord] = []
        for chunk in _chunks(ids):
            docs = await self.recall_collection.find({"_id": {"$in": chunk}}, _READ).to_list()
            out.extend(record_from_document(d) for d in docs)
        return out

    async def _recall_stats(self, terms: list[str]) -> tuple[int, int, dict[str, int]]:
        collection = self.recall_collection
        stats = await self.recall_meta_collection.find_one({"_id": STATS_ID})
        counts = await asyncio.gather(*(collection.count_documents({"post.t": t}, hint="terms") for t in terms))
        records = int(stats["records"]) if stats else 0
        total = int(stats["total"]) if stats else 0
        return records, total, dict(zip(terms, (int(n) for n in counts), strict=True))

    async def _recall_keyword(
        self,
        weights: list[tuple[str, float]],
        avg_len: float,
        flt: RecallFilter,
        limit: int,
        newest: int | None = None,
    ) -> list[tuple[RecallRecord, float]]:
        pipeline = bm25_pipeline(weights, avg_len, flt, limit, newest)
        cursor = await self.recall_collection.aggregate(pipeline)
        ranked = [(str(d["_id"]), float(d["score"])) for d in await cursor.to_list()]
        if not ranked:
            return []
        found = {r.id: r for r in await self._recall_get([rid for rid, _ in ranked])}
        # a record deleted between the two reads is left out
        return [(found[rid], score) for rid, score in ranked if rid in found]

    async def _recall_time(self, start: datetime, end: datetime, flt: RecallFilter, limit: int) -> list[RecallRecord]:
        lo, hi = to_micros(start), to_micros(end)
        scope = scope_filter(flt)
        said: Doc = {"said_us": {"$gte": lo, "$lt": hi}, **scope}
        named: Doc = {
            "time_start_us": {"$ne": None, "$lt": hi},
            "$or": [{"time_end_us": None, "time_start_us": {"$gte": lo}}, {"time_end_us": {"$gt": lo}}],
            **scope,
        }
        order = [("said_us", -1), ("_id", 1)]
        collection = self.recall_collection
        by_said, by_named = await asyncio.gather(
            collection.find(said, _READ).sort(order).limit(limit).to_list(),
            collection.find(named, _READ).sort(order).limit(limit).to_list(),
        )
        merged = {d["_id"]: d for d in [*by_said, *by_named]}
        best = sorted(merged.values(), key=_newest_first)[:limit]
        return [record_from_document(d) for d in best]

    async def _recall_count(self, flt: RecallFilter) -> int:
        return int(await self.recall_collection.count_documents(scope_filter(flt)))

    async def _recall_page(self, cursor: str | None, limit: int) -> tuple[list[RecallRecord], str | None]:
        # by _id: the cursor is the last id returned
        query: Doc = {} if cursor is None else {"_id": {"$gt": cursor}}
        docs = await self.recall_collection.find(query, _READ).sort("_id", 1).limit(limit).to_list()
        records = [record_from_document(d) for d in docs]
        return records, (records[-1].id if len(records) == limit else None)

    async def _recall_state_get(self, key: str) -> str | None:
        doc = await self.recall_meta_collection.find_one({"_id": STATE_PREFIX + key})
        return None if doc is None else str(doc["value"])

    async def _recall_state_set(self, key: str, value: str) -> None:
        await self.recall_meta_collection.update_one(
            {"_id": STATE_PREFIX + key}, {"$set": {"value": value}}, upsert=True
        )


__all__ = [
    "RECALL_INDEXES",
    "SCOPE_CHUNK",
    "MongoDBRecallIndex",
    "bm25_pipeline",
    "recall_document",
    "record_from_document",
    "scope_filter",
]
