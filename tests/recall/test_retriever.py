"""MemoryRetriever: its channels, fusion weights by kind of question, thresholds, items, rerankers."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from cogitator_memory import InMemoryAdapter, MemoryEntry, frozen_clock, unwrap
from cogitator_memory.errors import InvalidArgumentError
from cogitator_memory.items import MemoryItem
from cogitator_memory.recall import MemoryRetriever, RerankResult, RetrieverSettings

START = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)
LATER = datetime(2024, 10, 1, 12, 0, tzinfo=UTC)


async def thread_of(
    memory: InMemoryAdapter, texts: Sequence[str], days: Sequence[int] | None = None
) -> list[MemoryEntry]:
    """A thread of alternating user / assistant turns, turn ``i`` said on day ``days[i]``."""
    thread = unwrap(await memory.create_thread("agent"))
    out = []
    for i, text in enumerate(texts):
        at = START + timedelta(days=days[i] if days else i, minutes=i)
        with frozen_clock(at):
            out.append(
                unwrap(
                    await memory.add_entry(
                        {
                            "thread_id": thread.id,
                            "message": {"role": "user" if i % 2 == 0 else "assistant", "content": text},
                        }
                    )
                )
            )
    return out


def item(
    item_id: str,
    subject: str,
    value: str,
    *,
    attribute: str | None = None,
    entity: str | None = None,
    related: list[str] | None = None,
    evidence: list[str] | None = None,
    valid_from: datetime | None = None,
    valid_to: datetime | None = None,
    retrieved: int = 0,
    status: str = "active",
) -> MemoryItem:
    data: dict[str, Any] = {
        "id": item_id,
        "kind": "fact",
        "subject": subject,
        "attribute": attribute,
        "value": value,
        "entity_id": entity,
        "related_entity_ids": related,
        "evidence": [{"entry_id": e, "quote": "x"} for e in evidence or []],
        "trust": "user",
        "scope": {"agent_id": "agent"},
        "status": status,
        "recorded_at": START,
        "valid_from": valid_from,
        "valid_to": valid_to,
        "times_retrieved": retrieved,
    }
    return MemoryItem.model_validate({k: v for k, v in data.items() if v is not None})


@pytest.fixture
async def memory() -> Any:
    async with InMemoryAdapter() as store:
        yield store


async def test_small_talk_finds_nothing(memory: InMemoryAdapter) -> None:
    turns = await thread_of(memory, ["thanks a lot", "you are welcome"])
    found = await MemoryRetriever().retrieve("Thanks!", anchor=LATER, history=turns)
    assert found.analysis.search is False and found.hits == []


async def test_vector_channel_keeps_cosines_over_both_thresholds(memory: InMemoryAdapter) -> None:
    turns = await thread_of(memory, ["alpha", "beta", "gamma", "delta", "epsilon"])
    cos = {turns[0].id: 0.90, turns[1].id: 0.50, turns[2].id: 0.55, turns[3].id: 0.30, turns[4].id: 0.05}
    # the defaults keep every cosine from 0.1, whatever the best one is: the fusion ranks by place
    found = await MemoryRetriever().retrieve("tell me about zeta", anchor=LATER, history=turns, cosines=cos)
    by_vector = [h.id for h in found.hits if "vector" in h.channels]
    assert by_vector == [turns[0].id, turns[2].id, turns[1].id, turns[3].id]
    assert found.hits[0].channels == {"vector": 1}
    # a floor of 0.45 and 0.6 of the best: 0.9 and 0.55 pass (0.55 >= 0.6 * 0.9 = 0.54), 0.50 is
    # under 0.6 of the best, 0.30 and 0.05 under 0.45
    strict = MemoryRetriever({"vector_min_cosine": 0.45, "vector_relative": 0.6})
    narrow = await strict.retrieve("tell me about zeta", anchor=LATER, history=turns, cosines=cos)
    assert {h.id for h in narrow.hits if "vector" in h.channels} == {turns[0].id, turns[2].id}
    # Only the best cosine counts as "best": with every cosine below the floor nothing is found.
    low = {t.id: 0.08 for t in turns}
    assert (await MemoryRetriever().retrieve("zeta", anchor=LATER, history=turns, cosines=low)).hits == []


async def test_bm25_channel_and_held_turns(memory: InMemoryAdapter) -> None:
    turns = await thread_of(
        memory,
        [
            "I configured gunicorn with three workers",
            "Three gunicorn workers is fine for a small app",
            "The weather is nice today",
            "Yes, sunny and warm",
        ],
    )
    retriever = MemoryRetriever({"neighbour_weight": 0.0})
    found = await retriever.retrieve("how many gunicorn workers did I configure?", anchor=LATER, history=turns)
    assert [h.id for h in found.hits] == [turns[0].id, turns[1].id]
    assert all("bm25" in h.channels for h in found.hits)
    held = await retriever.retrieve(
        "how many gunicorn workers did I configure?", anchor=LATER, history=turns, held={turns[0].id}
    )
    assert [h.id for h in held.hits] == [turns[1].id]


async def test_time_channel_finds_turns_said_or_naming_the_time_asked(memory: InMemoryAdapter) -> None:
    turns = await thread_of(
        memory,
        [
            "We had dinner at a tiny place near the river",  # day 0: 1 March 2024
            "Sounds lovely",
            "My flight to Porto is on 20 March",  # names 20 March
            "Have a good trip",
            "I bought new running shoes",  # day 40: April
            "Nice",
        ],
        days=[0, 0, 10, 10, 40, 40],
    )
    retriever = MemoryRetriever({"user_weight": 0.0})  # who said a turn is not what is tested
    early = await retriever.retrieve("What did we do on 1 March 2024?", anchor=LATER, history=turns)
    assert early.analysis.kind == "temporal"
    assert [h.id for h in early.hits[:2]] == [turns[0].id, turns[1].id]  # said that day, nothing shared but the time
    assert all(h.channels.get("time") for h in early.hits[:2])
    trip = await retriever.retrieve("What was planned for 20 March 2024 with the flight?", anchor=LATER, history=turns)
    assert trip.hits[0].id == turns[2].id
    assert {"time", "bm25"} <= set(trip.hits[0].channels)


async def test_entity_channel_finds_names_as_whole_words(memory: InMemoryAdapter) -> None:
    turns = await thread_of(
        memory,
        [
            "Session handling is done with flask login now",
            "Good choice",
            "Logging in to the flask shell is slow",
            "Try again",
        ],
    )
    found = await MemoryRetriever().retrieve("Have I set up Flask-Login?", anchor=LATER, history=turns)
    assert found.analysis.entities == ("Flask-Login",)
    entity = [h.id for h in found.hits if "entity" in h.channels]
    assert entity == [turns[0].id]  # "flask login" as words; "flask shell ... logging in" is not the name
    assert found.hits[0].id == turns[0].id


async def test_fusion_weights_follow_the_kind_of_question(memory: InMemoryAdapter) -> None:
    turns = await thread_of(memory, ["the dog chased a red ball", "cats sleep a lot", "a note", "ok"])
    vector_only = turns[2].id  # found by its vector alone
    keyword_only = turns[0].id  # found by its words alone
    cos = {vector_only: 0.9}
    question = "what did the dog chase?"
    general = await MemoryRetriever({"coverage_weight": 0.0, "neighbour_weight": 0.0}).retrieve(
        question, anchor=LATER, history=turns, cosines=cos
    )
    assert general.analysis.kind == "general"
    assert [h.id for h in general.hits] == [vector_only, keyword_only]  # vector 2 over bm25 1
    flipped = MemoryRetriever(
        {"coverage_weight": 0.0, "neighbour_weight": 0.0, "weights": {"general": {"vector": 0.5}}}
    )
    assert [h.id for h in (await flipped.retrieve(question, anchor=LATER, history=turns, cosines=cos)).hits] == [
        keyword_only,
        vector_only,
    ]
    # The same weights for another kind of question leave "general" as it is.
    other = MemoryRetriever({"coverage_weight": 0.0, "neighbour_weight": 0.0, "weights": {"temporal": {"vector": 0.0}}})
    assert (await other.retrieve(question, anchor=LATER, history=turns, cosines=cos)).hits[0].id == vector_only
    off = MemoryRetriever({"neighbour_weight": 0.0, "weights": {"general": {"vector": 0.0}}})
    assert [h.id for h in (await off.retrieve(question, anchor=LATER, history=turns, cosines=cos)).hits] == [
        keyword_only
    ]


async def test_rerank_by_input_words_lifts_a_hit_holding_more_of_them(memory: InMemoryAdapter) -> None:
    turns = await thread_of(memory, ["blue", "blue whale song", "x", "y"])
    cos = {turns[0].id: 0.95, turns[1].id: 0.90}
    plain = MemoryRetriever({"coverage_weight": 0.0, "user_weight": 0.0, "weights": {"general": {"bm25": 0.0}}})
    worded = MemoryRetriever({"coverage_weight": 1.0, "user_weight": 0.0, "weights": {"general": {"bm25": 0.0}}})
    question = "the blue whale song"
    assert (await plain.retrieve(question, anchor=LATER, history=turns, cosines=cos)).hits[0].id == turns[0].id
    assert (await worded.retrieve(question, anchor=LATER, history=turns, cosines=cos)).hits[0].id == turns[1].id


async def test_a_changed_turn_is_searched_by_its_new_text(memory: InMemoryAdapter) -> None:
    turns = await thread_of(memory, ["my password is swordfish", "noted", "hello", "hi"])
    retriever = MemoryRetriever()
    assert (await retriever.retrieve("what is the swordfish password?", anchor=LATER, history=turns)).hits
    redacted = unwrap(await memory.redact_entry(turns[0].id, {"at": LATER, "reason": "secret"}))
    assert redacted is not None
    again = [redacted, *turns[1:]]
    found = await retriever.retrieve("what is the swordfish password?", anchor=LATER, history=again)
    assert found.hits == []  # the redacted text is searched, not the words it had
    gone = await retriever.retrieve("what is the swordfish password?", anchor=LATER, history=turns[1:])
    assert gone.hits == []


async def test_items_are_found_by_their_channels_and_lead_to_the_turns_they_quote(memory: InMemoryAdapter) -> None:
    turns = await thread_of(memory, ["We moved to the flat on Rua Augusta", "Congratulations!", "ok", "fine"])
    items = [
        item(
            "mem_home",
            "Ana",
            "lives on Rua Augusta in Lisbon",
            attribute="home",
            entity="ent_ana",
            evidence=[turns[0].id],
        ),
        item("mem_job", "Ana", "works as a nurse", attribute="job", entity="ent_ana", retrieved=3),
        item("mem_bo", "Bo", "plays chess on Sundays with Ana", entity="ent_bo", related=["ent_ana"]),
        item("mem_cafe", "Bo", "runs a cafe", attribute="job", entity="ent_bo"),
        item("mem_far", "Carl", "collects stamps", entity="ent_carl"),
    ]
    found = await MemoryRetriever().retrieve(
        "Where does Ana live?", anchor=LATER, history=turns, items=items, item_cosines={"mem_home": 0.8}
    )
    by_id = {h.id: h for h in found.hits}
    assert found.hits[0].id == "mem_home"
    assert {"item_bm25", "item_vector", "item_entity"} <= set(by_id["mem_home"].channels)
    assert "item_entity" in by_id["mem_job"].channels  # about Ana, named in the question
    assert "item_entity" in by_id["mem_bo"].channels  # names Ana (a related entity)
    assert by_id["mem_cafe"].channels == {"item_graph": 1}  # reached through Bo, whom a found item is about
    assert "mem_far" not in by_id
    assert by_id[turns[0].id].channels.get("evidence") == 1  # quoted by the best item
    assert found.items[0].id == "mem_home" and turns[0].id in {e.id for e in found.entries}
    # A held item is never returned; a suggested or stale one is never searched.
    held = await MemoryRetriever().retrieve("Where does Ana live?", anchor=LATER, items=items, held={"mem_home"})
    assert "mem_home" not in {h.id for h in held.hits}
    hidden = [
        item("mem_s", "Ana", "lives in Porto", status="suggested"),
        item("mem_t", "Ana", "lives in Faro", status="stale"),
    ]
    assert (await MemoryRetriever().retrieve("Where does Ana live?", anchor=LATER, items=hidden)).hits == []


async def test_item_time_channel_and_items_read_from_a_store(memory: InMemoryAdapter) -> None:
    old = item(
        "mem_old",
        "Ana",
        "rented a flat in Porto",
        attribute="home",
        valid_from=datetime(2023, 1, 1, tzinfo=UTC),
        valid_to=datetime(2023, 7, 1, tzinfo=UTC),
        status="superseded",
    )
    new = item(
        "mem_new", "Ana", "bought a house in Faro", attribute="home", valid_from=datetime(2023, 7, 1, tzinfo=UTC)
    )
    unwrap(await memory.add_items([old, new]))
    found = await MemoryRetriever().retrieve(
        "What did we arrange in February 2023?", anchor=LATER, item_adapter=memory, scope={"agent_id": "agent"}
    )
    assert [h.id for h in found.hits] == ["mem_old", "mem_new"]
    assert found.hits[0].channels == {"item_time": 1}  # it held in February 2023
    assert found.hits[1].channels == {"item_graph": 1}  # the same slot, reached through Ana
    with pytest.raises(InvalidArgumentError, match="scope"):
        await MemoryRetriever().retrieve("February 2023?", anchor=LATER, item_adapter=memory)


class Reverse:
    """A reranker that puts the hits in reverse order (counting its calls)."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    async def rerank(self, query: str, documents: Sequence[str]) -> list[RerankResult]:
        self.calls.append(list(documents))
        return [RerankResult(i, float(i)) for i in range(len(documents))]


