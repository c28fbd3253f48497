"""Records, results and the exception tree."""

from datetime import UTC, datetime, timedelta, timezone

import pytest
from pydantic import ValidationError

from cogitator_memory import (
    CompactionEvent,
    ConflictError,
    EntryRedaction,
    InvalidArgumentError,
    LabelEvent,
    MemoryEntry,
    MemoryStoreError,
    Message,
    MissingDriverError,
    NewMemoryEntry,
    NotFoundError,
    err,
    ok,
    unwrap,
)
from cogitator_memory.threads.records import copy_entry, copy_message


def test_ok_and_unwrap() -> None:
    result = ok([1, 2])
    assert result.success and result.data == [1, 2] and result.error is None
    assert unwrap(result) == [1, 2]
    assert bool(result)


def test_unwrap_raises_the_class_the_failure_came_from() -> None:
    failed = err(NotFoundError("thread not found: t1"))
    assert not failed and failed.error == "thread not found: t1"
    with pytest.raises(NotFoundError, match="thread not found: t1"):
        unwrap(failed)
    with pytest.raises(MemoryStoreError, match="plain message"):
        err("plain message").unwrap()
    with pytest.raises(ConflictError):
        unwrap(err("taken", ConflictError))


def test_exception_tree_does_not_shadow_builtins() -> None:
    assert issubclass(InvalidArgumentError, ValueError) and issubclass(InvalidArgumentError, MemoryStoreError)
    assert issubclass(NotFoundError, LookupError)
    missing = MissingDriverError("RedisAdapter", "redis", "redis")
    assert 'pip install "cogitator-memory[redis]"' in str(missing)
    assert missing.install_command == 'pip install "cogitator-memory[redis]"'
    assert str(InvalidArgumentError("limit", "must be >= 0")) == "invalid argument 'limit': must be >= 0"
    import builtins

    import cogitator_memory

    for name in cogitator_memory.__all__:
        assert not hasattr(builtins, name), f"{name} shadows a builtin"


def test_message_shapes() -> None:
    message = Message.model_validate(
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
            ],
        }
    )
    assert message.text == "look"
    assert Message(role="assistant", content="plain").text == "plain"
    with pytest.raises(ValidationError):
        Message.model_validate({"role": "robot", "content": "x"})
    with pytest.raises(ValidationError):
        Message.model_validate({"role": "user", "content": [{"type": "video", "url": "x"}]})
    with pytest.raises(ValidationError):
        Message.model_validate({"role": "assistant", "tool_calls": [{"id": "", "name": "f"}]})


def test_entry_shapes_follow_their_type() -> None:
    label = NewMemoryEntry.model_validate({"thread_id": "t", "type": "label", "event": {"label": "here"}})
    assert isinstance(label.event, LabelEvent)
    compaction = NewMemoryEntry.model_validate(
        {"thread_id": "t", "type": "compaction", "event": {"summary": "s", "first_kept_entry_id": "e1"}}
    )
    assert isinstance(compaction.event, CompactionEvent)
    for bad in (
        {"thread_id": "t", "type": "label"},
        {"thread_id": "t", "type": "label", "event": {"summary": "wrong payload"}},
        {"thread_id": "t"},
        {"thread_id": "t", "message": {"role": "user", "content": "x"}, "event": {"label": "x"}},
        {"thread_id": "t", "type": "bogus", "message": {"role": "user", "content": "x"}},
    ):
        with pytest.raises(ValidationError):
            NewMemoryEntry.model_validate(bad)


def test_dump_leaves_out_unset_fields() -> None:
    entry = MemoryEntry(
        id="e",
        thread_id="t",
        seq=1,
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
        message=Message(role="user", content="x"),
    )
    dumped = entry.dump()
    assert "metadata" not in dumped and "event" not in dumped and "parent_id" not in dumped
    assert dumped["message"] == {"role": "user", "content": "x"}
    assert MemoryEntry.model_validate_json(entry.dump_json()) == entry


def test_redaction_time_is_utc() -> None:
    local = datetime(2026, 1, 1, 12, 0, tzinfo=timezone(timedelta(hours=2)))
    assert EntryRedaction(at=local).at == datetime(2026, 1, 1, 10, 0, tzinfo=UTC)
    assert EntryRedaction(at=datetime(2026, 1, 1)).at.tzinfo is not None


def test_copy_message_shares_nothing_mutable() -> None:
    plain = Message(role="user", content="hello", name="ana")
    copied = copy_message(plain)
    assert copied == plain and copied is not plain
    assert copied.model_dump(exclude_unset=True) == plain.model_dump(exclude_unset=True)
    copied.content = "changed"
    copied.cache_breakpoint = True
    assert plain.content == "hello" and plain.cache_breakpoint is None
    assert "cache_breakpoint" not in plain.model_fields_set

    rich = Message.model_validate(
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "see"}],
            "tool_calls": [{"id": "c1", "name": "fetch", "arguments": {"url": "x"}}],
        }
    )
    deep = copy_message(rich)
    assert deep == rich
    deep.tool_calls[0].arguments["url"] = "y"  # type: ignore[index]
    deep.content[0].text = "changed"  # type: ignore[union-attr,index]
    assert rich.tool_calls[0].arguments == {"url": "x"}  # type: ignore[index]
    assert rich.text == "see"


def test_copy_entry_shares_nothing() -> None:
    entry = MemoryEntry.model_validate(
        {
            "id": "e1",
            "thread_id": "t1",
            "seq": 1,
            "created_at": "2026-01-01T00:00:00Z",
            "message": {"role": "user", "content": "hi"},
            "metadata": {"tags": ["a"]},
        }
    )
    copied = copy_entry(entry)
    assert copied == entry
    copied.metadata["tags"].append("b")  # type: ignore[index]
    copied.message.content = "changed"  # type: ignore[union-attr]
    assert entry.metadata == {"tags": ["a"]} and entry.message.content == "hi"  # type: ignore[union-attr]
