"""ContextAssembler: defaults, required first, shares and spare room, duplicates, fit_in_order."""

from __future__ import annotations

import pytest

from cogitator_memory.context import (
    DEFAULT_PARTITIONS,
    ContextAssembler,
    ContextBlock,
    ContextPartitionBudget,
    default_partitions,
    fit_in_order,
)
from cogitator_memory.errors import InvalidArgumentError


def block(partition: str, tokens: int, text: str | None = None, source: str | None = None) -> ContextBlock:
    return ContextBlock(partition, text if text is not None else f"{partition}-{source or tokens}", tokens, source)  # type: ignore[arg-type]


def test_default_partitions_follow_the_spec() -> None:
    required = {p for p, b in DEFAULT_PARTITIONS.items() if b.required}
    assert required == {"system", "pinned", "index", "summaries", "brief", "final"}
    assert DEFAULT_PARTITIONS["facts"].share == 0.15
    assert DEFAULT_PARTITIONS["recall"].share == 0.35
    assert DEFAULT_PARTITIONS["recent"].share is None
    assert default_partitions("hybrid")["recall"].share == 0.6
    assert ContextAssembler().shares() == pytest.approx({"facts": 0.15, "recall": 0.35, "recent": 0.5})


def test_shares_above_one_make_the_constructor_raise() -> None:
    with pytest.raises(InvalidArgumentError, match="partitions"):
        ContextAssembler({"facts": {"share": 0.5}, "recall": {"share": 0.6}})
    with pytest.raises(InvalidArgumentError, match=r"partitions\.facts\.share"):
        ContextAssembler({"facts": {"share": 1.5}})
    with pytest.raises(InvalidArgumentError, match=r"partitions\.facts\.share"):
        ContextAssembler({"facts": {"share": -0.1}})
    with pytest.raises(InvalidArgumentError, match="unknown partition"):
        ContextAssembler({"memories": {"share": 0.1}})
    with pytest.raises(InvalidArgumentError, match=r"partitions\.system\.required"):
        ContextAssembler({"system": {"required": False}})
    with pytest.raises(InvalidArgumentError, match="strategy"):
        ContextAssembler(strategy="newest")  # type: ignore[arg-type]
    # A required partition's share does not count; overrides merge over the defaults.
    merged = ContextAssembler({"facts": ContextPartitionBudget(share=0.9, required=True), "recall": {"share": 0.9}})
    assert merged.partitions["facts"].required and merged.partitions["recall"].share == 0.9


def test_required_partitions_are_fitted_first_and_the_rest_split_by_shares() -> None:
    assembler = ContextAssembler()
    blocks = {
        "system": [block("system", 100)],
        "final": [block("final", 50)],
        "pinned": [block("pinned", 50)],
        "facts": [block("facts", 100, source=f"f{i}") for i in range(10)],
        "recall": [block("recall", 100, source=f"r{i}") for i in range(10)],
        "recent": [block("recent", 100, source=f"e{i}") for i in range(10)],
    }
    out = assembler.assemble(1200, blocks)  # type: ignore[arg-type]
    # 1000 left after the required 200: facts 15% (150 -> one block), recall 35%, recent 50%.
    assert out.tokens["system"] == 100 and out.tokens["final"] == 50 and out.tokens["pinned"] == 50
    assert out.rooms["facts"] == 150 and len(out.kept["facts"]) == 1
    # The 50 tokens facts could not place go on in fill order: recall, short of room, takes them.
    assert len(out.kept["recall"]) == 4
    assert len(out.kept["recent"]) == 5
    assert out.used <= 1200
    reasons = {(b.partition, r) for b, r in out.dropped}
    assert ("facts", "budget") in reasons and ("recent", "budget") in reasons


def test_room_a_partition_does_not_need_goes_to_those_short_in_fill_order() -> None:
    assembler = ContextAssembler()
    blocks = {
        "facts": [block("facts", 40, source=f"f{i}") for i in range(10)],  # needs 400, share gives 150
        "recent": [block("recent", 10, source=f"e{i}") for i in range(5)],  # needs 50 of its 500
    }
    out = assembler.assemble(1000, blocks)  # type: ignore[arg-type]
    assert out.tokens["recent"] == 50
    # recall needs nothing and recent little: facts, first in fill order, gets all it needs.
    assert out.tokens["facts"] == 400


def test_system_prompt_is_kept_whole_over_budget_with_a_warning() -> None:
    out = ContextAssembler().assemble(100, {"system": [block("system", 300)], "pinned": [block("pinned", 10)]})
    assert out.kept["system"][0].tokens == 300
    assert out.kept["pinned"] == []
    assert any("system prompt" in w for w in out.warnings)
    assert out.dropped[0][0].partition == "pinned" and out.dropped[0][1] == "oversized"


def test_a_block_a_more_lasting_partition_holds_is_a_duplicate() -> None:
    blocks = {
        "system": [block("system", 20, "You are terse. The user  lives in LISBON and likes tea.")],
        "facts": [block("facts", 5, "the user lives in Lisbon", "f1"), block("facts", 5, "The user owns a cat", "f2")],
        "recall": [block("recall", 5, "the user owns a cat", "r1"), block("recall", 5, "Unrelated", "r2")],
        "recent": [block("recent", 5, "the user lives in Lisbon", "e1")],
    }
    out = ContextAssembler().assemble(1000, blocks)  # type: ignore[arg-type]
    dupes = {b.source_id for b, r in out.dropped if r == "duplicate"}
    assert dupes == {"f1", "r1"}  # the history is never dropped as a duplicate
    assert [b.source_id for b in out.kept["recent"]] == ["e1"]
    assert {b.source_id for b in out.dropped_blocks} == {"f1", "r1"}


def test_fit_in_order_skips_what_does_not_fit_and_names_oversized_blocks() -> None:
    blocks = [
        block("facts", 60, source="a"),
        block("facts", 50, source="b"),
        block("facts", 500, source="c"),
        block("facts", 40, source="d"),
    ]
    fit = fit_in_order(blocks, 100)
    assert [b.source_id for b in fit.kept] == ["a", "d"] and fit.used == 100
    assert [(b.source_id, r) for b, r in fit.dropped] == [("b", "budget"), ("c", "oversized")]


def test_assemble_checks_its_arguments() -> None:
    with pytest.raises(InvalidArgumentError, match="budget"):
        ContextAssembler().assemble("10", {})  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="blocks"):
        ContextAssembler().assemble(10, {"nope": []})  # type: ignore[dict-item]
