"""The searchable form kept between searches: BM25 over arrays and corpora synced in steps."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest

from cogitator_memory.recall.corpus import Corpus
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
