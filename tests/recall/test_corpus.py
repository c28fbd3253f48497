"""The searchable form kept between searches: BM25 over arrays and corpora synced in steps."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from cogitator_memory.recall.corpus import Corpus, phrase_pattern
from cogitator_memory.recall.retriever import _said_between
from cogitator_memory.search import bm25 as bm25_module
from cogitator_memory.search.bm25 import BM25, BM25Index

VOCAB = [f"w{i}" for i in range(200)]


def _one_by_one(index: BM25Index[str], terms: list[str], limit: int | None, keep: object = None) -> list:
    saved = bm25_module.ARRAY_SEARCH_FROM
    bm25_module.ARRAY_SEARCH_FROM = 10**12
    try:
        return index.search_terms(terms, limit=limit, keep=keep)  # type: ignore[arg-type]
    finally:
        bm25_module.ARRAY_SEARCH_FROM = saved


def test_array_search_gives_the_scores_and_order_of_scoring_one_by_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bm25_module, "ARRAY_SEARCH_FROM", 1)
    rng = random.Random(7)
    index: BM25Index[str] = BM25Index(bm25=BM25(k1=3.0, b=1.0))
    for i in range(1500):
        index.add(f"d{i}", [rng.choice(VOCAB[: rng.randint(3, 200)]) for _ in range(rng.randint(1, 40))])
    checked = 0
    for trial in range(150):
        terms = rng.sample(VOCAB, rng.randint(1, 5))
        limit = rng.choice([None, 1, 5, 20, 100])
        keep = rng.choice([None, lambda key: int(key[1:]) % 3 != 0])
        fast = index.search_terms(terms, limit=limit, keep=keep)
        assert fast == _one_by_one(index, terms, limit, keep)
        checked += len(fast)
        if trial % 15 == 0:  # documents added, replaced and dropped between searches
            for _ in range(40):
                key = f"d{rng.randint(0, 1600)}"
                if rng.random() < 0.5:
                    index.remove(key)
                else:
                    index.add(key, rng.sample(VOCAB, 4))
    assert checked > 1000


def test_array_search_ties_are_ordered_by_key_at_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bm25_module, "ARRAY_SEARCH_FROM", 1)
    index: BM25Index[str] = BM25Index()
    for key in ("e", "b", "d", "a", "c"):
        index.add(key, ["same", "words"])
    index.add("z", ["other"])
    assert [k for k, _ in index.search_terms(["same"], limit=3)] == ["a", "b", "c"]
    assert [k for k, _ in index.search_terms(["same"], limit=2, keep=lambda k: k != "a")] == ["b", "c"]


@dataclass
class Rec:
    id: str
    text: str
    event: bool = False


def _key(r: Rec) -> str:
    return r.id


def _text(r: Rec) -> str:
    return r.text


def _skip(r: Rec) -> bool:
    return r.event


def _same(kept: Corpus[Rec], records: list[Rec]) -> None:
    fresh: Corpus[Rec] = Corpus.new(1.2, 0.75)
    fresh.sync(records, _key, _text, skip=_skip)
    assert kept.order == fresh.order
    assert kept.index() == {rid: i for i, rid in enumerate(fresh.order)}
    assert {k: d.text for k, d in kept.docs.items()} == {k: d.text for k, d in fresh.docs.items()}
    for terms in (["alpha"], ["beta", "gamma"], ["w3"]):
        assert kept.bm25.search_terms(terms) == fresh.bm25.search_terms(terms)


@pytest.mark.parametrize("arrays", [False, True])
def test_a_corpus_synced_in_steps_holds_what_a_fresh_one_holds(arrays: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if arrays:
        monkeypatch.setattr(bm25_module, "ARRAY_SEARCH_FROM", 1)
    rng = random.Random(3)
    records = [
        Rec(f"r{i}", " ".join(rng.sample(["alpha", "beta", "gamma", "w3", "w4"], 2)), event=i % 7 == 0)
        for i in range(60)
    ]
    corpus: Corpus[Rec] = Corpus.new(1.2, 0.75)
    corpus.sync(records[:30], _key, _text, skip=_skip)
    corpus.index()
    for stop in (35, 35, 50, 41, 20, 60, 58):  # grows, stays, shrinks, comes back
        corpus.sync(records[:stop], _key, _text, skip=_skip)
        _same(corpus, records[:stop])
    changed = [*records[:10], Rec("r10", "delta epsilon"), *records[11:]]  # one record changed
    corpus.sync(changed, _key, _text, skip=_skip)
    _same(corpus, changed)
    assert corpus.docs["r10"].text == "delta epsilon"
    doubled = [*changed, changed[3]]  # a record given twice: the full sync sorts it out
    corpus.sync(doubled, _key, _text, skip=_skip)
    assert corpus.order.count("r3") == 2


def _lookbehind_search(phrase: str, text: str) -> bool:
    """What a phrase finds, as the pattern with an assertion before the first word."""
    words = re.findall(r"\w+", phrase.casefold())
    return re.search(r"(?<!\w)" + r"\W+".join(map(re.escape, words)) + r"(?!\w)", text) is not None


def test_a_phrase_finds_what_the_pattern_with_a_lookbehind_finds() -> None:
    rng = random.Random(11)
    noise = ["_", "é", "ß", "1", "x", "ａ", " ", " ", "-", " - ", "\n"]
    phrases = ["a a", "a", "ab b", "Flask-Login", "flask login", "b_", "é a", "1 a", "ａ"]
    found = 0
    for _ in range(3000):
        phrase = rng.choice(phrases)
        pieces = [*re.findall(r"\w+", phrase.casefold()), *noise]
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 10)))
        finder = phrase_pattern(phrase)
        assert finder is not None
        expected = _lookbehind_search(phrase, text)
        assert finder.search(text) is expected, (phrase, text)
        found += expected
    assert 100 < found < 2900  # both outcomes were checked many times
    # a match inside a longer word is passed over for a later one at a word's start
    assert phrase_pattern("a a").search("ba a a") is True  # type: ignore[union-attr]
    assert phrase_pattern("a a").search("ba a") is False  # type: ignore[union-attr]
    assert phrase_pattern("login").search("flask_login") is False  # type: ignore[union-attr]
    assert phrase_pattern("!!") is None


@dataclass
class Said:
    id: str
    text: str
    created_at: datetime


def _said_key(r: Said) -> str:
    return r.id


def _said_text(r: Said) -> str:
    return r.text


def test_turns_said_in_a_time_are_those_a_scan_finds_in_the_corpus_order() -> None:
    rng = random.Random(5)
    day = datetime(2024, 3, 1, tzinfo=UTC)
    records = [Said(f"s{i}", f"turn {i}", day + timedelta(minutes=rng.randint(0, 600))) for i in range(200)]
    corpus: Corpus[Said] = Corpus.new(1.2, 0.75)

    def scan(start: datetime, end: datetime) -> list[str]:
        return [rid for rid, doc in corpus.docs.items() if start <= doc.record.created_at < end]

    checked = 0
    for stop in (120, 150, 90, 200):  # grown, shrunk and grown again: what is kept follows
        corpus.sync(records[:stop], _said_key, _said_text)
        for _ in range(40):
            start = day + timedelta(minutes=rng.randint(-30, 620))
            end = start + timedelta(minutes=rng.choice([0, 1, 30, 240, 1000]))
            assert _said_between(corpus, start, end) == scan(start, end)
            checked += len(scan(start, end))
    # a turn whose time changed (same text, new record) is found at its new time
    moved = Said("s3", "turn 3", day + timedelta(days=2))
    corpus.sync([*records[:3], moved, *records[4:]], _said_key, _said_text)
    later = (day + timedelta(days=2), day + timedelta(days=3))
    assert _said_between(corpus, *later) == scan(*later) == ["s3"]
    assert checked > 500


@dataclass
class _Said:
    id: str
    text: str


def test_a_lazy_corpus_searches_with_the_scores_of_its_index_without_building_it() -> None:
    rng = random.Random(11)
    said = [_Said(f"d{i:03d}", " ".join(rng.choice(VOCAB[:60]) for _ in range(rng.randint(1, 30)))) for i in range(300)]
    lazy: Corpus[_Said] = Corpus.new(3.0, 1.0, lazy=True)
    whole: Corpus[_Said] = Corpus.new(3.0, 1.0)
    for corpus in (lazy, whole):
        corpus.sync(said, lambda d: d.id, lambda d: d.text)
    for trial in range(60):
        terms = [f"w{rng.randrange(70)}" for _ in range(rng.randint(1, 12))]  # some held by none
        keep = rng.choice([None, lambda key: int(key[1:]) % 4 != 0])
        limit = rng.choice([1, 10, 400])
        got = lazy.search_terms(terms, limit=limit, keep=keep)
        want = _one_by_one(whole.bm25, terms, limit, keep)
        assert [k for k, _ in got] == [k for k, _ in want], trial
        assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-12)
        assert lazy.doc_freqs(terms) == whole.doc_freqs(terms)
    assert lazy._pending  # scored without indexing the documents
