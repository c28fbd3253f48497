"""The store-independent rules of the recall index: terms, the postings budget, the scoping rule."""

from __future__ import annotations

from datetime import UTC, datetime

from cogitator_memory.index.base import POSTINGS_BUDGET, within_budget
from cogitator_memory.index.records import RecallFilter, RecallRecord, names_time_in, record_in_scope
from cogitator_memory.index.terms import query_terms, recall_terms

T0 = datetime(2026, 3, 1, tzinfo=UTC)


def test_word_forms_share_a_term() -> None:
    assert set(recall_terms("allergies")) & set(recall_terms("I'm allergic"))
    assert set(recall_terms("painting")) & set(recall_terms("painted"))
    assert recall_terms("the and of") == []
    assert recall_terms("東京都") == ["東京", "京都"]  # other scripts as the tokenizer gives them


def test_query_terms_are_distinct_and_capped() -> None:
    assert query_terms("paint painted painting") == ["paint"]
    many = " ".join(f"word{i}" for i in range(200))
    assert query_terms(many, 64) == [f"word{i}" for i in range(64)]


def test_the_budget_keeps_the_rarest_terms() -> None:
    freqs = {"rare": 10, "mid": POSTINGS_BUDGET - 100, "common": POSTINGS_BUDGET * 2}
    assert within_budget(["common", "rare", "mid"], freqs) == ["rare", "mid"]
    assert within_budget(["common"], freqs) == ["common"], "the rarest is always searched"
    assert within_budget(["a", "b"], {"a": POSTINGS_BUDGET, "b": 1}) == ["b"]


def test_scope_rule_and_named_time() -> None:
    record = RecallRecord(id="turn:e", kind="turn", source_id="e", agent_id="a", user_id="ana", text="x", said_at=T0)
    assert record_in_scope(record, RecallFilter(user_id="ana", agent_id="a"))
    assert not record_in_scope(record, RecallFilter(user_id="bo"))
    assert record_in_scope(record, RecallFilter())
    assert not record_in_scope(record, RecallFilter(statuses=["stale"]))
    moment = record.model_copy(update={"time_start": T0})
    assert names_time_in(moment, T0, T0.replace(day=2)) and not names_time_in(
        moment, T0.replace(day=2), T0.replace(day=3)
    )