class Failing:
    async def rerank(self, query: str, documents: Sequence[str]) -> list[RerankResult]:
        raise RuntimeError("reranker is down")


class Wrong:
    async def rerank(self, query: str, documents: Sequence[str]) -> list[RerankResult]:
        return [RerankResult(len(documents) + 3, 1.0)]


async def test_a_reranker_orders_the_best_hits_and_a_failing_one_leaves_the_order(memory: InMemoryAdapter) -> None:
    turns = await thread_of(memory, [f"garden note {i}: tomatoes" for i in range(8)])
    question = "what about the tomatoes in the garden?"
    plain = await MemoryRetriever().retrieve(question, anchor=LATER, history=turns)
    order = [h.id for h in plain.hits]
    assert len(order) == 8
    reverse = Reverse()
    top = MemoryRetriever({"rerank_top": 5}, reranker=reverse)
    reranked = await top.retrieve(question, anchor=LATER, history=turns)
    assert [h.id for h in reranked.hits] == order[:5][::-1] + order[5:]
    assert len(reverse.calls) == 1 and len(reverse.calls[0]) == 5
    assert reranked.hits[0].relevance == 4.0 and reranked.hits[5].relevance is None
    for bad in (Failing(), Wrong()):
        kept = await MemoryRetriever(reranker=bad).retrieve(question, anchor=LATER, history=turns)
        assert [h.id for h in kept.hits] == order
        assert len(kept.errors) == 1


