"""InMemoryAdapter beyond the shared contract: the per-thread bound."""

import json
import resource
import subprocess
import sys
import textwrap

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


LOOP_READER = textwrap.dedent(
    """
    import asyncio, json
    from cogitator_memory import InMemoryAdapter, unwrap

    async def main() -> None:
        async with InMemoryAdapter() as memory:
            thread = unwrap(await memory.create_thread("agent", None, "loop"))
            ids = []
            for text in ("a", "b", "c"):
                entry = unwrap(await memory.add_entry({"thread_id": "loop", "message": {"role": "user", "content": text}}))
                ids.append(entry.id)
            aside = unwrap(await memory.add_entry(
                {"thread_id": "loop", "parent_id": ids[0], "activate": False, "message": {"role": "user", "content": "d"}}
            ))
            memory._threads["loop"].nodes[ids[0]].parent_id = ids[2]  # damage: a -> c -> b -> a
            memory._threads["loop"].active_path = None
            calls = {
                "get_path": memory.get_path(thread_id="loop"),
                "get_path_filtered": memory.get_path(thread_id="loop", types=["label"]),
                "rewind": memory.rewind("loop", aside.id),
                "fork_thread": memory.fork_thread("loop", ids[1]),
            }
            out = {}
            for name, call in calls.items():
                result = await call
                out[name] = [result.success, result.error, result.error_type.__name__ if result.error_type else None]
            print(json.dumps(out), flush=True)

    asyncio.run(main())
    """
)


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))  # a walk that loops grows its list


def test_parent_links_that_loop_are_reported_not_walked_forever() -> None:
    # A walk that loops blocks its event loop for good, so it runs in a process of its own.
    proc = subprocess.run(
        [sys.executable, "-c", LOOP_READER], capture_output=True, text=True, timeout=30, preexec_fn=_limit_memory
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    for name, (success, error, error_type) in json.loads(proc.stdout).items():
        assert not success, f"{name} walked parent links that loop"
        assert error_type == "StoreUnavailableError", (name, error)
        assert "thread loop is damaged" in error, (name, error)
