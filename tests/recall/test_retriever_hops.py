"""MemoryRetriever for questions of several pieces and of one speaker: the second hop, hits
spread over sessions, who said it read from the question and the conversation."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from cogitator_memory import InMemoryAdapter, MemoryEntry, frozen_clock, unwrap
from cogitator_memory.errors import InvalidArgumentError
from cogitator_memory.index.terms import recall_terms
from cogitator_memory.recall import MemoryRetriever
from cogitator_memory.recall.hops import MAX_FACETS, asks_across, asks_summary, facets
from cogitator_memory.recall.query import QUERY_KINDS
from cogitator_memory.recall.speakers import (
    MIN_ROLE_TURNS,
    PEER_LENGTH_RATIO,
    Asked,
    asked_speakers,
    participants,
)

START = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)
LATER = datetime(2024, 10, 1, 12, 0, tzinfo=UTC)
#: Turns about other things, each with words of its own (so the telling words of the others
#: are rare in the thread).
FILLER = [
    "my red bike needs oil today",
    "my blue lamp needs paint today",
    "my green desk needs glue today",
    "my gold sofa needs wax today",
    "my pink rug needs tape today",
    "my grey mug needs rope today",
    "my teal vase needs foam today",
    "my navy kite needs wire today",
    "my plum drum needs cord today",
    "my rust harp needs felt today",
    "my jade boat needs mesh today",
    "my ruby tent needs nail today",
    "my onyx sled needs bolt today",
    "my sand oven needs pins today",
    "my lime fan needs clay today",
]


@pytest.fixture
async def memory() -> Any:
    async with InMemoryAdapter() as store:
        yield store


async def thread_of(
    memory: InMemoryAdapter,
    turns: Sequence[tuple[str, str] | tuple[str, str, str]],
    *,
    days: Sequence[int] | None = None,
) -> list[MemoryEntry]:
    """A thread of ``(role, text)`` or ``(role, text, name)`` turns, turn ``i`` said ``i``
    minutes after 9:00 on day ``days[i]`` (day 0 for all by default)."""
    thread = unwrap(await memory.create_thread("agent"))
    out = []
    for i, turn in enumerate(turns):
        message: dict[str, Any] = {"role": turn[0], "content": turn[1]}
        if len(turn) == 3:
            message["name"] = turn[2]
        with frozen_clock(START + timedelta(days=days[i] if days else 0, minutes=i)):
            out.append(unwrap(await memory.add_entry({"thread_id": thread.id, "message": message})))
    return out


def ids(found: Any) -> list[str]:
    return [h.id for h in found.hits]


# ----- the second hop ------------------------------------------------------------------------------


async def two_migrations(memory: InMemoryAdapter) -> list[MemoryEntry]:
    """Two turns about one table's migrations (0 and 8), filler between and after them: the
    second shares "alembic migration" with the first, not the question's words."""
    turns: list[tuple[str, str]] = [
        ("user", "I added a currency column to the transactions table with an alembic migration")
    ]
    turns += [("user", text) for text in FILLER[:7]]
    turns += [("user", "another alembic migration today: the merchant field goes in as well")]
    turns += [("user", text) for text in FILLER[7:]]
    return await thread_of(memory, turns)


async def test_the_hop_finds_a_piece_sharing_words_with_the_first_hit_not_with_the_question(
    memory: InMemoryAdapter,
) -> None:
    entries = await two_migrations(memory)
    first, second = entries[0].id, entries[8].id
    question = "How many columns did I add to the transactions table?"
    one = await MemoryRetriever({"hop_seeds": 0}).retrieve(question, anchor=LATER, history=entries)
    two = await MemoryRetriever({"hop_seeds": 1}).retrieve(question, anchor=LATER, history=entries)
    assert ids(one)[0] == first and second not in ids(one)
    assert ids(two)[:2] == [first, second]
    assert two.hits[1].channels == {"hop": 1}


