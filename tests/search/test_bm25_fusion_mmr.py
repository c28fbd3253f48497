"""BM25, reciprocal rank fusion and MMR against hand-computed figures."""

from __future__ import annotations

import math

import pytest

from cogitator_memory.search import BM25, BM25Index, maximal_marginal_relevance, reciprocal_rank_fusion

DOCS = {"d1": ["cat", "dog"], "d2": ["cat", "cat", "fish", "bird"]}


def test_bm25_hand_computed() -> None:
    # N=2, avgdl=3. idf(cat)=ln(1 + 0.5/2.5)=ln 1.2; idf(fish)=ln 2.
    bm = BM25()
    stats = {"n_docs": 2, "avg_len": 3.0, "doc_freq": {"cat": 2, "fish": 1, "dog": 1, "bird": 1}}
    assert bm.score(["cat"], DOCS["d1"], **stats) == pytest.approx(math.log(1.2) * 2.2 / 1.9)  # 0.211110
    assert bm.score(["cat"], DOCS["d2"], **stats) == pytest.approx(math.log(1.2) * 4.4 / 3.5)  # 0.229203
    assert bm.score(["fish"], DOCS["d2"], **stats) == pytest.approx(math.log(2) * 2.2 / 2.5)  # 0.609970
    assert bm.score(["fish"], DOCS["d1"], **stats) == 0.0
    # repeated query terms count once
    assert bm.score(["fish", "fish"], DOCS["d2"], **stats) == bm.score(["fish"], DOCS["d2"], **stats)


def test_bm25_parameters() -> None:
    stats = {"n_docs": 2, "avg_len": 3.0, "doc_freq": {"cat": 2}}
    no_length = BM25(k1=1.2, b=0.0)  # length ignored: tf=1 scores idf * 2.2 / 2.2 = idf
    assert no_length.score(["cat"], DOCS["d1"], **stats) == pytest.approx(math.log(1.2))
    binary = BM25(k1=0.0)  # k1=0: any tf counts as 1
    assert binary.score(["cat"], DOCS["d2"], **stats) == pytest.approx(math.log(1.2))
    with pytest.raises(ValueError, match="b"):
        BM25(b=1.5)
    with pytest.raises(ValueError, match="k1"):
        BM25(k1=-1)


def test_bm25_index_matches_the_function_and_supports_removal() -> None:
    index: BM25Index[str] = BM25Index()
    for key, terms in DOCS.items():
        index.add(key, terms)
    index.add("d3", "A lazy dog")  # text is tokenized: lazy, dog ("a" is a stopword)
    assert len(index) == 3 and index.doc_freq("dog") == 2
    ranked = index.search_terms(["cat", "fish"])
    assert [k for k, _ in ranked] == ["d2", "d1"]
    bm = BM25()
    expected = bm.score(["cat", "fish"], DOCS["d2"], n_docs=3, avg_len=8 / 3, doc_freq={"cat": 2, "fish": 1})
    assert ranked[0][1] == pytest.approx(expected)
    assert index.search("DOG", allowed={"d3"}) == [("d3", pytest.approx(index.search("dog")[0][1]))]
    index.remove("d2")
    assert index.doc_freq("cat") == 1 and index.doc_freq("fish") == 0
    assert [k for k, _ in index.search_terms(["cat", "fish"])] == ["d1"]
    assert BM25().rank(["fish"], DOCS) == [("d2", pytest.approx(math.log(2) * 2.2 / 2.5))]


def test_bm25_index_takes_term_counts_as_it_takes_terms() -> None:
    from collections import Counter

    by_terms: BM25Index[str] = BM25Index()
    by_counts: BM25Index[str] = BM25Index()
    for key, terms in DOCS.items():
        by_terms.add(key, terms)
        by_counts.add_counts(key, Counter(terms), len(terms))
    assert by_counts.avg_len == by_terms.avg_len == 3.0
    assert by_counts.search_terms(["cat", "fish"]) == by_terms.search_terms(["cat", "fish"])
    by_counts.add_counts("d1", {"fish": 2}, 2)  # replaces d1
    assert len(by_counts) == 2 and by_counts.doc_freq("dog") == 0 and by_counts.doc_freq("fish") == 2
    by_counts.remove_terms("d2", Counter(DOCS["d2"]))  # the counts' keys are its terms
    assert len(by_counts) == 1 and by_counts.doc_freq("cat") == 0 and by_counts.avg_len == 2.0


def test_rrf_hand_computed() -> None:
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["c", "a"]])
    assert [k for k, _ in fused] == ["a", "c", "b"]
    assert dict(fused) == pytest.approx({"a": 1 / 61 + 1 / 62, "c": 1 / 63 + 1 / 61, "b": 1 / 62})
    weighted = reciprocal_rank_fusion([["a", "b", "c"], ["c", "a"]], weights=[1, 3])
    assert [k for k, _ in weighted] == ["c", "a", "b"]
    assert dict(weighted)["c"] == pytest.approx(1 / 63 + 3 / 61)
    assert reciprocal_rank_fusion([["x", "y"]], k=0, limit=1) == [("x", 1.0)]
    assert reciprocal_rank_fusion([["x", "x", "y"]]) == [("x", 1 / 61), ("y", 1 / 62)]  # repeats ignored
    assert reciprocal_rank_fusion([]) == []
    with pytest.raises(ValueError, match="weights"):
        reciprocal_rank_fusion([["a"]], weights=[1, 2])


def test_mmr_prefers_the_different_candidate() -> None:
    query = [1.0, 0.0, 0.0]
    first = [0.9, 0.436, 0.0]
    duplicate = [0.9, 0.436, 0.0]
    other = [0.8, -0.6, 0.0]
    candidates = [first, duplicate, other]
    # after `first`: duplicate 0.5*0.9 - 0.5*1 = -0.05; other 0.5*0.8 - 0.5*0.458 = 0.171
    assert maximal_marginal_relevance(query, candidates, limit=3) == [0, 2, 1]
    assert maximal_marginal_relevance(query, candidates, limit=3, lambda_=1.0) == [0, 1, 2]
    assert maximal_marginal_relevance(query, candidates, limit=1) == [0]
    assert maximal_marginal_relevance(query, candidates, limit=2, relevance=[0.1, 0.2, 0.9]) == [2, 1]
    with pytest.raises(ValueError, match="lambda_"):
        maximal_marginal_relevance(query, candidates, limit=1, lambda_=2)