async def test_bad_arguments_name_the_argument(memory: InMemoryAdapter) -> None:
    turns = await thread_of(memory, ["a b c", "d e f"])
    retriever = MemoryRetriever()
    with pytest.raises(InvalidArgumentError, match="limit"):
        await retriever.retrieve("abc", history=turns, limit=0)
    with pytest.raises(InvalidArgumentError, match=r"history\[0\]"):
        await retriever.retrieve("abc", history=["a"])  # type: ignore[list-item]
    with pytest.raises(InvalidArgumentError, match="cosines"):
        await retriever.retrieve("abc", history=turns, cosines={turns[0].id: float("nan")})
    with pytest.raises(InvalidArgumentError, match=r"settings\.rrf_k"):
        MemoryRetriever({"rrf_k": -1})
    with pytest.raises(InvalidArgumentError, match=r"settings\.weights"):
        MemoryRetriever({"weights": {"general": {"telepathy": 1.0}}})
    with pytest.raises(InvalidArgumentError, match="reranker"):
        MemoryRetriever(reranker=object())
    assert RetrieverSettings().weight("temporal", "time") > RetrieverSettings().weight("general", "time")


async def test_neighbour_weight_finds_a_turn_through_the_turn_next_to_it(memory: InMemoryAdapter) -> None:
    turns = await thread_of(
        memory,
        ["what should I grow this spring?", "Plant tomatoes and basil in the sunny bed"],
    )
    question = "which plants: tomatoes or basil in the sunny bed?"
    alone = await MemoryRetriever({"neighbour_weight": 0.0}).retrieve(question, anchor=LATER, history=turns)
    assert [h.id for h in alone.hits] == [turns[1].id]
    paired = await MemoryRetriever({"neighbour_weight": 0.5}).retrieve(question, anchor=LATER, history=turns)
    assert [h.id for h in paired.hits] == [turns[1].id, turns[0].id]  # the question of the answer found
    assert paired.hits[1].channels == {}  # found by no channel of its own