async def test_the_hop_runs_on_the_candidates_of_an_index_as_on_a_thread(memory: InMemoryAdapter) -> None:
    # the recall index's candidates come with their terms (a lazy corpus): the hop scores them
    # without indexing them all, and finds the same second piece with the same order
    entries = await two_migrations(memory)
    question = "How many columns did I add to the transactions table?"
    terms = {e.id: recall_terms(e.message.text) for e in entries if e.message is not None}
    retriever = MemoryRetriever({"hop_seeds": 1})
    on_thread = await retriever.retrieve(question, anchor=LATER, history=entries)
    on_index = await retriever.retrieve(question, anchor=LATER, history=entries, turn_terms=terms)
    assert ids(on_index)[:2] == [entries[0].id, entries[8].id]
    assert on_index.hits[1].channels == {"hop": 1}
    assert ids(on_index) == ids(on_thread)


async def test_a_lookup_of_a_word_or_two_gets_no_hop(memory: InMemoryAdapter) -> None:
    turns: list[tuple[str, str]] = [("user", "I added a currency column with an alembic migration")]
    turns += [("user", text) for text in FILLER[:7]]
    turns += [("user", "another alembic migration today: the merchant field goes in as well")]
    turns += [("user", text) for text in FILLER[7:]]
    entries = await thread_of(memory, turns)
    found = await MemoryRetriever({"hop_seeds": 3}).retrieve("currency column", anchor=LATER, history=entries)
    assert ids(found)[0] == entries[0].id
    assert entries[8].id not in ids(found) and not any("hop" in h.channels for h in found.hits)
    asked = await MemoryRetriever({"hop_seeds": 3}).retrieve(
        "Which currency column did I add?", anchor=LATER, history=entries
    )
    assert entries[8].id in ids(asked), "a question of three terms or more hops"


async def test_the_hop_weight_of_a_kind_of_question_turns_it_off(memory: InMemoryAdapter) -> None:
    turns: list[tuple[str, str]] = [
        ("user", "I added a currency column to the transactions table with an alembic migration")
    ]
    turns += [("user", text) for text in FILLER]
    turns += [("user", "another alembic migration today: the merchant field goes in as well")]
    entries = await thread_of(memory, turns)
    off = MemoryRetriever({"hop_seeds": 3, "weights": {"aggregate": {"hop": 0.0}}})
    found = await off.retrieve("How many columns did I add to the transactions table?", anchor=LATER, history=entries)
    assert entries[-1].id not in ids(found)


def test_hop_settings_are_checked() -> None:
    with pytest.raises(InvalidArgumentError, match="hop_seeds"):
        MemoryRetriever({"hop_seeds": -1})
    with pytest.raises(InvalidArgumentError, match="hop_terms"):
        MemoryRetriever({"hop_terms": 0})
    with pytest.raises(InvalidArgumentError, match="session_gap_hours"):
        MemoryRetriever({"session_gap_hours": 0})
    with pytest.raises(InvalidArgumentError, match="speaker_weight"):
        MemoryRetriever({"speaker_weight": -1})


# ----- sessions ------------------------------------------------------------------------------------


def test_questions_across_the_conversation_are_told_from_others() -> None:
    assert asks_across("Can you summarize how my garden project went?")
    assert asks_across("In what order did I bring up the parts of the move?")
    assert asks_across("How many columns did I add across my requests?")
    assert asks_across("How did my training plan change over the past few months?")
    assert not asks_across("How did I organize the tasks over the course of the sprint?")
    assert not asks_across("What soil did I buy for the garden?")


