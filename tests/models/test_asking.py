"""ask_json_array: the one ask, retry and continue loop, driven by a model that answers from a script.

The model here is the ``ask`` function itself (what a SummarizeFn would return), so every message
list it is sent can be checked; the extractors' tests run the same loop over real HTTP.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

import pytest

from cogitator_memory.errors import InvalidArgumentError
from cogitator_memory.models import JsonArrayRead, SummarizeOptions, continuation_prompt, read_json_array
from cogitator_memory.models.asking import (
    SAME_QUOTES,
    ask_json_array,
    ask_text,
    check_summarize,
    quoting_continuation,
    retry_prompt,
)
from cogitator_memory.threads.records import Message

RETRY = "no array there: again"


@dataclass
class Counts:
    calls: int = 0
    retries: int = 0
    continuations: int = 0


class NoArray(Exception):
    def __init__(self, answers: list[str]) -> None:
        super().__init__(f"{len(answers)} answers without an array")
        self.answers = answers


class Script:
    """Answers in order; records every message list it was sent."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.sent: list[list[Message]] = []

    async def __call__(self, messages: list[Message]) -> str:
        self.sent.append(list(messages))
        return self.answers.pop(0)


def continuation(read: JsonArrayRead) -> str:
    return f"go on after {len(read.elements)}"


def ask(script: Script, **overrides: object) -> JsonArrayRead:
    options: dict[str, object] = {
        "retry_prompt": RETRY,
        "continuation": continuation,
        "attempts": 3,
        "continuations": 2,
        "no_array": NoArray,
    }
    options.update(overrides)
    return asyncio.run(ask_json_array(script, [Message(role="user", content="window")], **options))  # type: ignore[arg-type]


def texts(messages: list[Message]) -> list[tuple[str, str]]:
    return [(m.role, str(m.content)) for m in messages]


def test_an_answer_without_an_array_is_asked_again_after_it_and_a_blank_one_from_the_start() -> None:
    script = Script("I cannot say.", "   ", '[{"a": 1}]')
    counts = Counts()
    read = ask(script, counts=counts)
    assert read.elements == [{"a": 1}] and not read.cut
    assert texts(script.sent[0]) == [("user", "window")]
    assert texts(script.sent[1]) == [("user", "window"), ("assistant", "I cannot say."), ("user", RETRY)]
    assert texts(script.sent[2]) == [("user", "window")]
    assert (counts.calls, counts.retries, counts.continuations) == (3, 2, 0)


def test_the_last_attempt_without_an_array_raises_what_no_array_builds_from_every_answer() -> None:
    script = Script("no", "still no", "never")
    with pytest.raises(NoArray) as caught:
        ask(script)
    assert caught.value.answers == ["no", "still no", "never"]


def test_a_cut_answer_is_continued_after_the_first_messages_and_the_reads_joined() -> None:
    script = Script('[{"a": 1}, {"b": 2}, {"c"', '[{"c": 3}]')
    counts = Counts()
    seen: list[list[object]] = []
    read = ask(script, counts=counts, on_read=lambda r: seen.append(r.elements))
    assert read.elements == [{"a": 1}, {"b": 2}, {"c": 3}] and not read.cut
    assert texts(script.sent[1]) == [
        ("user", "window"),
        ("assistant", '[{"a": 1}, {"b": 2}, {"c"'),
        ("user", "go on after 2"),
    ]
    assert seen == [[{"a": 1}, {"b": 2}], [{"c": 3}]]
    assert (counts.calls, counts.retries, counts.continuations) == (2, 0, 1)


def test_a_continuation_without_an_array_is_asked_again_after_the_continuation() -> None:
    script = Script('[{"a": 1}, {"b"', "sorry", '[{"b": 2}]')
    read = ask(script)
    assert read.elements == [{"a": 1}, {"b": 2}]
    assert texts(script.sent[2]) == [
        ("user", "window"),
        ("assistant", '[{"a": 1}, {"b"'),
        ("user", "go on after 1"),
        ("assistant", "sorry"),
        ("user", RETRY),
    ]


def test_continuing_stops_at_the_limit_and_the_read_says_it_is_still_cut() -> None:
    script = Script('[{"a": 1}, {"b"', '[{"b": 2}, {"c"', '[{"c": 3}, {"d"')
    counts = Counts()
    read = ask(script, counts=counts, continuations=2)
    assert read.cut and read.elements == [{"a": 1}, {"b": 2}, {"c": 3}]
    assert counts.continuations == 2 and not script.answers
    assert ask(Script('[{"a": 1}, {"b"'), continuations=0).cut


def test_limits_and_answers_are_checked() -> None:
    for name, value in (("attempts", 0), ("attempts", True), ("continuations", -1)):
        with pytest.raises(InvalidArgumentError, match=name):
            ask(Script("[]"), **{name: value})
    with pytest.raises(InvalidArgumentError, match="summarize"):
        check_summarize("not a function")

    async def numbers(messages: Sequence[Message], options: SummarizeOptions) -> str:
        return 42  # type: ignore[return-value]

    with pytest.raises(InvalidArgumentError, match=r"summarize.*must answer a string, got int"):
        asyncio.run(ask_text(numbers, [Message(role="user", content="x")], SummarizeOptions()))


def test_the_retry_and_continuation_turns_name_what_is_asked_for() -> None:
    assert retry_prompt("items") == (
        "That answer held no JSON array. Answer again with only the JSON array of items, as the system prompt "
        "describes, or [] if there is nothing worth remembering."
    )
    assert retry_prompt("atoms", nothing="to keep").endswith(
        "JSON array of atoms, as the system prompt describes, or [] if there is nothing to keep."
    )
    cut = read_json_array('[{"text": "one"}, {"text": "tw')
    turn = quoting_continuation(cut, noun="atom")
    assert turn == continuation_prompt(cut, noun="atom") + " " + SAME_QUOTES
    assert "after 1 atom of the JSON array" in turn and '{"text": "one"}' in turn
    assert quoting_continuation(cut, noun="element", then="Name only listed entities.").endswith(
        " Name only listed entities."
    )
    with pytest.raises(InvalidArgumentError, match="noun"):
        quoting_continuation(cut, noun="")
