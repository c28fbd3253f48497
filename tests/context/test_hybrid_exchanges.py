"""Hybrid recall sends exchanges, not fragments: whole turns with the turns that make them
readable, within the budget, and a turn cut short only at a sentence end and marked."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from cogitator_memory import MemoryEntry, frozen_clock, unwrap
from cogitator_memory.context import ContextBuilder
from cogitator_memory.context.history import TokenCache
from cogitator_memory.context.hybrid import RecalledTurns, fit_recall
from cogitator_memory.context.passages import opening
from cogitator_memory.context.records import ContextBlock
from cogitator_memory.embeddings import HashingEmbedder
from cogitator_memory.threads.base import BaseMemoryAdapter
from cogitator_memory.tokens import count_tokens

START = datetime(2024, 4, 1, 9, 0, tzinfo=UTC)
FILLER = [f"filler message {i} about the weather, the traffic and other small things" for i in range(120)]
#: A long answer (about 300 tokens), one line of whole sentences.
ANSWER = " ".join(
    f"Sentence {i} of the plan: the Lisbon conference hotel is the Hotel Avenida, and day {i} has its own schedule."
    for i in range(14)
)


async def chat(memory: BaseMemoryAdapter, turns: list[tuple[str, str]]) -> tuple[str, list[MemoryEntry]]:
    """A thread of the given (role, text) turns, one a day from START."""
    thread = unwrap(await memory.create_thread("concierge", {"user_id": "ana"}))
    out = []
    for i, (role, text) in enumerate(turns):
        with frozen_clock(START + timedelta(days=i)):
            out.append(
                unwrap(await memory.add_entry({"thread_id": thread.id, "message": {"role": role, "content": text}}))
            )
    return thread.id, out


def alternate(texts: list[str]) -> list[tuple[str, str]]:
    return [("user" if i % 2 == 0 else "assistant", t) for i, t in enumerate(texts)]


def hybrid(memory: BaseMemoryAdapter, **recall: Any) -> ContextBuilder:
    # the hashing embedder scores unrelated texts up to about 0.3 by chance, and its noise would
    # crowd the few turns these tests recall out of small budgets: they keep a floor above it
    recall = {"vector_min_cosine": 0.45, **recall}
    return ContextBuilder(
        {"strategy": "hybrid", "reserve_tokens": 0, "recall": recall},
        {"memory_adapter": memory, "embedding_service": HashingEmbedder(64)},
    )


def recalled_lines(context: Any) -> list[tuple[str, str]]:
    """(role, text) of each line of the ``Earlier in this conversation:`` section."""
    text = context.memory_context or ""
    if "Earlier in this conversation:\n" not in text:
        return []
    section = text.split("Earlier in this conversation:\n", 1)[1].split("\n\n</memory_context>")[0]
    section = section.split("\n</memory_context>")[0]
    out = []
    for line in section.split("\n"):
        if not line.strip():
            continue
        found = re.fullmatch(r"\[[^\]]+\] (\w+): (.*)", line)
        assert found, line
        out.append((found.group(1), found.group(2)))
    return out


async def test_an_exchange_goes_out_whole_when_the_room_holds_it(memory: BaseMemoryAdapter) -> None:
    tid, entries = await chat(
        memory, alternate(["Which hotel should we book for the Lisbon conference?", ANSWER, *FILLER])
    )
    context = await hybrid(memory).build(
        tid, current_input="Which hotel did we book for the Lisbon conference?", max_tokens=3000
    )
    assert context.strategy == "hybrid" and not context.errors
    assert count_tokens(ANSWER) > 120  # longer than neighbour_tokens: sent whole because the room holds it
    lines = recalled_lines(context)
    assert ("user", "Which hotel should we book for the Lisbon conference?") in lines
    assert ("assistant", ANSWER) in lines
    assert context.recalled is not None
    assert {entries[0].id, entries[1].id} <= {e.id for e in context.recalled["entries"]}


async def test_a_short_neighbour_goes_whole_and_a_long_one_waits_for_room(memory: BaseMemoryAdapter) -> None:
    turns = alternate(["Which hotel should we book for the Lisbon conference?", ANSWER, *FILLER])
    tid, _entries = await chat(memory, turns)
    question = "Which hotel did we book for the Lisbon conference?"
    tight = await hybrid(memory).build(tid, current_input=question, max_tokens=300)
    lines = recalled_lines(tight)
    assert ("user", turns[0][1]) in lines  # the question found, whole
    assert ("assistant", ANSWER) not in lines  # the long answer does not fit whole ...
    for role, text in lines:  # ... and is either left out or its opening, cut at a sentence end and marked
        if role == "assistant" and text != ANSWER and text.startswith("Sentence 0"):
            assert text.endswith(". [...]") and ANSWER.startswith(text[: -len(" [...]")])
    assert sum(tight.partitions.values()) <= 300


async def test_a_short_reply_comes_with_what_it_replies_to(memory: BaseMemoryAdapter) -> None:
    texts = [
        "I sing in a choir in Porto.",
        "Would you like to join the Porto choir tour to Vienna in May?",
        "Glad to be part of it!",
    ]
    tid, _entries = await chat(memory, [*alternate(texts), *alternate(FILLER)])
    context = await hybrid(memory).build(tid, current_input="Am I joining the choir tour to Vienna?", max_tokens=1500)
    lines = recalled_lines(context)
    assert ("assistant", texts[1]) in lines
    assert ("user", "Glad to be part of it!") in lines


async def test_the_budget_holds_and_no_turn_is_clipped_without_a_mark(memory: BaseMemoryAdapter) -> None:
    long_user = " ".join(
        f"Note {i}: the Lisbon hotel booking needs item {i} checked before we travel." for i in range(30)
    )
    texts = [
        "Which hotel should we book for the Lisbon conference?",
        ANSWER,
        long_user,
        "Noted, I will check every item of the Lisbon hotel booking.",
        *FILLER,
    ]
    tid, _entries = await chat(memory, alternate(texts))
    whole = set(texts)
    question = "What about the Lisbon hotel booking?"
    seen_cut = seen_whole = seen_passage = 0
    for budget in range(120, 2400, 60):
        context = await hybrid(memory, turn_tokens=80).build(tid, current_input=question, max_tokens=budget)
        assert not context.errors
        assert sum(context.partitions.values()) <= budget
        if context.memory_context:
            assert count_tokens(context.memory_context) <= context.partitions.get("recall", 0)
        for _role, text in recalled_lines(context):
            if text in whole:
                seen_whole += 1
            elif text.endswith(" [...]"):  # an opening: whole sentences (or words) of the turn, marked
                seen_cut += 1
                head = text[: -len(" [...]")]
                assert any(t.startswith(head) and t[len(head)] == " " for t in texts), text
            else:  # a passage of a turn longer than turn_tokens: marked where text was left out
                seen_passage += 1
                assert text.startswith("... ") or text.endswith(" ..."), text
    assert seen_whole > 0 and seen_cut > 0 and seen_passage > 0


def _block(text: str, tokens: int, seq: int, *, fuller: ContextBlock | None = None) -> ContextBlock:
    entry = MemoryEntry.model_validate(
        {
            "id": f"e{seq}",
            "thread_id": "t",
            "seq": seq,
            "type": "message",
            "message": {"role": "user", "content": text},
            "created_at": START,
        }
    )
    found = RecalledTurns([entry], [entry])
    if fuller is not None:
        found.form = lambda kind: fuller if kind == "whole" else ContextBlock("recall", text, tokens, entry.id, found)
    return ContextBlock("recall", text, tokens, entry.id, found)


def test_fit_recall_keeps_the_smallest_forms_first_then_fills_exchanges_and_sends_turns_in_order() -> None:
    late_full = _block("late, whole exchange", 50, 9)
    late = _block("late", 10, 9, fuller=late_full)
    early = _block("early", 30, 2)
    too_big = _block("too big", 500, 5)
    fit = fit_recall([late, too_big, early], 100)
    assert fit.kept == [early, late_full]  # conversation order; the exchange whole (10 + 30 + 40 <= 100)
    assert fit.used == 80
    assert [b for b, _reason in fit.dropped] == [too_big]
    tight = fit_recall([late, too_big, early], 60)
    assert tight.kept == [early, late]  # no room for the whole exchange: its smallest form
    assert tight.used == 40 <= 60


def test_an_opening_ends_at_a_sentence_and_is_marked() -> None:
    cache = TokenCache()
    text, tokens = opening(ANSWER, 40, cache)
    assert text.endswith(". [...]") and ANSWER.startswith(text[: -len(" [...]")])
    assert tokens == count_tokens(text) <= 40 + 4
    assert opening("Short and whole.", 40, cache) == ("Short and whole.", count_tokens("Short and whole."))
    unbroken = "word " * 200
    cut, _ = opening(unbroken, 20, cache)
    assert cut.endswith("word [...]")