async def test_a_question_across_the_conversation_gets_hits_of_every_session(memory: InMemoryAdapter) -> None:
    turns = [
        ("user", "garden plan: tomato beds and tomato cages for the garden"),
        ("user", "garden soil for the tomato beds"),
        ("user", "garden hose for the tomato beds"),
        ("user", "the garden got a compost bin"),
    ]
    entries = await thread_of(memory, [*turns, *[("user", t) for t in FILLER]], days=[0, 0, 0, 30, *[60] * 15])
    # the order comes from the vectors alone: three turns of the first session, then the later one
    cosines = {e.id: c for e, c in zip(entries, [0.9, 0.85, 0.8, 0.7, *[0.1] * 15], strict=True)}
    plain: dict[str, Any] = {
        "recency_weight": 0.0,
        "coverage_weight": 0.0,
        "neighbour_weight": 0.0,
        "mmr_lambda": 1.0,
        "hop_seeds": 0,
        "weights": {kind: {"bm25": 0.0} for kind in QUERY_KINDS},
    }
    question = "Can you summarize how my garden tomato beds progressed?"
    flat = await MemoryRetriever({**plain, "session_spread": 0.0}).retrieve(
        question, anchor=LATER, history=entries, cosines=cosines
    )
    spread = await MemoryRetriever({**plain, "session_spread": 2.0}).retrieve(
        question, anchor=LATER, history=entries, cosines=cosines
    )
    later = entries[3].id
    assert ids(flat)[:4] == [e.id for e in entries[:4]]
    assert ids(spread)[:2] == [entries[0].id, later]
    # a question about one thing, not across the conversation, is not spread
    one = await MemoryRetriever({**plain, "session_spread": 2.0}).retrieve(
        "What did I get for the garden tomato beds?", anchor=LATER, history=entries, cosines=cosines
    )
    assert ids(one)[:4] == [e.id for e in entries[:4]]
    # nor are turns said in one session, however far apart the ones of another
    days = await MemoryRetriever({**plain, "session_spread": 2.0, "session_gap_hours": 24 * 40}).retrieve(
        question, anchor=LATER, history=entries, cosines=cosines
    )
    assert ids(days)[:4] == [e.id for e in entries[:4]]


# ----- speakers ------------------------------------------------------------------------------------


async def test_a_question_about_what_the_assistant_said_puts_its_turns_first(memory: InMemoryAdapter) -> None:
    entries = await thread_of(
        memory,
        [
            ("user", "caching the dashboard with redis keys"),
            *[("user", t) for t in FILLER[:5]],
            ("assistant", "caching the dashboard with redis keys"),
        ],
    )
    user, assistant = entries[0].id, entries[-1].id
    retriever = MemoryRetriever({"neighbour_weight": 0.0})
    told = await retriever.retrieve("What did you recommend for caching the dashboard?", anchor=LATER, history=entries)
    asked = await retriever.retrieve(
        "What would you recommend for caching the dashboard?", anchor=LATER, history=entries
    )
    mine = await retriever.retrieve("What did I say about caching the dashboard?", anchor=LATER, history=entries)
    assert ids(told)[0] == assistant
    assert ids(asked)[0] == user  # asks for something new: the user's turns weigh more, as by default
    assert ids(mine)[0] == user
    fixed = MemoryRetriever({"neighbour_weight": 0.0, "speaker_from_question": False})
    assert (
        ids(await fixed.retrieve("What did you recommend for caching the dashboard?", anchor=LATER, history=entries))[0]
        == user
    )


async def test_between_named_people_no_role_is_favoured_and_a_named_one_is(memory: InMemoryAdapter) -> None:
    longer, shorter = (
        "I painted a sunrise over the lake by the old cabin last week",
        "I painted a sunrise over the lake",
    )
    question = "Who painted a sunrise over the lake?"
    retriever = MemoryRetriever({"neighbour_weight": 0.0, "mmr_lambda": 1.0})
    # a user-assistant chat: the user's turn first, though the assistant's holds the words more
    plain = await thread_of(memory, [("user", longer), ("assistant", shorter)])
    assert ids(await retriever.retrieve(question, anchor=LATER, history=plain))[0] == plain[0].id
    # the same turns between two named people: the "user" role says nothing, the better turn first
    named = await thread_of(memory, [("user", longer, "Caroline"), ("assistant", shorter, "Melanie")])
    caroline, melanie = named[0].id, named[1].id
    assert ids(await retriever.retrieve(question, anchor=LATER, history=named))[0] == melanie
    # a question naming one of them: that one's turns first
    asked = await retriever.retrieve("Did Caroline paint a sunrise over the lake?", anchor=LATER, history=named)
    assert ids(asked)[0] == caroline


