"""BM25 (Okapi) ranking: the scoring function and a small in-memory inverted index.

For a query ``q`` and a document ``d`` of length ``|d|`` in a corpus of ``N`` documents of
average length ``avgdl``::

    score(q, d) = sum over distinct terms t of q:
                  idf(t) * tf(t, d) * (k1 + 1) / (tf(t, d) + k1 * (1 - b + b * |d| / avgdl))
    idf(t)      = ln(1 + (N - n(t) + 0.5) / (n(t) + 0.5))

where ``n(t)`` is the number of documents holding ``t``. This ``idf`` (Lucene's) is always
positive, so every document holding a query term scores above zero. ``k1`` (default 1.2)
controls how fast repeats of a term stop counting, ``b`` (default 0.75) how much long
documents are penalised.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Collection, Hashable, Iterable, Mapping, Sequence
from typing import Any, Generic, TypeVar

from .tokenizer import index_terms

K = TypeVar("K", bound=Hashable)

#: Past this many postings of the query's terms, a search scores with numpy (when installed).
ARRAY_SEARCH_FROM = 2000


def _numpy() -> Any:
    try:
        import numpy
    except ImportError:  # pragma: no cover - numpy is there in the test environment
        return None
    return numpy


class BM25:
    """The BM25 scoring function with its two parameters."""

    def __init__(self, k1: float = 1.2, b: float = 0.75) -> None:
        if not (isinstance(k1, int | float) and math.isfinite(k1) and k1 >= 0):
            raise ValueError(f"k1 must be a finite number >= 0, got {k1!r}")
        if not (isinstance(b, int | float) and 0 <= b <= 1):
            raise ValueError(f"b must be in [0, 1], got {b!r}")
        self.k1 = float(k1)
        self.b = float(b)

    @staticmethod
    def idf(n_docs: int, doc_freq: int) -> float:
        """``ln(1 + (N - n + 0.5) / (n + 0.5))``."""
        return math.log(1.0 + (n_docs - doc_freq + 0.5) / (doc_freq + 0.5))

    def term_score(self, tf: int, doc_len: int, avg_len: float, idf: float) -> float:
        """The part of the score one term contributes."""
        if tf <= 0:
            return 0.0
        norm = 1.0 - self.b + self.b * (doc_len / avg_len if avg_len > 0 else 1.0)
        return idf * tf * (self.k1 + 1.0) / (tf + self.k1 * norm)

    def score(
        self,
        query_terms: Iterable[str],
        doc_terms: Sequence[str] | Mapping[str, int],
        *,
        n_docs: int,
        avg_len: float,
        doc_freq: Mapping[str, int],
    ) -> float:
        """The score of one document (its terms, or term counts) for the distinct ``query_terms``."""
        counts: Mapping[str, int] = doc_terms if isinstance(doc_terms, Mapping) else Counter(doc_terms)
        length = sum(counts.values())
        total = 0.0
        for term in dict.fromkeys(query_terms):
            tf = counts.get(term, 0)
            if tf:
                total += self.term_score(tf, length, avg_len, self.idf(n_docs, doc_freq.get(term, 0)))
        return total

    def rank(
        self, query_terms: Iterable[str], documents: Mapping[K, Sequence[str]], limit: int | None = None
    ) -> list[tuple[K, float]]:
        """Score every document of ``documents`` (statistics over them), best first, zeros left out."""
        index: BM25Index[K] = BM25Index(bm25=self)
        for key, terms in documents.items():
            index.add(key, terms)
        return index.search_terms(list(query_terms), limit=limit)


class BM25Index(Generic[K]):
    """An inverted index of documents for BM25: add, remove and search, statistics over all of it.

    Documents are given as terms (a list of tokens) or as text, tokenized with ``tokenizer``
    (default :func:`~cogitator_memory.search.tokenizer.index_terms`).

    With numpy installed, a search reading many postings scores them as arrays (each document
    has a slot; each term's postings are kept as arrays of slots and counts until the term's
    documents change), with the same scores and order as the scoring one by one.
    """

    def __init__(self, *, bm25: BM25 | None = None, tokenizer: Callable[[str], list[str]] = index_terms) -> None:
        self.bm25 = bm25 or BM25()
        self.tokenizer = tokenizer
        self._postings: dict[str, dict[K, int]] = {}
        self._lengths: dict[K, int] = {}
        self._total_len = 0
        # the array form (made at the first large search): slot of each document, the key and
        # length of each slot, free slots, and each term's postings as (slots, counts)
        self._slots: dict[K, int] | None = None
        self._keys: list[K | None] = []
        self._slot_lengths: Any = None
        self._free: list[int] = []
        self._arrays: dict[str, tuple[Any, Any]] = {}

    def __len__(self) -> int:
        return len(self._lengths)

    def __contains__(self, key: object) -> bool:
        return key in self._lengths

    @property
    def avg_len(self) -> float:
        """The average document length in terms."""
        return self._total_len / len(self._lengths) if self._lengths else 0.0

    def doc_freq(self, term: str) -> int:
        """How many documents hold ``term``."""
        return len(self._postings.get(term, ()))

    def add(self, key: K, document: str | Sequence[str]) -> None:
        """Index a document (replacing one of the same key)."""
        terms = self.tokenizer(document) if isinstance(document, str) else document
        self.add_counts(key, Counter(terms), len(terms))

    def add_counts(self, key: K, counts: Mapping[str, int], length: int) -> None:
        """Index a document given as how many times each term occurs and its length in terms
        (the sum of the counts), replacing one of the same key."""
        if key in self._lengths:
            self.remove(key)
        for term, tf in counts.items():
            self._postings.setdefault(term, {})[key] = tf
        self._lengths[key] = length
        self._total_len += length
        if self._slots is not None:
            self._place(key, length)
            arrays = self._arrays
            for term in counts:
                arrays.pop(term, None)

    def remove(self, key: K) -> None:
        """Drop a document (nothing happens when it is not indexed)."""
        length = self._lengths.pop(key, None)
        if length is None:
            return
        self._total_len -= length
        empty = []
        for term, docs in self._postings.items():
            if docs.pop(key, None) is not None:
                self._arrays.pop(term, None)
                if not docs:
                    empty.append(term)
        for term in empty:
            del self._postings[term]
        self._unplace(key)

    def remove_terms(self, key: K, terms: Iterable[str]) -> None:
        """Drop a document whose terms (or their counts) are known (faster than :meth:`remove`)."""
        length = self._lengths.pop(key, None)
        if length is None:
            return
        self._total_len -= length
        arrays = self._arrays
        for term in terms if isinstance(terms, Mapping) else set(terms):
            docs = self._postings.get(term)
            if docs is not None and docs.pop(key, None) is not None:
                arrays.pop(term, None)
                if not docs:
                    del self._postings[term]
        self._unplace(key)

    def search(
        self, query: str, limit: int | None = None, allowed: Collection[K] | None = None
    ) -> list[tuple[K, float]]:
        """Documents holding a term of ``query`` (tokenized), by BM25 score, best first."""
        return self.search_terms(self.tokenizer(query), limit=limit, allowed=allowed)

    def search_terms(
        self,
        terms: Sequence[str],
        limit: int | None = None,
        allowed: Collection[K] | None = None,
        keep: Callable[[K], bool] | None = None,
    ) -> list[tuple[K, float]]:
        """Like :meth:`search` for terms already tokenized; ``allowed`` / ``keep`` narrow the
        documents returned (statistics stay those of the whole index)."""
        n_docs = len(self._lengths)
        avg = self.avg_len
        if allowed is None and type(self.bm25) is BM25:
            asked = list(dict.fromkeys(terms))
            if sum(len(self._postings.get(t, ())) for t in asked) >= ARRAY_SEARCH_FROM:
                np = _numpy()
                if np is not None:
                    return self._array_search(np, asked, limit, keep)
        scores: dict[K, float] = {}
        for term in dict.fromkeys(terms):
            docs = self._postings.get(term)
            if not docs:
                continue
            idf = self.bm25.idf(n_docs, len(docs))
            for key, tf in docs.items():
                if allowed is not None and key not in allowed:
                    continue
                scores[key] = scores.get(key, 0.0) + self.bm25.term_score(tf, self._lengths[key], avg, idf)
        ranked = [(k, s) for k, s in scores.items() if s > 0 and (keep is None or keep(k))]
        ranked.sort(key=lambda pair: (-pair[1], str(pair[0])))
        return ranked if limit is None else ranked[:limit]

    # ----- the array form ----------------------------------------------------------------------

    def _place(self, key: K, length: int) -> None:
        assert self._slots is not None
        slot = self._free.pop() if self._free else len(self._keys)
        if slot == len(self._keys):
            self._keys.append(key)
        else:
            self._keys[slot] = key
        lengths = self._slot_lengths
        if slot >= len(lengths):
            grown = _numpy().zeros(max(16, 2 * len(lengths)), dtype="float64")
            grown[: len(lengths)] = lengths
            self._slot_lengths = lengths = grown
        lengths[slot] = length
        self._slots[key] = slot

    def _unplace(self, key: K) -> None:
        if self._slots is None:
            return
        slot = self._slots.pop(key, None)
        if slot is not None:
            self._keys[slot] = None
            self._free.append(slot)

    def _term_arrays(self, np: Any, term: str) -> tuple[Any, Any]:
        found = self._arrays.get(term)
        if found is None:
            docs = self._postings[term]
            slots = self._slots
            assert slots is not None
            found = (
                np.fromiter((slots[k] for k in docs), dtype="int64", count=len(docs)),
                np.fromiter(docs.values(), dtype="float64", count=len(docs)),
            )
            self._arrays[term] = found
        return found

    def _array_search(
        self, np: Any, terms: list[str], limit: int | None, keep: Callable[[K], bool] | None
    ) -> list[tuple[K, float]]:
        """:meth:`search_terms` over arrays: the same sums in the same order, so the same scores."""
        if self._slots is None:
            self._slots = {}
            self._slot_lengths = np.zeros(max(16, len(self._lengths)), dtype="float64")
            for key, length in self._lengths.items():
                self._place(key, length)
        n_docs = len(self._lengths)
        avg = self.avg_len
        bm25 = self.bm25
        k1, b = bm25.k1, bm25.b
        scores = np.zeros(len(self._slot_lengths), dtype="float64")
        for term in terms:
            if not self._postings.get(term):
                continue
            idf = bm25.idf(n_docs, len(self._postings[term]))
            slots, tfs = self._term_arrays(np, term)
            ratio = self._slot_lengths[slots] / avg if avg > 0 else np.ones(len(slots))
            norm = 1.0 - b + b * ratio
            scores[slots] += idf * tfs * (k1 + 1.0) / (tfs + k1 * norm)
        found = np.flatnonzero(scores > 0)
        keys = self._keys
        want = len(found) if limit is None else min(len(found), limit)
        while True:
            if want >= len(found):
                chosen = found
            else:  # the best ``want``, and every other with the score of the last of them
                floor = -np.partition(-scores[found], want - 1)[want - 1]
                chosen = found[scores[found] >= floor]
            ranked: list[tuple[K, float]] = []
            for slot, score in zip(chosen.tolist(), scores[chosen].tolist(), strict=True):
                key = keys[slot]
                if key is not None and (keep is None or keep(key)):
                    ranked.append((key, score))
            ranked.sort(key=lambda pair: (-pair[1], str(pair[0])))
            if limit is None or len(ranked) >= limit or len(chosen) >= len(found):
                return ranked if limit is None else ranked[:limit]
            want = min(len(found), 2 * want + (limit - len(ranked)))


__all__ = ["BM25", "BM25Index"]
