"""Asking a model for a JSON array: the one ask, retry and continue loop.

The extractors (items, graph) and hierarchical compaction ask a model for a JSON array of objects
and read its answer with :func:`~cogitator_memory.models.read_json_array` (``objects=True``).
:func:`ask_json_array` is how they all do it:

- an answer holding no array is asked again: the answer, then ``retry_prompt`` as a user turn,
  after the messages (the messages alone when the answer was blank), until ``attempts`` answers
  were read; then the error ``no_array(answers)`` builds is raised;
- an answer cut at its length limit keeps the elements it finished, and the model is asked to go
  on (the cut answer, then ``continuation(everything read so far)`` as a user turn, after the
  first messages), up to ``continuations`` times; the reads are joined with
  :meth:`~cogitator_memory.models.JsonArrayRead.then`, so the read returned is cut
  (:attr:`~cogitator_memory.models.JsonArrayRead.cut`) when the last answer still was.

``ask`` sends one list of messages and returns the answer's text: :func:`ask_text` over a
:data:`~cogitator_memory.models.SummarizeFn`, or the caller's own (with a timeout, say).
:func:`retry_prompt` and :func:`quoting_continuation` build the two user turns for an asker
whose messages are numbered and quoted (the extractors, hierarchical compaction).
``counts``, any object with integer ``calls``, ``retries`` and ``continuations`` (:class:`AskCounts`),
counts the calls as they are made; ``on_read`` sees each answer's read as it comes, so what was read
before a later failure is kept.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol, TypeAlias, cast

from ..errors import InvalidArgumentError
from ..threads.records import Message
from .json_array import JsonArrayRead, continuation_prompt, read_json_array
from .records import SummarizeFn, SummarizeOptions

#: ``ask(messages) -> answer text``: one model call.
Ask: TypeAlias = Callable[[list[Message]], Awaitable[str]]


class AskCounts(Protocol):
    """What :func:`ask_json_array` counts: every call, the calls asking again after an answer
    without an array (``retries``) and the calls going on after a cut answer (``continuations``)."""

    calls: int
    retries: int
    continuations: int


def check_summarize(summarize: object) -> SummarizeFn:
    """``summarize`` when it can be called; :class:`~cogitator_memory.errors.InvalidArgumentError`
    naming ``summarize`` otherwise."""
    if not callable(summarize):
        raise InvalidArgumentError("summarize", "must be a SummarizeFn: async (messages, options) -> str")
    return cast("SummarizeFn", summarize)  # taken on trust: its answers are checked (ask_text)


async def ask_text(summarize: SummarizeFn, messages: list[Message], options: SummarizeOptions) -> str:
    """The text of ``summarize(messages, options)``; an answer that is not a string is an
    :class:`~cogitator_memory.errors.InvalidArgumentError` naming ``summarize``."""
    answer = await summarize(messages, options)
    if not isinstance(answer, str):
        raise InvalidArgumentError("summarize", f"must answer a string, got {type(answer).__name__}")
    return answer


#: What :func:`quoting_continuation` adds after the continuation by default.
SAME_QUOTES = "Use the same message numbers and quote the messages exactly, as before."


def retry_prompt(many: str, *, nothing: str = "worth remembering") -> str:
    """The ``retry_prompt`` of :func:`ask_json_array` for an array of ``many`` (a plural noun:
    ``"items"``): answer again with only that array, ``[]`` when there is nothing ``nothing``."""
    return (
        f"That answer held no JSON array. Answer again with only the JSON array of {many}, "
        f"as the system prompt describes, or [] if there is nothing {nothing}."
    )


def quoting_continuation(read: JsonArrayRead, *, noun: str, then: str = SAME_QUOTES) -> str:
    """The ``continuation`` turn of :func:`ask_json_array` after an answer cut at its length limit:
    :func:`~cogitator_memory.models.continuation_prompt` for ``noun`` (``read`` is everything read
    so far), then ``then`` (by default, to keep the message numbers and quote exactly)."""
    return f"{continuation_prompt(read, noun=noun)} {then}"


async def _ask_for_array(
    ask: Ask,
    messages: list[Message],
    retry_prompt: str,
    attempts: int,
    no_array: Callable[[list[str]], BaseException],
    counts: AskCounts | None,
) -> tuple[JsonArrayRead, str]:
    """An answer holding a JSON array (its read and its text), asking again as the module says."""
    answers: list[str] = []
    current = messages
    for attempt in range(attempts):
        if counts is not None:
            if attempt:
                counts.retries += 1
            counts.calls += 1
        answer = await ask(current)
        read = read_json_array(answer, objects=True)
        if read.found:
            return read, answer
        answers.append(answer)
        current = messages
        if answer.strip():
            current = [
                *messages,
                Message(role="assistant", content=answer),
                Message(role="user", content=retry_prompt),
            ]
    raise no_array(answers)


async def ask_json_array(
    ask: Ask,
    messages: Sequence[Message],
    *,
    retry_prompt: str,
    continuation: Callable[[JsonArrayRead], str],
    attempts: int,
    continuations: int,
    no_array: Callable[[list[str]], BaseException],
    counts: AskCounts | None = None,
    on_read: Callable[[JsonArrayRead], None] | None = None,
) -> JsonArrayRead:
    """The JSON array the model answers to ``messages``, asked again when an answer holds none
    and continued when one is cut, as the module docstring says. Returns every read joined;
    ``.cut`` tells whether the last answer was still cut."""
    if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
        raise InvalidArgumentError("attempts", f"must be an integer of at least 1, got {attempts!r}")
    if isinstance(continuations, bool) or not isinstance(continuations, int) or continuations < 0:
        raise InvalidArgumentError("continuations", f"must be an integer of 0 or more, got {continuations!r}")
    base = list(messages)
    read, answer = await _ask_for_array(ask, base, retry_prompt, attempts, no_array, counts)
    if on_read is not None:
        on_read(read)
    total = read
    done = 0
    while read.cut and done < continuations:
        follow = [
            *base,
            Message(role="assistant", content=answer),
            Message(role="user", content=continuation(total)),
        ]
        done += 1
        if counts is not None:
            counts.continuations += 1
        read, answer = await _ask_for_array(ask, follow, retry_prompt, attempts, no_array, counts)
        if on_read is not None:
            on_read(read)
        total = total.then(read)
    return total


__all__ = [
    "SAME_QUOTES",
    "Ask",
    "AskCounts",
    "ask_json_array",
    "ask_text",
    "check_summarize",
    "quoting_continuation",
    "retry_prompt",
]
