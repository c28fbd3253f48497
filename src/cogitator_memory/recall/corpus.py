"""The searchable form of turns and items, kept between searches.

A :class:`Corpus` holds what a search reads of each document (a turn or an item): its terms,
their set, its folded text, and a BM25 index over all of them. It is updated in place from the
documents a search is given (new ones added, gone or changed ones replaced), so a thread of
10,000 turns is tokenized once, not at every turn. Time mentions of a document are read lazily,
only for the documents a search looks at, and kept.
"""

from __future__ import annotations

import re
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, KeysView, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, TypeVar

from ..index.build import turn_text
from ..index.terms import recall_terms
from ..search.bm25 import BM25, BM25Index
from .time import TimeInterval, find_times

D = TypeVar("D")

#: Longest text (characters) of one document that is searched.
MAX_DOC_CHARS = 20_000
#: Documents dropped from the end of a corpus kept aside for when they come back.
MAX_SPARE = 1000


@dataclass(slots=True)
class Doc(Generic[D]):
    """One document as searched: the record, its text, how many times each of its terms occurs
    and how many terms it holds in all (its ``length``), and its folded text (made when first
    read).

    The counts are what a search reads of the terms (BM25's term frequencies, the set of terms
    as their keys). A recall index's record carries them (each term once, with its count);
    terms read from a text are counted once here."""

    record: D
    text: str
    counts: dict[str, int]
    length: int
    _folded: str | None = None
    times: list[TimeInterval] | None = None
    #: Whether the document states a lasting instruction or preference (read when first asked,
    #: see :mod:`~cogitator_memory.recall.standing`).
    standing: bool | None = None

    @classmethod
    def of(cls, record: D, text: str, terms: Sequence[str] | Mapping[str, int]) -> Doc[D]:
        """The document of ``record`` whose text and terms are these: every occurrence in order,
        or each term with its count (taken as it is, not copied)."""
        if isinstance(terms, Mapping):
            counts = terms if isinstance(terms, dict) else dict(terms)
            return cls(record, text, counts, sum(counts.values()))
        return cls(record, text, Counter(terms), len(terms))

    @property
    def term_set(self) -> KeysView[str]:
        """The document's distinct terms (a set view: ``&``, ``<=``, ``isdisjoint``, ``len``)."""
        return self.counts.keys()

    @property
    def folded(self) -> str:
        """The text case-folded, whitespace runs as one space (for phrases)."""
        if self._folded is None:
            self._folded = " ".join(self.text.casefold().split())
        return self._folded


