"""The turns a recall index hands the retriever, as entries."""

from __future__ import annotations

from datetime import UTC, datetime

from cogitator_memory.index.records import RecallRecord
from cogitator_memory.recall.indexed import record_entry
from cogitator_memory.threads.records import MemoryEntry, Message


def _record(**fields: object) -> RecallRecord:
    base: dict[str, object] = {
        "id": "turn:e1",
        "kind": "turn",
        "source_id": "e1",
        "agent_id": "a",
        "user_id": "u",
        "thread_id": "t",
        "role": "user",
        "name": "Ana",
        "seq": 3,
        "text": "I moved to Porto",
        "said_at": datetime(2024, 1, 1, tzinfo=UTC),
        "status": "active",
    }
    return RecallRecord.model_validate({**base, **fields})


def test_a_records_entry_is_the_entry_validation_makes() -> None:
    # built without validation: equal to the validated entry, the same fields set, and a field
    # assigned afterwards is marked set on that entry alone
    record = _record()
    built = record_entry(record)
    validated = MemoryEntry(
        id="e1",
        thread_id="t",
        seq=3,
        token_count=0,
        created_at=record.said_at,
        message=Message(role="user", content="I moved to Porto", name="Ana"),
    )
    assert built == validated
    assert built.model_dump() == validated.model_dump()
    assert built.model_fields_set == validated.model_fields_set
    assert built.message is not None and validated.message is not None
    assert built.message.model_fields_set == validated.message.model_fields_set
    other = record_entry(record)
    built.metadata = {"seen": True}
    assert "metadata" in built.model_fields_set and "metadata" not in other.model_fields_set


def test_a_record_of_another_role_or_no_thread_is_an_assistants_turn_of_no_thread() -> None:
    entry = record_entry(_record(role="tool", thread_id=None, seq=None, name=None))
    assert entry.message is not None and entry.message.role == "assistant"
    assert (entry.thread_id, entry.seq, entry.message.name) == ("", 0, None)