async def test_over_an_index_a_neighbour_must_be_next_to_the_turn(memory: InMemoryAdapter) -> None:
    # an index hands over candidates, not the thread: two candidates with a turn between them
    # in the thread are no neighbours, though nothing lies between them among the candidates
    turns = await thread_of(
        memory,
        ["what should I grow this spring?", "my cousin visits on friday", "Plant tomatoes and basil in the sunny bed"],
    )
    question = "which plants: tomatoes or basil in the sunny bed?"
    retriever = MemoryRetriever({"neighbour_weight": 0.5})
    whole = await retriever.retrieve(question, anchor=LATER, history=turns)
    assert [h.id for h in whole.hits] == [turns[2].id, turns[1].id]  # the thread's own neighbour
    candidates = [turns[0], turns[2]]
    terms = {e.id: e.message.text.lower().split() for e in candidates if e.message is not None}
    found = await retriever.retrieve(question, anchor=LATER, history=candidates, turn_terms=terms)
    assert [h.id for h in found.hits] == [turns[2].id]  # turns[0] is two turns away: no bonus
    nearby = [turns[1], turns[2]]
    terms = {e.id: e.message.text.lower().split() for e in nearby if e.message is not None}
    found = await retriever.retrieve(question, anchor=LATER, history=nearby, turn_terms=terms)
    assert [h.id for h in found.hits] == [turns[2].id, turns[1].id]  # next to it: its neighbour


