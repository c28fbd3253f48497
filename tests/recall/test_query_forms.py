"""What the reading of a question adds reaches the search: word forms the stemmer does not join
find their turns, a possessive name finds its owner's turns, and a duration said "now" finds
the turns said when it began."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from cogitator_memory import InMemoryAdapter, MemoryEntry, frozen_clock, unwrap
from cogitator_memory.recall import MemoryRetriever, analyze_query
from cogitator_memory.recall._forms import FAMILIES, word_family
from cogitator_memory.search import index_terms

START = datetime(2021, 3, 1, 9, 0, tzinfo=UTC)


async def thread_of(texts: Sequence[str], days: Sequence[int]) -> list[MemoryEntry]:
    """User turns, turn ``i`` said ``days[i]`` days after :data:`START`."""
    memory = InMemoryAdapter()
    await memory.connect()
    thread = unwrap(await memory.create_thread("agent"))
    out = []
    for i, (text, day) in enumerate(zip(texts, days, strict=True)):
        with frozen_clock(START + timedelta(days=day, minutes=i)):
            entry = await memory.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": text}})
        out.append(unwrap(entry))
    return out


TEXTS = [
    "I bought a cork bag at the market in Lisbon.",
    "The weather in Porto was grey all week.",
    "We finally made the decision on the wedding venue: the old mill.",
    "My sister cooked dinner for everyone.",
    "Natalie started her new job at the library.",
    "I started running every morning with the club.",
]


async def test_an_irregular_form_finds_the_turn_with_the_other_form() -> None:
    history = await thread_of(TEXTS, [0, 1, 2, 3, 4, 5])
    retriever = MemoryRetriever()
    anchor = START + timedelta(days=30)
    found = await retriever.retrieve("What did I buy at the market?", anchor=anchor, history=history, limit=1)
    assert [h.id for h in found.hits] == [history[0].id]
    assert found.hits[0].channels.get("bm25") == 1
    decided = await retriever.retrieve("Where did we decide to hold it?", anchor=anchor, history=history, limit=1)
    assert [h.id for h in decided.hits] == [history[2].id]


async def test_a_possessive_name_finds_the_turns_naming_its_owner() -> None:
    history = await thread_of(TEXTS, [0, 1, 2, 3, 4, 5])
    found = await MemoryRetriever().retrieve(
        "How is Natalie's work going?", anchor=START + timedelta(days=30), history=history, limit=3
    )
    assert found.analysis.entities == ("Natalie",)
    assert found.hits[0].id == history[4].id and found.hits[0].channels.get("entity") == 1


async def test_a_duration_said_now_finds_the_turns_said_when_it_began() -> None:
    # said three years on: "for three years now" names the year it began, 2021
    history = await thread_of(TEXTS, [0, 400, 800, 900, 1000, 2])
    anchor = START + timedelta(days=3 * 365 + 30)
    found = await MemoryRetriever().retrieve(
        "I've been doing this for three years now, what did I start back then?", anchor=anchor, history=history
    )
    assert found.analysis.kind == "temporal"
    assert found.analysis.interval is not None and found.analysis.interval.start == datetime(2021, 1, 1, tzinfo=UTC)
    timed = [h.id for h in found.hits if "time" in h.channels]
    assert set(timed) == {history[0].id, history[5].id}


def test_each_family_is_symmetric_and_holds_tokenizer_words() -> None:
    for word, others in FAMILIES.items():
        assert index_terms(word) == [word]
        for other in others:
            assert word in word_family(other)
    assert word_family("unknown") == ()


def test_frame_words_and_repeats_are_not_expanded() -> None:
    terms = analyze_query("Given what I bought and buy, do you think it was worth it?").terms
    assert terms == ("given", "bought", "buy", "think", "worth")  # given, think: no forms added
