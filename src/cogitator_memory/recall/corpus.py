"""The searchable form of turns and items, kept between searches.

A :class:`Corpus` holds what a search reads of each document (a turn or an item): its terms,
their set, its folded text, and a BM25 index over all of them. It is updated in place from the
documents a search is given (new ones added, gone or changed ones replaced), so a thread of
10,000 turns is tokenized once, not at every turn. Time mentions of a document are read lazily,
only for the documents a search looks at, and kept.
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Generic, TypeVar

from ..search.bm25 import BM25, BM25Index
from ..search.tokenizer import index_terms
from ..threads.records import MemoryEntry
from .time import TimeInterval, find_times

D = TypeVar("D")

#: Longest text (characters) of one document that is searched.
MAX_DOC_CHARS = 20_000


def turn_text(entry: MemoryEntry) -> str:
    """The text a turn is searched by: its message, the tool calls it makes and their results."""
    parts: list[str] = []
    message = entry.message
    if message is not None and message.text.strip():
        parts.append(message.text)
    calls = (message.tool_calls if message is not None else None) or entry.tool_calls or []
    for call in calls:
        parts.append(f"{call.name} {json.dumps(call.arguments, ensure_ascii=False, default=str)}")
    for result in entry.tool_results or []:
        value = result.error or result.result
        parts.append(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str))
    return "\n".join(parts)[:MAX_DOC_CHARS]


@dataclass(slots=True)
class Doc(Generic[D]):
    """One document as searched: the record, its text, terms and folded text."""

    record: D
    text: str
    terms: list[str]
    term_set: frozenset[str]
    folded: str
    times: list[TimeInterval] | None = None


@dataclass(slots=True)
class Corpus(Generic[D]):
    """Documents by id with a BM25 index over their terms (see the module docs)."""

    bm25: BM25Index[str]
    docs: dict[str, Doc[D]] = field(default_factory=dict)
    #: The ids of the documents in the order of the last sync.
    order: list[str] = field(default_factory=list)
    _index: dict[str, int] | None = None

    @classmethod
    def new(cls, k1: float, b: float) -> Corpus[D]:
        """An empty corpus whose BM25 has these parameters."""
        return cls(BM25Index(bm25=BM25(k1=k1, b=b)))

    def sync(self, records: Sequence[D], key: Callable[[D], str], text: Callable[[D], str]) -> list[str]:
        """Make the corpus hold exactly ``records`` (by ``key``), re-reading those whose object
        changed and whose text differs; returns the ids in the order given."""
        ids: list[str] = []
        changed = False
        docs = self.docs
        for record in records:
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
                self.bm25.remove_terms(rid, doc.terms)
            terms = index_terms(body)
            docs[rid] = Doc(record, body, terms, frozenset(terms), " ".join(body.casefold().split()))
            self.bm25.add(rid, terms)
            changed = True
        if changed or len(docs) != len(ids):
            wanted = set(ids)
            if len(wanted) != len(docs):
                for rid in [r for r in docs if r not in wanted]:
                    self.bm25.remove_terms(rid, docs.pop(rid).terms)
        if ids != self.order:
            self.order = ids
            self._index = None
        return ids

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


def phrase_pattern(phrase: str) -> re.Pattern[str] | None:
    """A pattern finding ``phrase`` in folded text as whole words, any punctuation or spacing
    between its words (``Flask-Login`` finds "flask login"); ``None`` for a phrase of no words."""
    words = re.findall(r"\w+", phrase.casefold())
    if not words:
        return None
    return re.compile(r"(?<!\w)" + r"\W+".join(re.escape(w) for w in words) + r"(?!\w)")


class CorpusCache(Generic[D]):
    """Corpora by key (a thread, an agent's items), the ``size`` used most lately."""

    def __init__(self, size: int = 64) -> None:
        self.size = size
        self._corpora: OrderedDict[str, Corpus[D]] = OrderedDict()

    def get(self, key: str, k1: float, b: float) -> Corpus[D]:
        """The corpus of ``key`` (a new one when its BM25 parameters differ)."""
        corpus = self._corpora.get(key)
        if corpus is None or corpus.bm25.bm25.k1 != k1 or corpus.bm25.bm25.b != b:
            corpus = Corpus.new(k1, b)
            self._corpora[key] = corpus
        self._corpora.move_to_end(key)
        while len(self._corpora) > self.size:
            self._corpora.popitem(last=False)
        return corpus

    def clear(self) -> None:
        """Forget every corpus."""
        self._corpora.clear()


def jaccard(a: Iterable[str], b: Iterable[str]) -> float:
    """The share of terms two sets have in common (0 when both are empty)."""
    sa = a if isinstance(a, frozenset | set) else frozenset(a)
    sb = b if isinstance(b, frozenset | set) else frozenset(b)
    if not sa and not sb:
        return 0.0
    inter = len(sa & sb)
    return inter / (len(sa) + len(sb) - inter)


__all__ = ["MAX_DOC_CHARS", "Corpus", "CorpusCache", "Doc", "jaccard", "phrase_pattern", "turn_text"]
