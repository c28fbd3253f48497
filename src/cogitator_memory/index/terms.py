"""The terms the recall index searches by: words stemmed, plus a short root for long words.

A text's words are those of :func:`~cogitator_memory.search.tokenizer.index_terms` (Unicode
words, CJK bigrams, English stopwords dropped). Each word of Latin letters becomes its English
Snowball stem (``painting`` and ``painted`` -> ``paint``), and a stem of more than
:data:`ROOT_LENGTH` letters also gives its root: ``~`` and the stem's first
:data:`ROOT_LENGTH` letters (``allergies`` -> ``allergi`` and ``~aller``; ``allergic`` ->
``allerg`` and ``~aller``). Stems disagree on some word families that share their start, and the
root brings those together; a rarer exact stem still scores above a shared root through BM25's
weights. Other words (digits, other scripts) are kept as the tokenizer gives them.

Every store indexes and searches the same terms, so every store finds the same records. A
term is an opaque string to the stores: index it verbatim.

The stemmer is ``snowballstemmer``'s, which runs Snowball's C code when PyStemmer is installed
(``pip install "cogitator-memory[speedups]"``; about 20 times faster on a word not seen yet)
and its own Python otherwise: the two give the same stems (the tests compare them word for
word), so a store written with one is searched with the other.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

import snowballstemmer

from ..search.tokenizer import index_terms

#: Letters of a stem kept in its root (``~`` + the first letters); shorter stems have no root.
ROOT_LENGTH = 5
#: What a root term starts with (no word of the tokenizer holds it).
ROOT_MARK = "~"

_stemmer = snowballstemmer.stemmer("english")


@lru_cache(maxsize=200_000)
def word_terms(word: str) -> tuple[str, ...]:
    """The index terms of one token of :func:`index_terms` (its stem, and its root when long)."""
    if not word.isascii() or not word.isalpha():
        return (word,)
    stem: str = _stemmer.stemWord(word)
    if len(stem) > ROOT_LENGTH:
        return (stem, ROOT_MARK + stem[:ROOT_LENGTH])
    return (stem,)


def recall_terms(text: str) -> list[str]:
    """The terms of ``text`` in order, repeats kept (BM25 counts them)."""
    out: list[str] = []
    for word in index_terms(text):
        out.extend(word_terms(word))
    return out


def stemmed_terms(words: Iterable[str]) -> list[str]:
    """The distinct index terms of tokens already made (a query analysis's terms), in order."""
    return list(dict.fromkeys(t for word in words for t in word_terms(word)))


def query_terms(text: str, limit: int | None = None) -> list[str]:
    """The distinct terms of a query, in their first order (the first ``limit`` of them)."""
    out: dict[str, None] = {}
    for word in index_terms(text):
        for term in word_terms(word):
            out[term] = None
        if limit is not None and len(out) >= limit:
            return list(out)[:limit]
    return list(out)


__all__ = ["ROOT_LENGTH", "ROOT_MARK", "query_terms", "recall_terms", "stemmed_terms", "word_terms"]