@dataclass(slots=True)
class Corpus(Generic[D]):
    """Documents by id with a BM25 index over their terms (see the module docs).

    :meth:`sync` is cheap when the records given extend, or stop short of, those of the last
    sync (a thread that grew by a few turns, a history window that moved by a few): only the
    records that differ are read, added or dropped.
    """

    _bm25: BM25Index[str]
    docs: dict[str, Doc[D]] = field(default_factory=dict)
    #: The ids of the documents in the order of the last sync.
    order: list[str] = field(default_factory=list)
    _index: dict[str, int] | None = None
    #: The records of the last sync as given (skipped ones included), to find what changed.
    _given: list[D] = field(default_factory=list)
    #: Documents dropped from the end lately, found again without reading their text.
    _spare: OrderedDict[str, Doc[D]] = field(default_factory=OrderedDict)
    #: What a search derived from all the documents (by name), kept until they change.
    derived: dict[str, Any] = field(default_factory=dict)
    #: The terms of documents known already (by id: a recall index's records carry theirs, each
    #: term with its count), used instead of reading their text again.
    known_terms: Mapping[str, Sequence[str] | Mapping[str, int]] = field(default_factory=dict)
    #: Whether documents go into the BM25 index only when it is first read (a corpus made for
    #: one search whose keyword ranking came from elsewhere may never read it).
    lazy: bool = False
    _pending: set[str] = field(default_factory=set)

    @property
    def bm25(self) -> BM25Index[str]:
        """The BM25 index of the documents (those added lazily go in now)."""
        if self._pending:
            for rid in sorted(self._pending, key=self.index().__getitem__):
                doc = self.docs[rid]
                self._bm25.add_counts(rid, doc.counts, doc.length)
            self._pending.clear()
        return self._bm25

    def doc_freqs(self, terms: Iterable[str]) -> tuple[int, dict[str, int]]:
        """How many documents there are, and how many hold each of ``terms``: from the BM25
        index once built, else counted over the documents' term sets (a lazy corpus is not
        indexed whole for a few terms: that costs a document's every term)."""
        wanted = list(dict.fromkeys(terms))
        if not self._pending:
            index = self._bm25
            return len(index), {t: index.doc_freq(t) for t in wanted}
        counts = dict.fromkeys(wanted, 0)
        asked = frozenset(wanted)
        for doc in self.docs.values():
            for term in shared(doc.counts, asked):
                counts[term] += 1
        return len(self.docs), counts

    def search_terms(
        self, terms: Sequence[str], *, limit: int, keep: Callable[[str], bool] | None = None
    ) -> list[tuple[str, float]]:
        """BM25 of ``terms`` over the documents, best first (ties by id), the first ``limit``
        that ``keep`` keeps: from the BM25 index once built; in a lazy corpus not indexed yet,
        scored over the documents holding a term (their term lists read for these terms only,
        not indexed whole)."""
        if not self._pending:
            return self._bm25.search_terms(terms, limit=limit, keep=keep)
        asked = list(dict.fromkeys(terms))
        size, freqs = self.doc_freqs(asked)
        if not size:
            return []
        bm25 = self._bm25.bm25
        idf = {t: bm25.idf(size, df) for t, df in freqs.items() if df}  # in the query's order
        wanted = frozenset(idf)
        avg = sum(doc.length for doc in self.docs.values()) / size
        scored: list[tuple[str, float]] = []
        for rid, doc in self.docs.items():
            counts = doc.counts
            held = counts.keys() & wanted
            if not held or (keep is not None and not keep(rid)):
                continue
            length = doc.length
            # summed in the query's order, as the index sums them: the same float to the last bit
            score = sum(bm25.term_score(counts[t], length, avg, w) for t, w in idf.items() if t in held)
            if score > 0:
                scored.append((rid, score))
        scored.sort(key=lambda pair: (-pair[1], pair[0]))
        return scored[:limit]

    def _index_add(self, rid: str, doc: Doc[D]) -> None:
        if self.lazy:
            self._pending.add(rid)
        else:
            self._bm25.add_counts(rid, doc.counts, doc.length)

    def _index_remove(self, rid: str, doc: Doc[D]) -> None:
        if rid in self._pending:
            self._pending.discard(rid)
        else:
            self._bm25.remove_terms(rid, doc.counts)

    def _doc(self, rid: str, record: D, body: str) -> Doc[D]:
        """The document of ``record``: its terms those known (not read again), else read from ``body``."""
        known = self.known_terms.get(rid)
        return Doc.of(record, body, known if known is not None else recall_terms(body))

    @classmethod
    def new(cls, k1: float, b: float, *, lazy: bool = False) -> Corpus[D]:
        """An empty corpus whose BM25 has these parameters (filled when first read with ``lazy``)."""
        return cls(BM25Index(bm25=BM25(k1=k1, b=b)), lazy=lazy)

    def sync(
        self,
        records: Sequence[D],
        key: Callable[[D], str],
        text: Callable[[D], str],
        skip: Callable[[D], bool] | None = None,
    ) -> list[str]:
        """Make the corpus hold exactly ``records`` (by ``key``; those ``skip`` says are left
        out), re-reading those whose object changed and whose text differs; returns the ids of
        the documents in the order given."""
        given = list(records)
        prev = self._given
        n, m = len(prev), len(given)
        done = False
        if n and m >= n and given[:n] == prev:  # the same records and maybe more after them
            done = self._extend(given[n:], key, text, skip)
        elif n and m < n and prev[:m] == given:  # the same records, fewer of them
            self._truncate(prev[m:], key, skip)
            done = True
        if not done:
            self._resync(given, key, text, skip)
            self.derived.clear()
        self._given = given
        return self.order

    def _extend(
        self, tail: Sequence[D], key: Callable[[D], str], text: Callable[[D], str], skip: Callable[[D], bool] | None
    ) -> bool:
        """Add the documents of ``tail`` after the others; ``False`` (nothing changed) when one
        of them is held already (a record given twice: the full sync sorts that out)."""
        chosen = [r for r in tail if skip is None or not skip(r)]
        ids = [key(r) for r in chosen]
        if any(rid in self.docs for rid in ids) or len(set(ids)) != len(ids):
            return False
        if ids:
            self.derived.clear()
        for rid, record in zip(ids, chosen, strict=True):
            self._add(rid, record, text)
            if self._index is not None:
                self._index[rid] = len(self.order)
            self.order.append(rid)
        return True

    def _truncate(self, tail: Sequence[D], key: Callable[[D], str], skip: Callable[[D], bool] | None) -> None:
        """Drop the documents of ``tail``, the last of the order (kept aside a while)."""
        self.derived.clear()
        for record in reversed(tail):
            if skip is not None and skip(record):
                continue
            rid = self.order.pop()
            doc = self.docs.pop(rid)
            self._index_remove(rid, doc)
            if self._index is not None:
                self._index.pop(rid, None)
            self._spare[rid] = doc
        while len(self._spare) > MAX_SPARE:
            self._spare.popitem(last=False)

    def _add(self, rid: str, record: D, text: Callable[[D], str]) -> None:
        doc = self._spare.pop(rid, None)
        if doc is None or (doc.record is not record and doc.text != text(record)):
            doc = self._doc(rid, record, text(record))
        doc.record = record
        self.docs[rid] = doc
        self._index_add(rid, doc)

    def _resync(
        self, records: Sequence[D], key: Callable[[D], str], text: Callable[[D], str], skip: Callable[[D], bool] | None
    ) -> None:
        ids: list[str] = []
        changed = False
        docs = self.docs
        for record in records:
            if skip is not None and skip(record):
                continue
            rid = key(record)
            ids.append(rid)
            doc = docs.get(rid)
            if doc is not None and doc.record is record:
                continue
            body = text(record)
            if doc is not None and doc.text == body:
                doc.record = record
                continue
            if doc is not None:
                self._index_remove(rid, doc)
            docs[rid] = doc = self._doc(rid, record, body)
            self._index_add(rid, doc)
            changed = True
        if changed or len(docs) != len(ids):
            wanted = set(ids)
            if len(wanted) != len(docs):
                for rid in [r for r in docs if r not in wanted]:
                    self._index_remove(rid, docs.pop(rid))
        if ids != self.order:
            self.order = ids
            self._index = None

    def index(self) -> dict[str, int]:
        """Each document's place in the order of the last sync (made once per order)."""
        if self._index is None:
            self._index = {rid: i for i, rid in enumerate(self.order)}
        return self._index

    def times_of(self, rid: str, said_at: datetime, time_zone: str) -> list[TimeInterval]:
        """The intervals the document's text names, read from ``said_at`` (read once, kept)."""
        doc = self.docs[rid]
        if doc.times is None:
            try:
                doc.times = [m.interval for m in find_times(doc.text[:1500], said_at, time_zone)]
            except Exception:  # a text whose times cannot be read has none
                doc.times = []
        return doc.times


