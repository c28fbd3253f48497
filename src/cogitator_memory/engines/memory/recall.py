"""The recall index of :class:`~cogitator_memory.engines.memory.threads.InMemoryAdapter`.

Records are kept as copies, with an inverted index (term -> record ids and their counts, in
the order they were indexed: a record written again moves to the end), the records by thread
and by user, and a list of ``(said_at, id)`` kept sorted for time ranges.
"""

from __future__ import annotations

import bisect
import heapq
from datetime import datetime
from itertools import islice

from ...index.base import RECALL_BM25, RecallIndexMixin
from ...index.records import RecallFilter, RecallRecord, names_time_in, record_in_scope


class InMemoryRecallIndex(RecallIndexMixin):
    """The recall-index half of the in-memory store."""

    def __init__(self) -> None:
        super().__init__()
        self._recall: dict[str, RecallRecord] = {}
        self._postings: dict[str, dict[str, int]] = {}
        self._lengths: dict[str, int] = {}
        self._total_len = 0
        self._by_said: list[tuple[datetime, str]] = []
        self._recall_state: dict[str, str] = {}
        #: The records that name a time of their own (``time_start``), searched by overlap.
        self._timed: dict[str, RecallRecord] = {}

    def _unindex(self, rid: str) -> bool:
        old = self._recall.pop(rid, None)
        if old is None:
            return False
        self._timed.pop(rid, None)
        for term in set(old.terms):
            posting = self._postings.get(term)
            if posting is not None:
                posting.pop(rid, None)
                if not posting:
                    del self._postings[term]
        self._total_len -= self._lengths.pop(rid, 0)
        at = bisect.bisect_left(self._by_said, (old.said_at, rid))
        if at < len(self._by_said) and self._by_said[at] == (old.said_at, rid):
            del self._by_said[at]
        return True

    async def _recall_put(self, records: list[RecallRecord]) -> None:
        for record in records:
            kept = record.model_copy(deep=True)
            self._unindex(kept.id)
            self._recall[kept.id] = kept
            for term, tf in zip(kept.terms, kept.term_counts, strict=True):
                self._postings.setdefault(term, {})[kept.id] = tf
            self._lengths[kept.id] = kept.term_total
            self._total_len += kept.term_total
            bisect.insort(self._by_said, (kept.said_at, kept.id))
            if kept.time_start is not None:
                self._timed[kept.id] = kept

    async def _recall_get(self, ids: list[str]) -> list[RecallRecord]:
        return [self._recall[i].model_copy(deep=True) for i in ids if i in self._recall]

    async def _recall_delete(self, ids: list[str]) -> int:
        return sum(1 for i in ids if self._unindex(i))

    async def _recall_delete_scope(self, key: str, value: str) -> int:
        gone = [rid for rid, r in self._recall.items() if getattr(r, key) == value]
        for rid in gone:
            self._unindex(rid)
        return len(gone)

    async def _recall_stats(self, terms: list[str]) -> tuple[int, int, dict[str, int]]:
        return len(self._recall), self._total_len, {t: len(self._postings.get(t, ())) for t in terms}

    async def _recall_keyword(
        self,
        weights: list[tuple[str, float]],
        avg_len: float,
        flt: RecallFilter,
        limit: int,
        newest: int | None = None,
    ) -> list[tuple[RecallRecord, float]]:
        k1 = RECALL_BM25.k1
        b = RECALL_BM25.b
        scores: dict[str, float] = {}
        for term, idf in weights:
            held = self._postings.get(term, {})
            postings = held.items() if newest is None else islice(reversed(held.items()), newest)
            for rid, tf in postings:
                norm = 1.0 - b + b * (self._lengths[rid] / avg_len if avg_len > 0 else 1.0)
                scores[rid] = scores.get(rid, 0.0) + idf * tf * (k1 + 1.0) / (tf + k1 * norm)
        ranked = (
            (score, rid) for rid, score in scores.items() if score > 0 and record_in_scope(self._recall[rid], flt)
        )
        best = heapq.nsmallest(limit, ranked, key=lambda pair: (-pair[0], pair[1]))
        return [(self._recall[rid].model_copy(deep=True), score) for score, rid in best]

    async def _recall_time(self, start: datetime, end: datetime, flt: RecallFilter, limit: int) -> list[RecallRecord]:
        found: dict[str, RecallRecord] = {}
        lo = bisect.bisect_left(self._by_said, (start, ""))
        hi = bisect.bisect_left(self._by_said, (end, ""))
        for _said, rid in self._by_said[lo:hi]:
            record = self._recall[rid]
            if record_in_scope(record, flt):
                found[rid] = record
        for rid, record in self._timed.items():
            if rid not in found and names_time_in(record, start, end) and record_in_scope(record, flt):
                found[rid] = record
        best = heapq.nsmallest(limit, found.values(), key=lambda r: (-r.said_at.timestamp(), r.id))
        return [r.model_copy(deep=True) for r in best]

    async def _recall_count(self, flt: RecallFilter) -> int:
        return sum(1 for r in self._recall.values() if record_in_scope(r, flt))

    async def _recall_page(self, cursor: str | None, limit: int) -> tuple[list[RecallRecord], str | None]:
        # by id: the cursor is the last id returned
        ids = heapq.nsmallest(limit, (i for i in self._recall if cursor is None or i > cursor))
        records = [self._recall[i].model_copy(deep=True) for i in ids]
        return records, (ids[-1] if len(ids) == limit else None)

    async def _recall_state_get(self, key: str) -> str | None:
        return self._recall_state.get(key)

    async def _recall_state_set(self, key: str, value: str) -> None:
        self._recall_state[key] = value


__all__ = ["InMemoryRecallIndex"]
