"""add_entry's record building: the direct construction of checked records gives what validation gives."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import pytest

from cogitator_memory import clock
from cogitator_memory.threads.records import ChangeEvent, MemoryEntry, Message, NewMemoryEntry
from cogitator_memory.threads.tree import build_entry
from cogitator_memory.tokens import count_entry_tokens

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


# --- An entry built without a count counts its tokens when first read -----------------------

_READS: dict[str, Any] = {
    "attribute": lambda e: e.token_count,
    "hasattr": lambda e: hasattr(e, "token_count"),
    "model_dump": lambda e: e.model_dump(),
    "model_dump_json": lambda e: e.model_dump_json(exclude_none=True),
    "dump": lambda e: e.dump(),
    "nested dump": lambda e: ChangeEvent(type="entry-added", thread_id="thread_1", entry=e).model_dump_json(),
    "equality": lambda e: e == e.model_copy(),
    "repr": repr,
    "str": str,
    "iteration": lambda e: dict(e),
    "model_copy": lambda e: e.model_copy(update={"seq": 9}).token_count,
    "pickle": lambda e: pickle.loads(pickle.dumps(e)).token_count,
    "deepcopy": lambda e: copy.deepcopy(e).token_count,
    "copy": lambda e: copy.copy(e).token_count,
}


@pytest.mark.parametrize("read", list(_READS))
@pytest.mark.parametrize("data", INPUTS)
def test_an_entry_built_without_a_count_is_the_counted_one_to_every_reader(data: dict[str, Any], read: str) -> None:
    new = NewMemoryEntry.model_validate(
        {"thread_id": "thread_1", **{k: v for k, v in data.items() if k != "token_count"}}
    )
    now = clock.now()
    counted = build_entry(new, "entry_1", "entry_0", 3, count_entry_tokens(new), now)
    lazy = build_entry(new, "entry_1", "entry_0", 3, None, now)
    assert counted.token_count > 0 or new.type == "label"  # a label costs nothing
    # What each reader sees is what it sees of the entry counted when made.
    assert _READS[read](lazy) == _READS[read](counted)
    # After any read (and its own count) the entry is the counted one, down to the order of its
    # fields (pickling and deep copies carry the entry uncounted; the copy counts itself).
    assert lazy.token_count == counted.token_count
    assert lazy.__dict__ == counted.__dict__
    assert list(lazy.__dict__) == list(counted.__dict__)
    assert lazy.model_fields_set == counted.model_fields_set


def test_an_entry_built_without_a_count_counts_once_and_keeps_what_is_set() -> None:
    new = NewMemoryEntry.model_validate({"thread_id": "thread_1", "message": {"role": "user", "content": "one two"}})
    lazy = build_entry(new, "entry_1", None, 1, None, clock.now())
    assert "token_count" not in lazy.__dict__  # not counted when made
    assert lazy.model_copy().__dict__ == lazy.__dict__  # copying counts (the copy has the count)
    assert lazy.__dict__["token_count"] == count_entry_tokens(new)
    other = build_entry(new, "entry_2", None, 2, None, clock.now())
    other.token_count = 3  # set before any read: kept, not counted over
    assert other.token_count == 3
    assert other.model_dump()["token_count"] == 3
    # Unknown attributes still fail as on any record, and the schema is the record's.
    with pytest.raises(AttributeError):
        _ = lazy.no_such_field  # type: ignore[attr-defined]
    schema = MemoryEntry.model_json_schema(mode="serialization")
    assert schema["properties"]["token_count"] == {"default": 0, "title": "Token Count", "type": "integer"}


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