#: Short chat lines of another topic, said alike by both people of a chat.
CHATTER = [
    "ha that sounds fun honestly",
    "no way, really? tell me more",
    "i was at the gym all morning",
    "sure, lunch tomorrow works for me",
    "my sister called again today",
    "that movie was so long lol",
]


async def test_an_unnamed_user_and_assistant_who_talk_alike_are_peers(memory: InMemoryAdapter) -> None:
    """A chat between two people stored as "user" and "assistant" without names: the
    "assistant" writes turns as short as the user's, so neither is favoured; a real assistant,
    answering at length, leaves the user's turns favoured."""
    question = "Who painted a sunrise over the lake?"
    longer = "I painted a sunrise over the lake by the old cabin last week"
    shorter = "I painted a sunrise over the lake"
    retriever = MemoryRetriever({"neighbour_weight": 0.0, "mmr_lambda": 1.0})
    chatter = [(role, text) for text in CHATTER for role in ("user", "assistant")]
    peers = await thread_of(memory, [*chatter, ("user", longer), ("assistant", shorter)])
    people = participants(peers)
    assert people.alike and people.peers and not people.named
    found = await retriever.retrieve(question, anchor=LATER, history=peers)
    assert ids(found)[0] == peers[-1].id  # the better turn first: the "user" role says nothing
    # the same candidates given as a recall index gives them (terms counted), ranked the same
    terms = {e.id: recall_terms(e.message.content) for e in peers if e.message is not None}
    indexed = await retriever.retrieve(question, anchor=LATER, history=peers, turn_terms=terms)
    assert ids(indexed)[0] == peers[-1].id
    # "you" asks about no one in a chat between peers
    assert asked_speakers("What did you recommend for the lake?", people) == Asked()

    answers = [
        f"{text}! Here is a long and careful answer about it, with steps, options and advice." for text in CHATTER
    ]
    helped = [
        (role, text)
        for pair in zip(CHATTER, answers, strict=True)
        for role, text in zip(("user", "assistant"), pair, strict=True)
    ]
    assisted = await thread_of(memory, [*helped, ("user", longer), ("assistant", shorter)])
    people = participants(assisted)
    assert not people.alike and not people.peers
    found = await retriever.retrieve(question, anchor=LATER, history=assisted)
    assert ids(found)[0] == assisted[-2].id  # the user's turn, as in any chat with an assistant


def test_peers_are_told_by_the_median_turn_of_each_role_given_enough_turns() -> None:
    def entry(role: str, text: str) -> MemoryEntry:
        return MemoryEntry.model_validate(
            {
                "id": f"e{role}{len(text)}",
                "thread_id": "t",
                "seq": 0,
                "created_at": START,
                "message": {"role": role, "content": text},
            }
        )

    n = MIN_ROLE_TURNS
    users = [entry("user", "one two three four") for _ in range(n)]
    alike = [entry("assistant", "one two three four five six seven") for _ in range(n)]
    longer = [entry("assistant", " ".join(["word"] * int(4 * PEER_LENGTH_RATIO))) for _ in range(n)]
    assert participants([*users, *alike]).alike
    assert not participants([*users, *longer]).alike  # twice as long or more: an assistant
    terse = [entry("assistant", "ok") for _ in range(n)]
    assert not participants([*users, *terse]).alike  # a quarter as long or less: a terse assistant
    short = [entry("assistant", "one two") for _ in range(n)]
    assert participants([*users, *short]).alike  # half as long: a peer who writes less
    assert not participants([*users, *alike[: n - 1]]).alike  # too few turns to tell
    # lengths given (a recall record's term count) are used instead of the words
    assert not participants([*users, *alike], [4] * n + [40] * n).alike


async def test_a_speaker_named_in_metadata_counts(memory: InMemoryAdapter) -> None:
    thread = unwrap(await memory.create_thread("agent"))
    entries = []
    for i, (who, text) in enumerate([("Ana", "the boat trip"), ("Ben", "the boat trip"), ("Ana", "lunch")]):
        with frozen_clock(START + timedelta(minutes=i)):
            entries.append(
                unwrap(
                    await memory.add_entry(
                        {
                            "thread_id": thread.id,
                            "message": {"role": "user", "content": text},
                            "metadata": {"speaker": who},
                        }
                    )
                )
            )
    people = participants(entries)
    assert people.named and set(people.names) == {"ana", "ben"}
    assert asked_speakers("What did Ana think of the boat trip?", people) == Asked(names=frozenset({"ana"}))
    found = await MemoryRetriever({"neighbour_weight": 0.0}).retrieve(
        "What did Ana think of the boat trip?", anchor=LATER, history=entries
    )
    assert ids(found)[0] == entries[0].id


