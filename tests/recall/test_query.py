"""analyze_query: whether to search, the kind of question, the time it names, terms and names."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from cogitator_memory.errors import InvalidArgumentError
from cogitator_memory.recall import TimeInterval, analyze_query
from cogitator_memory.recall.query import find_entities, is_small_talk

AT = datetime(2026, 10, 21, 15, 0, tzinfo=UTC)  # a Wednesday


@pytest.mark.parametrize(
    "text", ["Thanks!", "good morning", "Hi there, how are you?", "ok cool", "thank you so much", "", "   "]
)
def test_small_talk_is_not_searched(text: str) -> None:
    analysis = analyze_query(text, AT)
    assert analysis.search is False
    assert analysis.kind == "general"


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("Where did we stay last April?", "temporal"),
        ("When does my first sprint end?", "temporal"),
        ("How many weeks are there between the launch and the deadline?", "temporal"),
        ("Can you list the order in which I brought up the features?", "temporal"),
        ("What is my current hourly rate?", "update"),
        ("Do I still use Flask for the API?", "update"),
        ("How many columns did I add to the transactions table?", "aggregate"),
        ("Give me a summary of the security work", "aggregate"),
        ("What libraries would you suggest for charts?", "preference"),
        ("Which pizza toppings do I prefer?", "preference"),
        ("What is the average response time of the dashboard API?", "general"),
        # counting or listing every instance is aggregate, whatever else the question says
        ("How many times did I change my running route before the marathon?", "aggregate"),
        ("What are all the restaurants I mentioned?", "aggregate"),
        ("List every book I said I would read", "aggregate"),
        ("How often do I go swimming now?", "aggregate"),
        ("How many different user roles am I implementing?", "aggregate"),
        # ...unless it names a time: then the time is what the search needs first
        ("How many times did I go running last May?", "temporal"),
        # a knowledge update: the state now, or the state before it changed
        ("What did I use to drive to work?", "general"),
        ("What car did I used to drive?", "update"),
        ("Is Flask no longer my backend?", "update"),
        ("What was my rate originally?", "update"),
        # "before" closing a sentence asks whether, not when
        ("Have I ever used Bootstrap components before?", "general"),
        ("What did I do before the trip?", "temporal"),
        ("How old was I when I moved to Lisbon?", "temporal"),
        ("When did I change my hosting plan?", "temporal"),
    ],
)
def test_kinds(text: str, kind: str) -> None:
    analysis = analyze_query(text, AT)
    assert analysis.search is True
    assert analysis.kind == kind


def test_a_time_named_in_the_question_is_read_from_the_anchor_in_the_zone() -> None:
    analysis = analyze_query("What did I say yesterday about the cello?", AT, "Pacific/Auckland")
    # 15:00 UTC on the 21st is already 04:00 on the 22nd in Auckland: yesterday is the 21st there.
    assert analysis.interval == TimeInterval(
        datetime(2026, 10, 20, 11, 0, tzinfo=UTC), datetime(2026, 10, 21, 11, 0, tzinfo=UTC), "day"
    )
    assert analysis.kind == "temporal" and analysis.time_zone == "Pacific/Auckland"
    assert [m.text for m in analysis.times] == ["yesterday"]
    lisbon = analyze_query("What did I say yesterday about the cello?", AT, "Europe/Lisbon")
    assert lisbon.interval is not None and lisbon.interval.start == datetime(2026, 10, 19, 23, 0, tzinfo=UTC)


def test_two_times_make_one_interval_from_the_first_start_to_the_last_end() -> None:
    analysis = analyze_query("What happened between March 3 2024 and March 5 2024?", AT)
    assert analysis.interval is not None
    assert analysis.interval.start == datetime(2024, 3, 3, tzinfo=UTC)
    assert analysis.interval.end == datetime(2024, 3, 6, tzinfo=UTC)


def test_terms_leave_out_stopwords_and_question_words_and_keep_order() -> None:
    analysis = analyze_query("Can you tell me how the Gunicorn workers were configured, again?", AT)
    assert analysis.terms == ("gunicorn", "workers", "configured")


def test_entities_are_names_not_sentence_openers() -> None:
    assert find_entities("Have I integrated Flask-Login with my app on Render.com?") == ["Flask-Login", "Render.com"]
    assert find_entities("Where did Ana and Bo Silva stay in Lisbon?") == ["Ana", "Bo Silva", "Lisbon"]
    assert find_entities('Do I still like "the blue hotel"?') == ["the blue hotel"]
    assert find_entities("What is my rate? Tell me now.") == []
    assert find_entities("Is the API faster than v2?") == ["API", "v2"]


def test_a_possessive_names_its_owner_and_ends_the_name() -> None:
    assert find_entities("Given Wyatt and Natalie's interest in AI hiring") == ["Wyatt", "Natalie", "AI"]
    assert find_entities("Did Ana’s sister call? And James' son?") == ["Ana", "James"]
    assert find_entities("Is Bo Silva's Lisbon flat free?") == ["Bo Silva", "Lisbon"]


def test_words_in_capitals_are_names_only_when_not_common_words() -> None:
    text = "List the steps of the AI rollout. Mention ONLY and ONLY five items. Do NOT include NASA."
    assert find_entities(text) == ["AI", "NASA"]
    assert find_entities("IMPORTANT: what did I tell IBM?") == ["IBM"]


def test_terms_gain_the_word_forms_the_stemmer_does_not_join() -> None:
    # irregular verbs and derivations, after the question's own terms; frame words left alone
    assert analyze_query("What did I buy for the trip?", AT).terms == ("buy", "trip", "bought")
    assert analyze_query("When did I decide on the venue?", AT).terms == ("decide", "venue", "decision")
    assert analyze_query("What do you think I chose?", AT).terms == ("think", "chose", "choice", "choose", "chosen")
    assert analyze_query("Where do you think I should go?", AT).terms == ("think", "go", "gone", "went")


def test_small_talk_words_around_a_real_question_do_not_stop_the_search() -> None:
    assert not is_small_talk("Thanks! And what was the hotel in Lisbon?")
    assert analyze_query("ok, what was my budget?", AT).search


def test_bad_arguments_name_the_argument() -> None:
    with pytest.raises(InvalidArgumentError, match="input"):
        analyze_query(42, AT)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="anchor"):
        analyze_query("hello there", "yesterday")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="time_zone"):
        analyze_query("what did I say on Monday?", AT, "Mars/Olympus")


def test_a_naive_anchor_is_utc() -> None:
    naive = analyze_query("what did I say today?", datetime(2026, 10, 21, 23, 30))
    assert naive.anchor == datetime(2026, 10, 21, 23, 30, tzinfo=UTC)
    assert naive.interval is not None and naive.interval.start == datetime(2026, 10, 21, tzinfo=UTC)