class Phrase:
    """A phrase found in folded text as whole words, any punctuation or spacing between its
    words (``Flask-Login`` finds "flask login"): what ``(?<!\\w)flask\\W+login(?!\\w)`` finds.

    The pattern searched has no assertion before its first word, so the regular expression
    engine jumps to each place the first word starts (an assertion first makes it try every
    character, some forty times slower); the character before is checked for each match.
    """

    __slots__ = ("pattern",)

    def __init__(self, words: Sequence[str]) -> None:
        self.pattern = re.compile(r"\W+".join(re.escape(w) for w in words) + r"(?!\w)")

    def search(self, text: str) -> bool:
        """Whether ``text`` holds the phrase, not inside a longer word."""
        pattern = self.pattern
        at = 0
        while (found := pattern.search(text, at)) is not None:
            start = found.start()
            if start == 0 or not is_word_char(text[start - 1]):
                return True
            at = start + 1
        return False


def is_word_char(char: str) -> bool:
    """Whether ``char`` is what ``\\w`` matches (a letter, a digit or ``_``)."""
    return char.isalnum() or char == "_"


def phrase_pattern(phrase: str) -> Phrase | None:
    """The :class:`Phrase` of ``phrase`` (case folded); ``None`` for a phrase of no words."""
    words = re.findall(r"\w+", phrase.casefold())
    if not words:
        return None
    return Phrase(words)


class CorpusCache(Generic[D]):
    """Corpora by key (a thread, an agent's items), the ``size`` used most lately."""

    def __init__(self, size: int = 64) -> None:
        self.size = size
        self._corpora: OrderedDict[str, Corpus[D]] = OrderedDict()

    def get(self, key: str, k1: float, b: float) -> Corpus[D]:
        """The corpus of ``key`` (a new one when its BM25 parameters differ)."""
        corpus = self._corpora.get(key)
        if corpus is None or corpus._bm25.bm25.k1 != k1 or corpus._bm25.bm25.b != b:
            corpus = Corpus.new(k1, b)
            self._corpora[key] = corpus
        self._corpora.move_to_end(key)
        while len(self._corpora) > self.size:
            self._corpora.popitem(last=False)
        return corpus

    def clear(self) -> None:
        """Forget every corpus."""
        self._corpora.clear()


def shared(counts: Mapping[str, int], terms: frozenset[str]) -> AbstractSet[str]:
    """The ``terms`` a document holds (its term ``counts``), the smaller side walked at C speed."""
    if len(terms) <= len(counts):
        return counts.keys() & terms  # walks ``terms``
    return terms.intersection(counts)  # walks the counts' keys


def jaccard(a: Iterable[str], b: Iterable[str]) -> float:
    """The share of terms two sets have in common (0 when both are empty)."""
    sa = a if isinstance(a, frozenset | set) else frozenset(a)
    sb = b if isinstance(b, frozenset | set) else frozenset(b)
    if not sa and not sb:
        return 0.0
    inter = len(sa & sb)
    return inter / (len(sa) + len(sb) - inter)


__all__ = [
    "MAX_DOC_CHARS",
    "Corpus",
    "CorpusCache",
    "Doc",
    "Phrase",
    "jaccard",
    "phrase_pattern",
    "shared",
    "turn_text",
]
