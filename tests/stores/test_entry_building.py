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


# --- InMemoryAdapter keeps plain entries as their fields, written as JSON on the first read ---

PLAIN_MESSAGES: list[dict[str, Any]] = [
    {"role": "user", "content": "Hello there"},
    {"role": "user", "content": "Hi", "name": "ana"},
    {"role": "tool", "content": "42", "tool_call_id": "call_1"},
    {"role": "assistant", "content": "noted", "cache_breakpoint": True},
    {"role": "system", "content": ""},
]


async def test_plain_entries_read_back_as_they_were_written() -> None:
    from cogitator_memory import InMemoryAdapter, unwrap

    async with InMemoryAdapter() as store:
        thread = unwrap(await store.create_thread("agent"))
        written = []
        for i, message in enumerate(PLAIN_MESSAGES):
            kind = "tool_result" if message["role"] == "tool" else "message"
            data: dict[str, Any] = {"thread_id": thread.id, "type": kind, "message": message}
            if i % 2:
                data["token_count"] = 5
            written.append(unwrap(await store.add_entry(data)))
        kept = store._threads[thread.id].nodes
        assert all(type(kept[e.id].packed) is tuple for e in written)  # no JSON written yet
        # Changing what add_entry returned changes nothing in the store.
        for entry in written:
            assert entry.message is not None
            entry.message.content = "changed"
            entry.message.name = "someone"
            entry.token_count = 999
        read = unwrap(await store.get_entries(thread_id=thread.id, limit=0, types="all"))
        assert [e.message.content for e in read if e.message] == [m["content"] for m in PLAIN_MESSAGES]
        for entry, message in zip(read, PLAIN_MESSAGES, strict=True):
            expected = MemoryEntry.model_validate(
                {
                    **entry.model_dump(exclude={"message", "token_count"}),
                    "message": message,
                    "token_count": entry.token_count,
                }
            )
            assert entry == expected
            assert entry.model_dump_json(exclude_none=True) == expected.model_dump_json(exclude_none=True)
            assert entry.token_count != 999
        assert all(type(kept[e.id].packed) is bytes for e in written)  # written once, on that read
        # Path, single reads and forks read them as well.
        path = unwrap(await store.get_path(thread_id=thread.id, types="all"))
        assert path == read
        assert unwrap(await store.get_entry(read[0].id)) == read[0]


async def test_packed_entries_survive_eviction_and_deletion() -> None:
    from cogitator_memory import InMemoryAdapter, unwrap

    async with InMemoryAdapter(max_entries=3) as store:
        thread = unwrap(await store.create_thread("agent"))
        ids = []
        for i in range(5):
            message = {"role": "user", "content": f"message {i}"}
            ids.append(unwrap(await store.add_entry({"thread_id": thread.id, "message": message})).id)
        unwrap(await store.delete_entry(ids[3]))  # moves the last entry under ids[2], never read before
        path = unwrap(await store.get_path(thread_id=thread.id))
        assert [e.message.content for e in path if e.message] == ["message 2", "message 4"]
        assert path[1].parent_id == ids[2]


async def test_entries_with_more_than_text_are_kept_as_json() -> None:
    from cogitator_memory import InMemoryAdapter, unwrap

    async with InMemoryAdapter() as store:
        thread = unwrap(await store.create_thread("agent"))
        for data in INPUTS:
            created = unwrap(await store.add_entry({"thread_id": thread.id, **data}))
            node = store._threads[thread.id].nodes[created.id]
            plain = created.message is not None and isinstance(created.message.content, str)
            plain = plain and not (created.metadata or created.tool_calls or created.tool_results)
            plain = plain and not (created.message and created.message.tool_calls) and created.metadata is None
            assert (type(node.packed) is tuple) == plain
            assert unwrap(await store.get_entry(created.id)) == created
