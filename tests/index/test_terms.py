"""The recall index's terms: the C stemmer (PyStemmer, the ``[speedups]`` extra) and the pure
Python one give the same stems, so an index written with one is searched with the other."""

from __future__ import annotations

import re
from pathlib import Path

import Stemmer
from snowballstemmer.english_stemmer import EnglishStemmer

from cogitator_memory.index import terms
from cogitator_memory.index.terms import recall_terms

ROOT = Path(__file__).resolve().parents[2]
#: Word families whose stems the index relies on, and words Snowball's rules treat apart.
TRICKY = [
    "painting",
    "painted",
    "paints",
    "painter",
    "allergies",
    "allergic",
    "allergy",
    "generously",
    "generous",
    "generate",
    "general",
    "generation",
    "news",
    "skies",
    "dying",
    "lying",
    "tying",
    "agreed",
    "feed",
    "bled",
    "sky's",
    "don't",
    "happily",
    "happiness",
    "running",
    "runner",
    "ran",
    "cities",
    "city's",
    "studies",
    "studying",
    "studied",
    "studious",
    "organization",
    "organizational",
    "organise",
    "organized",
    "arguing",
    "argument",
    "argued",
    "communication",
    "communicate",
    "communism",
    "universal",
    "university",
    "relational",
    "relativity",
    "conditional",
    "conditionally",
    "hopefulness",
    "goodness",
    "formality",
    "sensibility",
    "ponies",
    "caresses",
    "cats",
    "fishing",
    "fished",
    "fisher",
    "fly",
    "flies",
    "flying",
    "quickly",
    "quick",
    "reliable",
    "rely",
]


def _vocabulary() -> list[str]:
    words = set(TRICKY)
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "src").rglob("*.py"))]:
        words.update(w.lower() for w in re.findall(r"[A-Za-z]+", path.read_text(encoding="utf-8")))
    return sorted(words)


def test_the_c_and_python_stemmers_agree_word_for_word() -> None:
    words = _vocabulary()
    assert len(words) > 5000
    pure = EnglishStemmer()
    c = Stemmer.Stemmer("english")
    differ = [(w, pure.stemWord(w), s) for w, s in zip(words, c.stemWords(words), strict=True) if pure.stemWord(w) != s]
    assert differ == []


def test_the_index_stems_with_the_c_stemmer_when_it_is_installed() -> None:
    assert isinstance(terms._stemmer, Stemmer.Stemmer)
    assert recall_terms("She painted allergies") == ["paint", "allergi", "~aller"]
