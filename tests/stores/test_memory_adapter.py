"""InMemoryAdapter beyond the shared contract: the per-thread bound."""

import pytest

from cogitator_memory import ChangeEvent, InMemoryAdapter, InvalidArgumentError, unwrap


async def _say(memory: InMemoryAdapter, thread_id: str, text: str, **extra: object) -> str:
    entry = unwrap(
        await memory.add_entry({"thread_id": thread_id, "message": {"role": "user", "content": text}, **extra})
    )
    return entry.id


async def test_a_full_thread_drops_other_branches_first_then_the_oldest() -> None:
    async with InMemoryAdapter(max_entries=5) as memory:
        deleted: list[ChangeEvent] = []
        memory.on_change(lambda ev: deleted.append(ev) if ev.type == "entry-deleted" else None)
        thread = unwrap(await memory.create_thread("agent"))
        other = unwrap(await memory.create_thread("agent"))
        e1 = await _say(memory, thread.id, "e1")
        await _say(memory, thread.id, "e2")
        await _say(memory, thread.id, "b1", parent_id=e1, activate=False)
        await _say(memory, thread.id, "e3")
        await _say(memory, thread.id, "e4")
        for i in range(5):
            await _say(memory, other.id, f"o{i}")  # another thread counts on its own
        await _say(memory, thread.id, "e5")
        texts = [e.message.text for e in unwrap(await memory.get_entries(thread_id=thread.id))]  # type: ignore[union-attr]
        assert texts == ["e1", "e2", "e3", "e4", "e5"], "the inactive branch goes first"
        await _say(memory, thread.id, "e6")
        path = unwrap(await memory.get_path(thread_id=thread.id))
        assert [e.message.text for e in path] == ["e2", "e3", "e4", "e5", "e6"]  # type: ignore[union-attr]
        assert path[0].parent_id is None, "the next entry becomes the root"
        assert [ev.entry.message.text for ev in deleted] == ["b1", "e1"]  # type: ignore[union-attr]
        assert len(unwrap(await memory.get_entries(thread_id=other.id))) == 5


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "10"])
def test_max_entries_is_checked(bad: object) -> None:
    with pytest.raises(InvalidArgumentError, match="max_entries"):
        InMemoryAdapter(max_entries=bad)  # type: ignore[arg-type]


async def test_calls_before_connect_fail_with_a_clear_message() -> None:
    memory = InMemoryAdapter()
    result = await memory.create_thread("agent")
    assert not result.success and "not connected" in (result.error or "")
    assert not (await memory.health_check()).success
    async with memory:
        assert (await memory.health_check()).success
    assert not (await memory.get_thread("x")).success, "a disconnected store refuses calls"
