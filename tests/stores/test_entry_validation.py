"""add_entry's validation of dicts: what ``NewMemoryEntry.model_validate`` gives, a step less.

:func:`~cogitator_memory.threads.tree.validate_new_entry` validates a dict of a conversation
entry (a message, no event) without the model's after-validator, which such a dict cannot
fail. Random dicts of that shape and of shapes near it must give the very record validation
gives, or the same errors.
"""

from __future__ import annotations

import math
import random
from typing import Any

from pydantic import ValidationError

from cogitator_memory.threads import tree
from cogitator_memory.threads.records import EntryContent, Message, NewMemoryEntry


class Text(str):
    """A subclass of str (validation makes a plain str of it)."""


class Number(int):
    """A subclass of int (validation makes a plain int of it)."""


MESSAGE = Message(role="assistant", content="Already a record.")
CALL = {"id": "call_1", "name": "search", "arguments": {"q": "x"}}

# Values of each key: the kinds the fast path takes first, then near ones it must leave to pydantic.
ROLES: list[Any] = ["user", "assistant", "system", "tool", "bot", "", Text("user"), 1, None, b"user"]
CONTENTS: list[Any] = [
    "The quick brown fox #12",
    "",
    "naïve café ✓",
    "lone \ud800 surrogate",
    Text("sub"),
    [{"type": "text", "text": "part"}],
    None,
    3,
    b"bytes",
]
NAMES: list[Any] = ["ana", "", None, "\udc00", Text("ana"), 1]
FLAGS: list[Any] = [True, False, None, 0, 1, "true", Number(1), math.nan]
COUNTS: list[Any] = [0, 20, 2**63 - 1, None, -1, 2**63, True, False, Number(3), 3.0, math.nan, "5", [1]]
KINDS: list[Any] = ["message", "tool_result", "label", "custom", "compaction", "bogus", Text("message"), None, 1]
IDS: list[Any] = [
    "thread_019ad1f3c2a87c1e9b0d44f2a6e3",
    "entry_abc",
    "x",
    "",
    " ",
    "a\nb",
    "idé",
    "bad \ud800",
    "x" * 300,
    Text("thread_1"),
    None,
    5,
    5.0,
]
METADATA: list[Any] = [
    None,
    {},
    {"user_id": "u1", "n": 1, "deep": {"a": [1, {"b": None}]}},
    {"f": math.nan, "big": 2**70},
    {Text("k"): 1},
    {1: "one"},
    {"t": (1, 2)},
    [],
    "meta",
]
EVENTS: list[Any] = [None, {"label": "x"}, {"name": "n"}, "event"]
TOOL_DATA: list[Any] = [None, [], [CALL], [{"call_id": "call_1", "result": 1}], "calls"]


def _pick(rng: random.Random, values: list[Any]) -> Any:
    """Mostly the first, accepted kinds (a third of the list), sometimes any."""
    if rng.random() < 0.7:
        return rng.choice(values[: max(1, len(values) // 3)])
    return rng.choice(values)


def _random_message(rng: random.Random) -> Any:
    roll = rng.random()
    if roll < 0.05:
        return MESSAGE
    if roll < 0.08:
        return rng.choice([None, "hello", ["x"], Message.model_construct(role="user")])
    message: dict[Any, Any] = {}
    if rng.random() < 0.97:
        message["role"] = _pick(rng, ROLES)
    if rng.random() < 0.9:
        message["content"] = _pick(rng, CONTENTS)
    for key, values in (("name", NAMES), ("tool_call_id", NAMES), ("cache_breakpoint", FLAGS)):
        if rng.random() < 0.15:
            message[key] = _pick(rng, values)
    if rng.random() < 0.05:
        message["tool_calls"] = rng.choice([None, [], [CALL]])
    if rng.random() < 0.03:
        message[rng.choice(["extra", Text("role"), 7])] = "x"
    keys = list(message)
    rng.shuffle(keys)
    return {key: message[key] for key in keys}


def _random_entry(rng: random.Random) -> dict[Any, Any]:
    entry: dict[Any, Any] = {}
    if rng.random() < 0.97:
        entry["thread_id"] = _pick(rng, IDS)
    if rng.random() < 0.97:
        entry["message"] = _random_message(rng)
    optional: list[tuple[str, list[Any], float]] = [
        ("token_count", COUNTS, 0.5),
        ("type", KINDS, 0.2),
        ("metadata", METADATA, 0.2),
        ("parent_id", IDS, 0.15),
        ("id", IDS, 0.15),
        ("root", FLAGS, 0.15),
        ("activate", FLAGS, 0.15),
        ("event", EVENTS, 0.05),
        ("tool_calls", TOOL_DATA, 0.05),
        ("tool_results", TOOL_DATA, 0.05),
    ]
    for key, values, chance in optional:
        if rng.random() < chance:
            entry[key] = _pick(rng, values)
    if rng.random() < 0.03:
        entry[rng.choice(["extra", "seq", 1])] = 1
    if rng.random() < 0.03 and "thread_id" in entry:
        entry[Text("thread_id")] = entry.pop("thread_id")
    keys = list(entry)
    rng.shuffle(keys)
    return {key: entry[key] for key in keys}


def _types(record: Any) -> dict[str, type]:
    return {name: type(value) for name, value in record.__dict__.items()}


def _outcome(data: Any, validate: Any) -> Any:
    try:
        record = validate(data)
    except ValidationError as exc:
        return "error", exc.errors(include_url=False, include_context=False), str(exc)
    message = record.message
    return (
        type(record),
        record.__dict__,
        list(record.__dict__),
        _types(record),
        record.model_fields_set,
        record.__pydantic_extra__,
        record.__pydantic_private__,
        None if message is None else (message.__dict__, _types(message), message.model_fields_set),
        record.model_dump(),
    )


def test_random_dicts_give_what_model_validate_gives() -> None:
    rng = random.Random(20261201)
    outcomes = {"taken": 0, "refused": 0}
    for _ in range(6000):
        data = _random_entry(rng)
        expected = _outcome(data, NewMemoryEntry.model_validate)
        assert _outcome(data, tree.validate_new_entry) == expected, data
        outcomes["refused" if expected[0] == "error" else "taken"] += 1
    assert min(outcomes.values()) > 1000  # both kinds met often enough to mean something


def test_the_shape_check_is_left_out_only_where_it_cannot_fail() -> None:
    # The schema is of the shape this knows (else every dict is validated in full).
    assert tree._VALIDATE_CHECKED_SHAPE is not None
    # Dicts the after-validator refuses are validated in full, and refused the same.
    for data in [
        {"thread_id": "t", "type": "message"},
        {"thread_id": "t", "type": "tool_result", "message": None},
        {"thread_id": "t", "message": {"role": "user"}, "event": {"label": "x"}},
        {"thread_id": "t", "message": {"role": "user"}, "type": "label"},
    ]:
        for validate in (NewMemoryEntry.model_validate, tree.validate_new_entry):
            try:
                validate(data)
            except ValidationError as exc:
                assert exc.errors()[0]["type"] == "value_error", data
            else:
                raise AssertionError(f"taken: {data!r}")
    assert EntryContent.__pydantic_decorators__.model_validators  # the check exists on the model