# ----- standing instructions and preferences -------------------------------------------------------


async def test_a_standing_instruction_is_found_for_a_question_it_touches(memory: InMemoryAdapter) -> None:
    entries = await thread_of(
        memory,
        [
            ("user", "Always include version numbers when I ask about libraries."),
            ("assistant", "Always happy to talk libraries!"),
            *[("user", t) for t in FILLER[:6]],
            ("user", "libraries libraries: the libraries list has flask and requests"),
            ("user", "which libraries handle dates, and which libraries handle money?"),
            ("user", "I prefer minimal libraries in this project"),
        ],
    )
    rule, reply, preference = entries[0].id, entries[1].id, entries[-1].id
    question = "Which libraries does my project use?"
    off = MemoryRetriever({"weights": {kind: {"standing": 0.0} for kind in QUERY_KINDS}})
    on = MemoryRetriever()
    without = await off.retrieve(question, anchor=LATER, history=entries)
    found = await on.retrieve(question, anchor=LATER, history=entries)
    by_id = {h.id: h for h in found.hits}
    assert set(by_id[rule].channels) >= {"standing"} and "standing" in by_id[preference].channels
    assert "standing" not in by_id[reply].channels  # the assistant's words bind no one
    assert ids(found).index(rule) < ids(without).index(rule)


async def test_standing_words_unrelated_to_the_question_are_not_found(memory: InMemoryAdapter) -> None:
    entries = await thread_of(
        memory, [("user", "Always include version numbers when I ask about libraries."), *[("user", t) for t in FILLER]]
    )
    found = await MemoryRetriever().retrieve("What colour is my bike?", anchor=LATER, history=entries)
    assert ids(found)[0] == entries[1].id  # "my red bike needs oil today"
    assert all("standing" not in h.channels for h in found.hits)


# ----- summaries: exchanges --------------------------------------------------------------------


def test_questions_asking_for_a_summary_are_told_from_others() -> None:
    for asked in (
        "Can you summarize what I learned about caching?",
        "Give me a comprehensive summary of the budget tracker project",
        "an overview of my reading plan, please",
        "Quick recap of the trip planning?",
    ):
        assert asks_summary(asked), asked
    for other in ("What are my summer plans?", "How did the caching go?", "Which city do I live in?"):
        assert not asks_summary(other), other


async def caching_exchanges(memory: InMemoryAdapter) -> list[MemoryEntry]:
    """Two exchanges about a weather app's caching (turns 0-1 and 6-7), each reply holding what
    was learned in words the question does not use; small talk between and after them."""
    turns: list[tuple[str, str]] = [
        ("user", "I want caching in my weather app so it stops calling the API for every city"),
        ("assistant", "Keep each forecast in localStorage keyed by name, expiring after ten minutes"),
    ]
    for text in FILLER[:2]:
        turns += [("user", text), ("assistant", "Noted, " + text.replace("my ", "your "))]
    turns += [
        ("user", "The caching in my weather app serves stale forecasts after midnight"),
        ("assistant", "Store the fetch timestamp too, and invalidate entries whose date changed"),
    ]
    for text in FILLER[2:6]:
        turns += [("user", text), ("assistant", "Noted, " + text.replace("my ", "your "))]
    return await thread_of(memory, turns)


