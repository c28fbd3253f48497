"""The conversation ``cogitator-memory demo`` writes: a short trip plan with a branch and a fork.

Kept apart from the command so that the story can be read (and changed) in one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from ..result import MemoryResult
from ..threads.base import BaseMemoryAdapter
from ..threads.records import MemoryEntry, Thread
from .formats import CliError

T = TypeVar("T")

DEMO_THREAD = "demo-trip"
DEMO_FORK = "demo-trip-vatican"
DEMO_AGENT = "travel-agent"
#: The metadata key that marks a thread as the demo's own, so a second run may replace it.
DEMO_KEY = "demo"


@dataclass(frozen=True)
class DemoThreads:
    """What the demo wrote: the thread, its fork, the alternative reply, and whether it replaced an earlier run."""

    thread: Thread
    fork: Thread
    alternative: MemoryEntry
    replaced: bool


def _need(result: MemoryResult[T]) -> T:
    if not result.success:
        raise CliError(f"the demo could not write: {result.error}")
    return result.data  # type: ignore[return-value]


async def clear_previous_demo(store: BaseMemoryAdapter) -> bool:
    """Delete the threads of an earlier demo run; refuse to touch threads that are not the demo's."""
    found = []
    for thread_id in (DEMO_THREAD, DEMO_FORK):
        thread = _need(await store.get_thread(thread_id))
        if thread is None:
            continue
        if thread.metadata.get(DEMO_KEY) is not True:
            raise CliError(
                f"thread {thread_id} exists and was not written by the demo; "
                "run the demo on another file with --db PATH"
            )
        found.append(thread_id)
    for thread_id in found:
        _need(await store.delete_thread(thread_id))
    return bool(found)


async def write_demo(store: BaseMemoryAdapter) -> DemoThreads:
    """Write the demo conversation, replacing an earlier run of it.

    A travel assistant plans a day in Rome: a tool call and its result, a reply, an alternative
    reply kept on a branch of its own (``parent_id`` and ``activate=False``), a label event and
    a follow-up on the active branch, then a fork of the alternative that goes on by itself.
    """
    replaced = await clear_previous_demo(store)
    _need(
        await store.create_thread(
            DEMO_AGENT,
            {"title": "A day in Rome", "user_id": "ada", DEMO_KEY: True},
            thread_id=DEMO_THREAD,
        )
    )

    async def add(entry: dict[str, object]) -> MemoryEntry:
        return _need(await store.add_entry({"thread_id": DEMO_THREAD, **entry}))

    await add({"message": {"role": "system", "content": "You are a concise travel assistant."}})
    await add({"message": {"role": "user", "content": "Plan a day in Rome for me on Saturday."}})
    await add(
        {
            "message": {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": "call_weather", "name": "get_weather", "arguments": {"city": "Rome", "day": "Saturday"}}
                ],
            }
        }
    )
    weather = await add(
        {
            "type": "tool_result",
            "message": {
                "role": "tool",
                "name": "get_weather",
                "tool_call_id": "call_weather",
                "content": '{"forecast": "sunny", "high_c": 24}',
            },
        }
    )
    plan = await add(
        {
            "message": {
                "role": "assistant",
                "content": "Saturday looks sunny, 24 °C. Start at the Colosseum at 9, walk through the "
                "Forum, and end the day in Trastevere.",
            }
        }
    )
    alternative = await add(
        {
            "parent_id": weather.id,
            "activate": False,
            "message": {
                "role": "assistant",
                "content": "Sunny and 24 °C: see the Vatican Museums at 8 to beat the queues, then "
                "St Peter's, and picnic in Villa Borghese.",
            },
        }
    )
    await add({"type": "label", "event": {"label": "plan v1", "target_id": plan.id}})
    await add({"message": {"role": "user", "content": "Great. Where should we have dinner?"}})
    await add(
        {
            "message": {
                "role": "assistant",
                "content": "Da Enzo al 29 in Trastevere, where the walk ends. Book ahead for the cacio e pepe.",
            }
        }
    )
    _need(await store.fork_thread(DEMO_THREAD, alternative.id, DEMO_FORK))
    # a fork copies its origin's metadata: a title of its own tells the two apart in lists
    _need(await store.update_thread(DEMO_FORK, {"title": "A day in Rome: the Vatican plan"}))
    for message in (
        {"role": "user", "content": "Let's do the Vatican plan instead. Which tickets do I need?"},
        {"role": "assistant", "content": "A timed Vatican Museums ticket, booked online; St Peter's is free."},
    ):
        _need(await store.add_entry({"thread_id": DEMO_FORK, "message": message}))
    thread = _need(await store.get_thread(DEMO_THREAD))
    fork = _need(await store.get_thread(DEMO_FORK))
    if thread is None or fork is None:  # written just above
        raise CliError("the demo threads disappeared while they were written")
    return DemoThreads(thread=thread, fork=fork, alternative=alternative, replaced=replaced)


__all__ = ["DEMO_AGENT", "DEMO_FORK", "DEMO_KEY", "DEMO_THREAD", "DemoThreads", "clear_previous_demo", "write_demo"]
