"""A Unicode-aware tokenizer for keyword search.

Text is normalised (NFKC) and case-folded; a token is a run of letters, digits and combining
marks of any script (Latin, Cyrillic, Greek, Arabic, Devanagari, Hangul...). Everything else
(spaces, punctuation, symbols, emoji) separates tokens. Chinese and Japanese are written
without spaces, so a run of Han, Hiragana or Katakana characters becomes overlapping
**bigrams** (``東京都`` -> ``東京``, ``京都``; a lone character stays a unigram), or single
characters with ``cjk="chars"``. Thai, Lao and Khmer runs are kept whole (no dictionary
segmentation). English stopwords can be dropped.

>>> tokenize("Hello, World! Café 42")
['hello', 'world', 'café', '42']
>>> tokenize("我住在東京都")
['我住', '住在', '在東', '東京', '京都']
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from typing import Literal

CJKMode = Literal["bigrams", "chars"]

#: English stopwords dropped by :func:`index_terms` (Lucene's list and a few pronouns/auxiliaries).
ENGLISH_STOPWORDS: frozenset[str] = frozenset(
    {
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "if",
        "in",
        "into",
        "is",
        "it",
        "no",
        "not",
        "of",
        "on",
        "or",
        "such",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "will",
        "with",
        "i",
        "me",
        "my",
        "we",
        "our",
        "you",
        "your",
        "he",
        "him",
        "his",
        "she",
        "her",
        "its",
        "them",
        "what",
        "which",
        "who",
        "whom",
        "do",
        "does",
        "did",
        "has",
        "have",
        "had",
        "been",
        "am",
        "were",
        "would",
        "should",
        "could",
        "can",
    }
)

_CJK_RANGES: tuple[tuple[int, int], ...] = (
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x31F0, 0x31FF),  # Katakana phonetic extensions
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0x20000, 0x2FA1F),  # CJK extensions B-F, compatibility supplement
)


def is_cjk(char: str) -> bool:
    """Whether ``char`` is Han, Hiragana or Katakana (written without spaces between words)."""
    code = ord(char)
    return code >= 0x3040 and any(lo <= code <= hi for lo, hi in _CJK_RANGES)


#: Every ASCII character that is no letter or digit, made a space (ASCII text is its own NFKC
#: form and case-folds as it lowers, so it is split at these at C speed).
_ASCII_SEPARATORS: dict[int, str] = {code: " " for code in range(128) if not chr(code).isalnum()}


def _is_word_char(char: str) -> bool:
    cat = unicodedata.category(char)
    return cat[0] in "LN" or cat[0] == "M"


def _cjk_tokens(run: list[str], mode: CJKMode) -> list[str]:
    if mode == "chars" or len(run) == 1:
        return run
    return [run[i] + run[i + 1] for i in range(len(run) - 1)]


def tokenize(text: str, *, cjk: CJKMode = "bigrams", stopwords: Iterable[str] | None = None) -> list[str]:
    """The tokens of ``text`` in order (repeats kept), lower case; ``stopwords`` are dropped."""
    if cjk not in ("bigrams", "chars"):
        raise ValueError(f"cjk must be 'bigrams' or 'chars', got {cjk!r}")
    stop = frozenset(stopwords) if stopwords is not None else frozenset()
    if text.isascii():
        words = text.lower().translate(_ASCII_SEPARATORS).split()
        return [w for w in words if w not in stop] if stop else words
    normal = unicodedata.normalize("NFKC", text).casefold()
    separators = _separators(normal)
    if separators is not None:  # no CJK, no combining marks: split at everything else
        words = normal.translate(separators).split()
        return [w for w in words if w not in stop] if stop else words
    return _tokenize_chars(normal, cjk, stop)


def _separators(normal: str) -> dict[int, str] | None:
    """A table that turns every character of ``normal`` that is no letter or digit into a space,
    or ``None`` when it holds CJK characters or combining marks (tokenized char by char)."""
    table: dict[int, str] = {}
    for char in set(normal):
        kind = unicodedata.category(char)[0]
        if kind == "M" or is_cjk(char):
            return None
        if kind != "L" and kind != "N":
            table[ord(char)] = " "
    return table


def _tokenize_chars(normal: str, cjk: CJKMode, stop: frozenset[str]) -> list[str]:
    """:func:`tokenize` of normalised text, character by character (any text)."""
    tokens: list[str] = []
    word: list[str] = []
    run: list[str] = []

    def flush_word() -> None:
        if word:
            token = "".join(word)
            word.clear()
            if token not in stop:
                tokens.append(token)

    def flush_run() -> None:
        if run:
            tokens.extend(_cjk_tokens(run, cjk))
            run.clear()

    for char in normal:
        if is_cjk(char):
            flush_word()
            run.append(char)
        elif _is_word_char(char):
            if unicodedata.category(char)[0] == "M" and not word:
                # a mark with no letter before it (or after a CJK character) is dropped
                continue
            flush_run()
            word.append(char)
        else:
            flush_word()
            flush_run()
    flush_word()
    flush_run()
    return tokens


class Tokenizer:
    """A configured :func:`tokenize`: ``cjk`` mode and stopwords (``"english"``, a set, or none)."""

    def __init__(self, *, cjk: CJKMode = "bigrams", stopwords: Iterable[str] | Literal["english"] | None = None):
        if cjk not in ("bigrams", "chars"):
            raise ValueError(f"cjk must be 'bigrams' or 'chars', got {cjk!r}")
        self.cjk: CJKMode = cjk
        if stopwords == "english":
            self.stopwords: frozenset[str] = ENGLISH_STOPWORDS
        else:
            self.stopwords = frozenset(stopwords or ())

    def __call__(self, text: str) -> list[str]:
        """The tokens of ``text``."""
        return tokenize(text, cjk=self.cjk, stopwords=self.stopwords)


def index_terms(text: str) -> list[str]:
    """The terms embedding stores index and search by: CJK bigrams, English stopwords dropped."""
    return tokenize(text, cjk="bigrams", stopwords=ENGLISH_STOPWORDS)


__all__ = ["ENGLISH_STOPWORDS", "CJKMode", "Tokenizer", "index_terms", "is_cjk", "tokenize"]