async def test_a_summary_question_gets_each_exchange_whole(memory: InMemoryAdapter) -> None:
    # a summary is in the replies as much as in the questions: each hit brings the other turn
    # of its exchange next to it, and the user's turns are not favoured over the replies
    entries = await caching_exchanges(memory)
    first, reply, second, answer = (entries[i].id for i in (0, 1, 6, 7))
    question = "Summarize what I learned about caching in my weather app"
    paired = await MemoryRetriever().retrieve(question, anchor=LATER, history=entries)
    plain = await MemoryRetriever({"exchanges": False}).retrieve(question, anchor=LATER, history=entries)
    assert sorted([tuple(ids(paired)[:2]), tuple(ids(paired)[2:4])]) == sorted([(first, reply), (second, answer)])
    assert set(ids(plain)[:2]) == {first, second}  # without: the user's two turns, then the replies
    # a question asking for no summary ranks as before
    other = "What did I learn about caching in my weather app?"
    assert ids(await MemoryRetriever().retrieve(other, anchor=LATER, history=entries)) == ids(
        await MemoryRetriever({"exchanges": False}).retrieve(other, anchor=LATER, history=entries)
    )


async def test_over_an_index_a_partner_must_be_next_to_its_turn(memory: InMemoryAdapter) -> None:
    # an index hands over candidates, not the thread: the turn after a hit among them is its
    # reply only when it is next to it in the thread (seq)
    entries = await caching_exchanges(memory)
    question = "Summarize what I learned about caching in my weather app"
    kept = [e for i, e in enumerate(entries) if i not in (1, 2)]  # the first reply is no candidate
    terms = {e.id: recall_terms(e.message.text) for e in kept if e.message is not None}
    found = await MemoryRetriever().retrieve(question, anchor=LATER, history=kept, turn_terms=terms)
    at = ids(found).index(entries[0].id)
    assert ids(found)[at + 1 : at + 2] != [entries[3].id]  # the reply after the gap answers another turn
    assert entries[7].id == ids(found)[ids(found).index(entries[6].id) + 1]


# ----- facets: several things named in one question ---------------------------------------------


def test_the_things_a_question_names_are_read_from_its_first_sentence() -> None:
    assert facets("Considering my sourdough starter, the cycle lanes and the tax forms, how should I plan?") == [
        "Considering my sourdough starter",
        "the cycle lanes",
        "the tax forms",
        "how should I plan",
    ]
    assert facets("What did I say about bees; wasps; or ants? Also, cats, dogs and mice.") == [
        "What did I say about bees",
        "wasps",
        "ants",
    ]
    assert facets("What did I say between May and June?") == [], "two pieces are no list"
    assert facets("Where do I live?") == []
    many = facets(", ".join(f"thing {i}" for i in range(20)))
    assert len(many) == MAX_FACETS and many[0] == "thing 0"


async def test_a_question_naming_several_things_gets_a_turn_about_each(memory: InMemoryAdapter) -> None:
    turns: list[tuple[str, str]] = []
    for i in range(5):  # one thing said often, in the question's other words too
        turns += [("user", f"plan my week {i}: sourdough starter"), ("user", FILLER[i])]
    turns += [("user", "the cycle lanes downtown are closed this month, so the ride to the office takes twice as long")]
    turns += [("user", text) for text in FILLER[5:10]]
    turns += [("user", "the tax forms are due on Friday and the accountant still wants the receipts from the flat")]
    entries = await thread_of(memory, turns)
    cycle, tax = entries[10].id, entries[16].id
    question = "Considering my sourdough starter, the cycle lanes and the tax forms, how should I plan my week?"
    off = MemoryRetriever({"weights": {kind: {"facet": 0} for kind in QUERY_KINDS}})
    without = ids(await off.retrieve(question, anchor=LATER, history=entries, limit=3))
    assert tax not in without and sum(i in without for i in (cycle, tax)) < 2
    found = await MemoryRetriever().retrieve(question, anchor=LATER, history=entries, limit=3)
    assert set(ids(found)[1:3]) == {cycle, tax} and "sourdough" in found.hits[0].entry.message.text
    assert found.hits[1].channels["facet"] == 2
    # over an index's candidates (their terms given, a lazy corpus): the same
    terms = {e.id: recall_terms(e.message.text) for e in entries if e.message is not None}
    on_index = await MemoryRetriever().retrieve(question, anchor=LATER, history=entries, limit=3, turn_terms=terms)
    assert ids(on_index) == ids(found)
