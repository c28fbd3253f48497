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
from typing import Generic, TypeVar

from .tokenizer import index_terms

K = TypeVar("K", bound=Hashable)


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
    """

    def __init__(self, *, bm25: BM25 | None = None, tokenizer: Callable[[str], list[str]] = index_terms) -> None:
        self.bm25 = bm25 or BM25()
        self.tokenizer = tokenizer
        self._postings: dict[str, dict[K, int]] = {}
        self._lengths: dict[K, int] = {}
        self._total_len = 0

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
        if key in self._lengths:
            self.remove(key)
        terms = self.tokenizer(document) if isinstance(document, str) else list(document)
        for term, tf in Counter(terms).items():
            self._postings.setdefault(term, {})[key] = tf
        self._lengths[key] = len(terms)
        self._total_len += len(terms)

    def remove(self, key: K) -> None:
        """Drop a document (nothing happens when it is not indexed)."""
        length = self._lengths.pop(key, None)
        if length is None:
            return
        self._total_len -= length
        empty = []
        for term, docs in self._postings.items():
            if docs.pop(key, None) is not None and not docs:
                empty.append(term)
        for term in empty:
            del self._postings[term]

    def remove_terms(self, key: K, terms: Iterable[str]) -> None:
        """Drop a document whose terms are known (faster than :meth:`remove`)."""
        length = self._lengths.pop(key, None)
        if length is None:
            return
        self._total_len -= length
        for term in set(terms):
            docs = self._postings.get(term)
            if docs is not None and docs.pop(key, None) is not None and not docs:
                del self._postings[term]

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


__all__ = ["BM25", "BM25Index"]
