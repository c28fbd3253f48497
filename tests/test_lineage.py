"""Lineage: evidence checked against the entries it quotes."""

from cogitator_memory import (
    InMemoryAdapter,
    evidence_on_path,
    unwrap,
    verify_evidence,
    verify_evidence_in_memory,
)


async def test_verify_evidence_against_entries() -> None:
    async with InMemoryAdapter() as memory:
        thread = unwrap(await memory.create_thread("agent-1"))
        question = unwrap(
            await memory.add_entry(
                {"thread_id": thread.id, "message": {"role": "user", "content": "Plan a day\n in  Rome"}}
            )
        )
        rome = {"entry_id": question.id, "quote": "a day in Rome"}
        assert verify_evidence(rome, question) == "verified"
        assert verify_evidence({"entry_id": question.id, "quote": "a day in Paris"}, question) == "suggested"
        assert verify_evidence({"entry_id": question.id, "quote": "A DAY IN ROME"}, question) == "suggested"
        assert verify_evidence({"quote": "a day in Rome"}, question) == "suggested"
        assert verify_evidence({"entry_id": "entry_other", "quote": "a day in Rome"}, question) == "suggested"
        assert verify_evidence({"entry_id": question.id, "quote": "   "}, question) == "suggested"
        assert verify_evidence(rome, None) == "suggested"

        gone = unwrap(await memory.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": "gone"}}))
        unwrap(await memory.delete_entry(gone.id))
        checked = unwrap(
            await verify_evidence_in_memory(
                memory, [rome, {"entry_id": gone.id, "quote": "gone"}, {"quote": "no entry"}]
            )
        )
        assert [c.status for c in checked] == ["verified", "suggested", "suggested"]
        assert checked[0].evidence.entry_id == question.id

        path = unwrap(await memory.get_path(thread_id=thread.id))
        assert evidence_on_path([rome], {e.id for e in path})
        assert not evidence_on_path([rome, {"entry_id": gone.id, "quote": "gone"}], {e.id for e in path})
        assert not evidence_on_path([{"quote": "no entry"}], {e.id for e in path})


async def test_quotes_of_tool_calls_and_results_verify() -> None:
    async with InMemoryAdapter() as memory:
        thread = unwrap(await memory.create_thread("agent-1"))
        entry = unwrap(
            await memory.add_entry(
                {
                    "thread_id": thread.id,
                    "type": "tool_result",
                    "message": {"role": "tool", "content": "", "tool_call_id": "c1"},
                    "tool_results": [{"call_id": "c1", "result": "Flight LH 1234 departs at 9:40"}],
                }
            )
        )
        assert verify_evidence({"entry_id": entry.id, "quote": "departs at 9:40"}, entry) == "verified"


async def test_verify_in_memory_fails_when_the_store_fails() -> None:
    memory = InMemoryAdapter()  # never connected
    result = await verify_evidence_in_memory(memory, [{"entry_id": "entry_x", "quote": "q"}])
    assert not result.success and "not connected" in (result.error or "")