async def test_keyword_hits_from_elsewhere_replace_the_turns_bm25(memory: InMemoryAdapter) -> None:
    turns = await thread_of(memory, ["the gunicorn workers", "three of them", "lunch at noon", "pasta"])
    retriever = MemoryRetriever({"neighbour_weight": 0.0, "user_weight": 0.0})
    own = await retriever.retrieve("gunicorn workers?", anchor=LATER, history=turns)
    assert [h.id for h in own.hits] == [turns[0].id]
    given = await retriever.retrieve(
        "gunicorn workers?", anchor=LATER, history=turns, keyword_hits=[turns[3].id, "entry_unknown", turns[2].id]
    )
    assert [h.id for h in given.hits] == [turns[3].id, turns[2].id]  # unknown ids are left out
    assert given.hits[0].channels == {"bm25": 1}


async def test_user_weight_puts_what_the_user_said_before_an_equal_reply(memory: InMemoryAdapter) -> None:
    turns = await thread_of(memory, ["my cat is called Miso", "Miso is a lovely name for a cat", "ok", "fine"])
    question = "what is the cat called?"
    cos = {turns[1].id: 0.9, turns[0].id: 0.8}  # the reply is a little closer to the question
    even = MemoryRetriever({"user_weight": 0.0, "neighbour_weight": 0.0, "weights": {"general": {"bm25": 0.0}}})
    found = await even.retrieve(question, anchor=LATER, history=turns, cosines=cos)
    assert [h.id for h in found.hits] == [turns[1].id, turns[0].id]
    biased = MemoryRetriever({"user_weight": 1.0, "neighbour_weight": 0.0, "weights": {"general": {"bm25": 0.0}}})
    found = await biased.retrieve(question, anchor=LATER, history=turns, cosines=cos)
    assert [h.id for h in found.hits] == [turns[0].id, turns[1].id]


async def test_the_turns_said_on_a_day_a_question_names_rank_by_what_they_share_with_it(
    memory: InMemoryAdapter,
) -> None:
    # a day of chat: the turn that answers is said late that day; the time channel alone (the
    # others weighed 0) ranks the day's turns by the question's terms, not by when they were said
    topics = ["rain", "bikes", "cats", "trains", "socks", "lamps", "clouds", "tea", "maps", "kites", "moss", "bells"]
    texts = [f"small talk about {topic} and nothing much" for topic in topics]
    texts[8] = "I am eating an ahi tuna bowl for dinner"  # a turn of the user's, late that day
    texts.append("another day, another ahi tuna bowl")
    days = [5] * 12 + [6]
    turns = await thread_of(memory, texts, days)
    off = {c: 0.0 for c in ("vector", "bm25", "entity", "hop", "standing", "evidence")}
    retriever = MemoryRetriever({"weights": {"temporal": off, "general": off}})
    found = await retriever.retrieve("What was I eating on 6 March 2024?", anchor=LATER, history=turns)
    assert found.analysis.interval is not None
    assert found.hits[0].id == turns[8].id and found.hits[0].channels == {"time": 1}
    # the channel finds only that day's turns (the next day's comes in as a neighbour alone)
    assert {h.id for h in found.hits if h.channels} == {t.id for t in turns[:12]}
