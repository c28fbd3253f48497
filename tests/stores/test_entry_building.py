"""add_entry's record building: the direct construction of checked records gives what validation gives."""

from __future__ import annotations

from typing import Any

import pytest

from cogitator_memory import clock
from cogitator_memory.threads.records import MemoryEntry, Message, NewMemoryEntry
from cogitator_memory.threads.tree import build_entry

MESSAGE = {"role": "assistant", "content": "Looking it up."}
CALL = {"id": "call_1", "name": "search", "arguments": {"q": "lisbon", "n": [1, 2]}}
INPUTS: list[dict[str, Any]] = [
    {"message": {"role": "user", "content": "Hello there"}},
    {"message": {"role": "user", "content": "Hi", "name": "ana"}, "token_count": 7},
    {"message": {**MESSAGE, "tool_calls": [CALL]}, "metadata": {"user_id": "u1", "deep": {"a": [1, {"b": None}]}}},
    {"message": MESSAGE, "tool_calls": [CALL], "tool_results": [{"call_id": "call_1", "result": {"rows": [1, 2]}}]},
    {"type": "tool_result", "message": {"role": "tool", "content": "42", "tool_call_id": "call_1"}},
    {
        "message": {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
            ],
        }
    },
    {"message": MESSAGE, "metadata": {}},
    {"type": "label", "event": {"label": "checkpoint"}},
    {"type": "custom", "event": {"name": "x", "data": {"k": 1}}, "metadata": {"m": True}},
]


def _validated(new: NewMemoryEntry, entry_id: str, parent: str | None, seq: int, tokens: int, now: Any) -> MemoryEntry:
    """What validation makes of the same fields (the reference the direct construction must equal)."""
    fields: dict[str, Any] = {
        "id": entry_id,
        "thread_id": new.thread_id,
        "parent_id": parent,
        "seq": seq,
        "type": new.type,
        "message": new.message,
        "token_count": tokens,
        "created_at": now,
    }
    for name in ("metadata", "event", "tool_calls", "tool_results"):
        if getattr(new, name) is not None:
            fields[name] = getattr(new, name)
    return MemoryEntry.model_validate(fields)


@pytest.mark.parametrize("data", INPUTS)
@pytest.mark.parametrize("parent", [None, "entry_parent"])
def test_built_entry_equals_the_validated_one(data: dict[str, Any], parent: str | None) -> None:
    new = NewMemoryEntry.model_validate({"thread_id": "thread_1", **data})
    now = clock.now()
    built = build_entry(new, "entry_1", parent, 3, 11, now)
    expected = _validated(new, "entry_1", parent, 3, 11, now)
    assert type(built) is MemoryEntry
    assert built.__dict__ == expected.__dict__
    assert list(built.__dict__) == list(expected.__dict__)  # the order JSON is written in
    assert built.model_fields_set == expected.model_fields_set
    assert built.model_dump_json(exclude_none=True) == expected.model_dump_json(exclude_none=True)
    assert built.model_dump(exclude_unset=True) == expected.model_dump(exclude_unset=True)
    assert built == expected
    # The same objects inside, new top-level containers, as validation gives.
    assert built.message is new.message
    for name in ("metadata", "tool_calls", "tool_results"):
        value = getattr(new, name)
        if value is not None:
            assert getattr(built, name) == value
            assert getattr(built, name) is not value
    # The record can be copied and changed like any other.
    assert built.model_copy(update={"seq": 4}).seq == 4
    assert MemoryEntry.model_validate_json(built.model_dump_json()) == built


def test_a_record_changed_after_it_was_made_is_validated_again() -> None:
    new = NewMemoryEntry.model_validate({"thread_id": "thread_1", "message": {"role": "user", "content": "a"}})
    new.message = {"role": "user", "content": "changed"}  # type: ignore[assignment]
    built = build_entry(new, "entry_1", None, 1, 1, clock.now())
    assert isinstance(built.message, Message)
    assert built.message.content == "changed"
