"""ContextBuilder with the recent strategy: budgets, the run, the message order, compaction, branches."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from ctx_helpers import conversation, say

from cogitator_memory import unwrap
from cogitator_memory.context import ContextBuilder, ContextBuildError, read_compacted_history
from cogitator_memory.context.history import SUMMARY_HEADING
from cogitator_memory.errors import InvalidArgumentError
from cogitator_memory.result import MemoryResult, err, ok
from cogitator_memory.threads.base import BaseMemoryAdapter
from cogitator_memory.tokens import count_entry_tokens, count_tokens

WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau"


def builder(memory: BaseMemoryAdapter, **config: Any) -> ContextBuilder:
    config.setdefault("strategy", "recent")
    return ContextBuilder(config, {"memory_adapter": memory})


async def test_a_budget_comes_from_the_config_or_the_build(memory: BaseMemoryAdapter) -> None:
    thread = unwrap(await memory.create_thread("agent"))
    await conversation(memory, thread.id, [f"turn {i} {WORDS}" for i in range(100)])
    with pytest.raises(InvalidArgumentError, match="max_tokens"):
        await builder(memory).build(thread.id)
    small = await builder(memory).build(thread.id, max_tokens=400, reserve_tokens=0)
    large = await builder(memory, max_tokens=400).build(thread.id, max_tokens=1600, reserve_tokens=0)
    assert 0 < small.token_count <= 400 and small.token_count > 300
    assert 1200 < large.token_count <= 1600
    assert small.truncated and large.metadata.included_message_count > small.metadata.included_message_count


async def test_reserve_defaults_to_ten_percent_at_least_100(memory: BaseMemoryAdapter) -> None:
    thread = unwrap(await memory.create_thread("agent"))
    await conversation(memory, thread.id, [f"turn {i} {WORDS}" for i in range(120)])
    big = await builder(memory).build(thread.id, max_tokens=3000)  # reserve 300
    assert 2600 < big.token_count <= 2700
    small = await builder(memory).build(thread.id, max_tokens=600)  # reserve 100, not 60
    assert 400 < small.token_count <= 500
    own = await builder(memory, reserve_tokens=50).build(thread.id, max_tokens=600)
    assert 450 < own.token_count <= 550


async def test_the_system_prompt_is_always_kept_and_counted(memory: BaseMemoryAdapter) -> None:
    thread = unwrap(await memory.create_thread("agent"))
    await conversation(memory, thread.id, [f"turn {i} {WORDS}" for i in range(10)])
    prompt = "You are a careful assistant. " * 100
    context = await builder(memory).build(thread.id, system_prompt=prompt, max_tokens=300, reserve_tokens=0)
    assert context.messages[0].role == "system" and context.messages[0].text == prompt
    assert len(context.messages) == 1  # nothing else fits
    assert context.partitions["system"] > 300 and any("system prompt" in w for w in context.warnings)
    assert context.dropped.entries and context.truncated
    without = await builder(memory, include_system_prompt=False).build(
        thread.id, system_prompt=prompt, max_tokens=300, reserve_tokens=0
    )
    assert "system" not in without.partitions and without.messages[0].role != "system"


async def test_entries_are_counted_by_text_tool_arguments_and_images(memory: BaseMemoryAdapter) -> None:
    thread = unwrap(await memory.create_thread("agent"))
    await say(memory, thread.id, "user", "first question")
    big_args = {"query": " ".join([WORDS] * 20)}
    call = unwrap(
        await memory.add_entry(
            {
                "thread_id": thread.id,
                "token_count": 1,
                "message": {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [{"id": "c1", "name": "search", "arguments": big_args}],
                },
            }
        )
    )
    image = unwrap(
        await memory.add_entry(
            {
                "thread_id": thread.id,
                "token_count": 1,
                "message": {
                    "role": "user",
                    "content": [{"type": "image_url", "image_url": {"url": "https://x/a.png"}}],
                },
            }
        )
    )
    assert call.token_count == 1 and image.token_count == 1
    context = await builder(memory).build(thread.id, max_tokens=800, reserve_tokens=0)
    assert context.partitions["recent"] == count_entry_tokens(image) <= 800
    assert [e.id for e in context.entries] == [image.id]
    assert context.dropped.entries[-1].id == call.id


async def test_recent_keeps_an_unbroken_run_that_starts_with_a_question(memory: BaseMemoryAdapter) -> None:
    thread = unwrap(await memory.create_thread("agent"))
    q1 = await say(memory, thread.id, "user", "short question one")
    a1 = await say(memory, thread.id, "assistant", "short answer one")
    q2 = await say(memory, thread.id, "user", "a long question " + " ".join([WORDS] * 10))
    a2 = await say(memory, thread.id, "assistant", "answer two")
    q3 = await say(memory, thread.id, "user", "question three")
    a3 = await say(memory, thread.id, "assistant", "answer three")
    room = sum(count_entry_tokens(e) for e in (a2, q3, a3)) + 5
    context = await builder(memory).build(thread.id, max_tokens=room, reserve_tokens=0)
    # a2 fits but q2 does not: the run ends, and a2 (a reply without its question) goes too.
    assert [e.id for e in context.entries] == [q3.id, a3.id]
    # Every entry left out is listed, in conversation order: the store's page held them all.
    assert [e.id for e in context.dropped.entries] == [q1.id, a1.id, q2.id, a2.id]
    assert context.dropped.entries_complete and context.metadata.original_message_count == 6
    assert {b.source_id for b in context.dropped.blocks if b.partition == "recent"} == {q1.id, a1.id, q2.id, a2.id}
    reasons = {b.source_id: b.reason for b in context.dropped.blocks}
    assert reasons[a2.id] == "budget" and reasons[q2.id] == "oversized"  # q2 alone is larger than the room
    assert context.truncated
    # q1 and a1 would fit the room a2 left, but the run never skips an entry.
    assert q1.id not in {e.id for e in context.entries}


async def test_a_reply_whose_question_is_over_the_budget_is_not_sent_alone(memory: BaseMemoryAdapter) -> None:
    thread = unwrap(await memory.create_thread("agent"))
    await say(memory, thread.id, "user", "short question one")
    await say(memory, thread.id, "assistant", "short answer one")
    question = await say(memory, thread.id, "user", "a huge question " + " ".join([WORDS] * 40))
    reply = await say(memory, thread.id, "assistant", "a short reply")
    room = count_entry_tokens(reply) + 20
    assert count_entry_tokens(question) > room
    context = await builder(memory).build(thread.id, max_tokens=room, reserve_tokens=0)
    # Both or neither: the reply fits, its question does not, so neither is sent.
    assert context.entries == [] and [m.role for m in context.messages] == []
    reasons = {b.source_id: b.reason for b in context.dropped.blocks}
    assert reasons[reply.id] == "budget" and reasons[question.id] == "oversized"
    assert context.truncated and any("never sent without it" in w for w in context.warnings)
    # A long tool loop whose question is out of reach is not sent without it either.
    loop = unwrap(await memory.create_thread("agent"))
    await say(memory, loop.id, "user", "find it " + " ".join([WORDS] * 40))
    for n in range(3):
        await say(memory, loop.id, "assistant", "", tool_calls=[{"id": f"c{n}", "name": "find", "arguments": {}}])
        await say(memory, loop.id, "tool", f"result {n}", tool_call_id=f"c{n}", name="find")
    await say(memory, loop.id, "assistant", "Found it.")
    tooled = await builder(memory).build(loop.id, max_tokens=300, reserve_tokens=0)
    assert tooled.entries == [] and tooled.warnings
    # With room for the question, the pair is sent.
    both = await builder(memory).build(thread.id, max_tokens=count_entry_tokens(question) + room, reserve_tokens=0)
    assert [e.id for e in both.entries][-2:] == [question.id, reply.id] and not both.warnings


async def test_an_oversized_tool_result_stays_as_a_note(memory: BaseMemoryAdapter) -> None:
    thread = unwrap(await memory.create_thread("agent"))
    q = await say(memory, thread.id, "user", "look it up")
    call = await say(
        memory, thread.id, "assistant", "", tool_calls=[{"id": "call_9", "name": "fetch", "arguments": {"url": "x"}}]
    )
    result = unwrap(
        await memory.add_entry(
            {
                "thread_id": thread.id,
                "type": "tool_result",
                "message": {
                    "role": "tool",
                    "content": " ".join([WORDS] * 60),
                    "tool_call_id": "call_9",
                    "name": "fetch",
                },
            }
        )
    )
    answer = await say(memory, thread.id, "assistant", "Here is what I found.")
    context = await builder(memory).build(thread.id, max_tokens=250, reserve_tokens=0)
    assert [e.id for e in context.entries] == [q.id, call.id, result.id, answer.id]
    tool = next(m for m in context.messages if m.role == "tool")
    assert tool.tool_call_id == "call_9" and "omitted" in tool.text and len(tool.text) < 100
    assert {(b.source_id, b.reason) for b in context.dropped.blocks} == {(result.id, "oversized")}
    assert not context.truncated
    # The stored entry is untouched.
    stored = unwrap(await memory.get_entry(result.id))
    assert stored is not None and "omitted" not in stored.message.text  # type: ignore[union-attr]


async def test_message_order_breakpoints_and_memory_context(memory: BaseMemoryAdapter) -> None:
    thread = unwrap(await memory.create_thread("agent"))
    await conversation(memory, thread.id, ["Hi", "Hello!", "How are you?", "Fine.", "Plans today?", "Reading."])
    context = await builder(memory).build(
        thread.id,
        system_prompt="You are a helpful assistant.",
        pinned=["The user is on the Pro plan."],
        index="Files: notes.md",
        brief="Current date and time: Wednesday, October 21, 2026, 17:20.",
        current_input="What changed since yesterday?",
        max_tokens=4000,
    )
    roles = [m.role for m in context.messages]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user", "assistant", "user"]
    assert context.messages[0].text == "You are a helpful assistant.\n\nThe user is on the Pro plan.\n\nFiles: notes.md"
    marks = [i for i, m in enumerate(context.messages) if m.cache_breakpoint]
    assert marks == [4, 6]  # the last history message and the last message of the turn before
    assert context.memory_context == context.messages[-1].text
    assert context.memory_context.startswith("<memory_context>\nCurrent date and time")  # type: ignore[union-attr]
    assert "What changed" not in "".join(m.text for m in context.messages)
    assert set(context.partitions) == {"system", "pinned", "index", "brief", "recent", "final"}
    assert context.partitions["final"] == count_tokens("What changed since yesterday?") + 4
    assert context.token_count == sum(v for k, v in context.partitions.items() if k != "final")
    assert context.metadata.included_message_count == 6 and not context.truncated


async def test_history_is_read_through_the_compacted_view(memory: BaseMemoryAdapter) -> None:
    thread = unwrap(await memory.create_thread("agent"))
    old = await conversation(memory, thread.id, [f"old {i}" for i in range(6)])
    kept = await conversation(memory, thread.id, ["kept question", "kept answer"])
    compaction = unwrap(
        await memory.add_entry(
            {
                "thread_id": thread.id,
                "type": "compaction",
                "event": {"summary": "They talked about old things.", "first_kept_entry_id": kept[0].id},
            }
        )
    )
    after = await conversation(memory, thread.id, ["new question", "new answer"])
    b = builder(memory)
    context = await b.build(thread.id, max_tokens=2000)
    assert [e.id for e in context.entries] == [e.id for e in kept + after]
    assert context.messages[0].text == "Summary of the earlier conversation:\nThey talked about old things."
    assert context.partitions["summaries"] > 0 and not context.truncated
    assert not any(e.id in {o.id for o in old} for e in context.dropped.entries)
    # Many turns later the compaction is still in effect, found below what a budget reads.
    await conversation(memory, thread.id, [f"later {i} {WORDS}" for i in range(60)])
    later = await b.build(thread.id, max_tokens=600)
    assert later.messages[0].text.startswith("Summary of the earlier conversation:")
    assert later.truncated and later.metadata.original_message_count < 30
    later = await b.build(thread.id, max_tokens=600)  # now from what the builder remembers
    assert later.messages[0].text.startswith("Summary of the earlier conversation:")
    unwrap(await memory.delete_entry(compaction.id))
    gone = await b.build(thread.id, max_tokens=600)
    assert not gone.messages[0].text.startswith("Summary")
    # A fresh builder agrees.
    fresh = await builder(memory).build(thread.id, max_tokens=600)
    assert [m.text for m in fresh.messages] == [m.text for m in gone.messages]


async def test_a_compaction_without_first_kept_covers_everything_before_it(memory: BaseMemoryAdapter) -> None:
    thread = unwrap(await memory.create_thread("agent"))
    await conversation(memory, thread.id, ["a", "b"])
    unwrap(await memory.add_entry({"thread_id": thread.id, "type": "compaction", "event": {"summary": "S"}}))
    after = await conversation(memory, thread.id, ["c", "d"])
    context = await builder(memory).build(thread.id, max_tokens=1000)
    assert [e.id for e in context.entries] == [e.id for e in after]
    assert context.messages[0].text.endswith("\nS")


async def test_leaf_id_builds_from_that_branch(memory: BaseMemoryAdapter) -> None:
    thread = unwrap(await memory.create_thread("agent"))
    first = await conversation(memory, thread.id, ["q1", "a1", "q2", "a2"])
    unwrap(await memory.rewind(thread.id, first[1].id))
    other = await conversation(memory, thread.id, ["other q", "other a"])
    active = await builder(memory).build(thread.id, max_tokens=1000)
    assert [e.id for e in active.entries] == [first[0].id, first[1].id, *(e.id for e in other)]
    old = await builder(memory).build(thread.id, max_tokens=1000, leaf_id=first[3].id)
    assert [e.id for e in old.entries] == [e.id for e in first]
    stranger = unwrap(await memory.create_thread("agent"))
    theirs = await say(memory, stranger.id, "user", "not yours")
    with pytest.raises(InvalidArgumentError, match="leaf_id"):
        await builder(memory).build(thread.id, max_tokens=1000, leaf_id=theirs.id)
    with pytest.raises(InvalidArgumentError, match="leaf_id"):
        await builder(memory).build(thread.id, max_tokens=1000, leaf_id="entry_nope")


async def test_a_long_thread_is_read_only_as_far_as_the_budget_holds(memory: BaseMemoryAdapter) -> None:
    thread = unwrap(await memory.create_thread("agent"))
    for i in range(1500):
        await say(memory, thread.id, "user" if i % 2 == 0 else "assistant", f"message {i} {WORDS}")
    context = await builder(memory).build(thread.id, max_tokens=1000)
    assert context.truncated and not context.dropped.entries_complete
    # One page sized to the budget is read (and what it holds past the budget listed), not the thread.
    assert context.metadata.original_message_count < 120
    assert context.entries[-1].message.text.startswith("message 1499")  # type: ignore[union-attr]
    assert context.entries[0].message.role == "user"  # type: ignore[union-attr]


async def test_bad_input_names_the_argument(memory: BaseMemoryAdapter) -> None:
    thread = unwrap(await memory.create_thread("agent"))
    b = builder(memory)
    for kwargs, name in [
        ({"max_tokens": 0}, "max_tokens"),
        ({"max_tokens": -5}, "max_tokens"),
        ({"max_tokens": "10"}, "max_tokens"),
        ({"max_tokens": 100, "reserve_tokens": 100}, "reserve_tokens"),
        ({"max_tokens": 100, "reserve_tokens": -1}, "reserve_tokens"),
        ({"max_tokens": 100, "pinned": [1]}, r"pinned\[0\]"),
        ({"max_tokens": 100, "system_prompt": 5}, "system_prompt"),
        ({"max_tokens": 100, "time_zone": "Mars/Base"}, "time_zone"),
        ({"max_tokens": 100, "as_of": "yesterday"}, "as_of"),
    ]:
        with pytest.raises(InvalidArgumentError, match=name):
            await b.build(thread.id, **kwargs)
    with pytest.raises(InvalidArgumentError, match="thread_id"):
        await b.build("", max_tokens=100)
    for config, name in [
        ({"strategy": "newest"}, "strategy"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"max_tokens": 100, "reserve_tokens": 200}, "reserve_tokens"),
        ({"partitions": {"facts": {"share": 2}}}, "share"),
        ({"partitions": {"facts": {"share": 0.7}, "recall": {"share": 0.7}}}, "partitions"),
        ({"time_zone": "Nowhere/City"}, "time_zone"),
        ({"colour": "blue"}, "config"),
    ]:
        with pytest.raises(InvalidArgumentError, match=name):
            ContextBuilder(config, {"memory_adapter": memory})
    with pytest.raises(InvalidArgumentError, match="deps"):
        ContextBuilder({"strategy": "recent"}, {})
    with pytest.raises(InvalidArgumentError, match="deps"):
        ContextBuilder({"strategy": "recent"}, {"memory_adapter": memory, "vector_store": 1})


async def test_a_missing_thread_gives_an_empty_history_with_a_warning(memory: BaseMemoryAdapter) -> None:
    context = await builder(memory).build("thread_missing", max_tokens=500, system_prompt="Hi")
    assert [m.role for m in context.messages] == ["system"]
    assert any("not found" in w for w in context.warnings) and not context.errors


class Fact:
    def __init__(self, fact_id: str, content: str) -> None:
        self.id = fact_id
        self.content = content


class FactBook:
    """A fact source of the test: facts per (agent, user), or a failure."""

    def __init__(self, facts: dict[tuple[str, str | None], list[Fact]], fail: bool = False) -> None:
        self.facts = facts
        self.fail = fail
        self.calls: list[tuple[str, str | None]] = []

    async def get_facts(
        self, agent_id: str, *, user_id: str | None = None, limit: int = 100
    ) -> MemoryResult[Sequence[Fact]]:
        self.calls.append((agent_id, user_id))
        if self.fail:
            return err("fact store unreachable")
        return ok(self.facts.get((agent_id, user_id), [])[:limit])


async def test_facts_go_into_the_memory_context(memory: BaseMemoryAdapter) -> None:
    thread = unwrap(await memory.create_thread("concierge", {"user_id": "ana"}))
    await conversation(memory, thread.id, ["hello", "hi ana"])
    book = FactBook(
        {
            ("concierge", "ana"): [
                Fact("f1", "Ana lives in Lisbon."),
                Fact("f2", "Ana prefers window seats."),
                Fact("f3", "You are a concierge."),
            ]
        }
    )
    b = ContextBuilder(
        {"strategy": "recent", "include_facts": True, "max_tokens": 2000},
        {"memory_adapter": memory, "fact_adapter": book},
    )
    context = await b.build(thread.id, system_prompt="You are a concierge. Be brief.")
    assert book.calls == [("concierge", "ana")]  # agent and user from the thread
    assert [f.id for f in context.facts] == ["f1", "f2"]
    assert context.memory_context == (
        "<memory_context>\nKnown facts:\n- Ana lives in Lisbon.\n- Ana prefers window seats.\n</memory_context>"
    )
    assert {(b.source_id, b.reason) for b in context.dropped.blocks} == {("f3", "duplicate")}
    assert context.metadata.facts_included == 2 and context.partitions["facts"] > 0
    # Facts that do not fit their share are dropped, with the reason.
    many = FactBook({("concierge", "bo"): [Fact(f"f{i}", f"Fact number {i}: {WORDS}") for i in range(40)]})
    tight = ContextBuilder(
        {"strategy": "recent", "include_facts": True}, {"memory_adapter": memory, "fact_adapter": many}
    )
    squeezed = await tight.build(thread.id, agent_id="concierge", user_id="bo", max_tokens=1000)
    assert 0 < len(squeezed.facts) < 40 and len(squeezed.dropped.facts) == 40 - len(squeezed.facts)
    # A failing fact source is reported, not raised.
    broken = ContextBuilder(
        {"strategy": "recent", "include_facts": True, "max_tokens": 500},
        {"memory_adapter": memory, "fact_adapter": FactBook({}, fail=True)},
    )
    failed = await broken.build(thread.id)
    assert [e.source for e in failed.errors] == ["facts"] and isinstance(failed.errors[0], ContextBuildError)
    assert "unreachable" in failed.errors[0].message and failed.entries


async def test_compacted_history_of_a_path(memory: BaseMemoryAdapter) -> None:
    from cogitator_memory.context import compacted_history, read_compacted_history

    thread = unwrap(await memory.create_thread("agent"))
    first = await conversation(memory, thread.id, ["a", "b", "c"])
    unwrap(
        await memory.add_entry(
            {
                "thread_id": thread.id,
                "type": "compaction",
                "event": {"summary": "S1", "first_kept_entry_id": first[1].id},
            }
        )
    )
    second = await conversation(memory, thread.id, ["d", "e"])
    newest = unwrap(
        await memory.add_entry(
            {
                "thread_id": thread.id,
                "type": "compaction",
                "event": {"summary": "S2", "first_kept_entry_id": second[0].id},
            }
        )
    )
    unwrap(await memory.add_entry({"thread_id": thread.id, "type": "label", "event": {"label": "here"}}))
    last = await say(memory, thread.id, "user", "f")
    view = unwrap(await read_compacted_history(memory, thread_id=thread.id))
    assert [e.id for e in view] == [newest.id, second[0].id, second[1].id, last.id]
    # A first kept entry that is gone: the summary stands in for everything before it.
    unwrap(await memory.delete_entry(second[0].id))
    path = unwrap(await memory.get_path(thread_id=thread.id, types=["message", "tool_result", "compaction"]))
    assert [e.id for e in compacted_history(path)] == [newest.id, last.id]
    assert [e.id for e in compacted_history([e for e in path if e.type != "compaction"])] == [
        first[0].id,
        first[1].id,
        first[2].id,
        second[1].id,
        last.id,
    ]


def test_mark_turn_ends_marks_copies() -> None:
    from cogitator_memory import Message
    from cogitator_memory.context import mark_turn_ends

    history = [
        Message(role=r, content=str(i)) for i, r in enumerate(["user", "assistant", "user", "assistant", "user"])
    ]
    originals = list(history)
    mark_turn_ends(history)
    assert [m.cache_breakpoint for m in history] == [None, None, None, True, True]
    assert all(m.cache_breakpoint is None for m in originals)
    single = [Message(role="assistant", content="hi")]
    mark_turn_ends(single)
    assert single[0].cache_breakpoint is True
    mark_turn_ends([])


async def test_the_builder_agrees_with_the_view_when_the_first_kept_entry_is_gone(memory: BaseMemoryAdapter) -> None:
    thread = unwrap(await memory.create_thread("agent"))
    await conversation(memory, thread.id, ["a", "b"])
    kept = await conversation(memory, thread.id, ["c", "d"])
    unwrap(
        await memory.add_entry(
            {"thread_id": thread.id, "type": "compaction", "event": {"summary": "S", "first_kept_entry_id": kept[0].id}}
        )
    )
    last = await say(memory, thread.id, "user", "e")
    unwrap(await memory.delete_entry(kept[0].id))
    context = await builder(memory).build(thread.id, max_tokens=1000)
    assert [e.id for e in context.entries] == [last.id]
    assert context.messages[0].text.endswith("\nS")


async def test_a_build_hands_out_copies_that_change_nothing(memory: BaseMemoryAdapter) -> None:
    # The in-memory store lets the builder read its own entry objects (get_path(copy=False)):
    # everything a build hands out must still be the caller's own.
    thread = unwrap(await memory.create_thread("agent"))
    await conversation(memory, thread.id, [f"turn {i} {WORDS}" for i in range(40)])
    await say(memory, thread.id, "user", "look it up", name="ana")
    call = {"id": "call_1", "name": "fetch", "arguments": {"url": "x"}}
    unwrap(
        await memory.add_entry(
            {
                "thread_id": thread.id,
                "message": {"role": "assistant", "content": "", "tool_calls": [call]},
                "metadata": {"tags": ["a"]},
            }
        )
    )
    unwrap(
        await memory.add_entry(
            {
                "thread_id": thread.id,
                "type": "tool_result",
                "message": {"role": "tool", "content": "page", "tool_call_id": "call_1"},
                "tool_results": [{"call_id": "call_1", "name": "fetch", "result": {"status": 200}}],
            }
        )
    )
    await say(memory, thread.id, "assistant", "done")
    b = builder(memory, max_tokens=600, reserve_tokens=0)
    first = await b.build(thread.id, system_prompt="Be brief.")
    assert first.truncated and first.dropped.entries and first.entries
    before = [m.model_dump() for m in first.messages]
    path_before = unwrap(await memory.get_path(thread_id=thread.id, include_tool_calls=True))
    for message in first.messages:
        message.content = "changed"
        message.name = "mallory"
        for tool_call in message.tool_calls or []:
            tool_call.arguments["url"] = "changed"
    for entry in [*first.entries, *first.dropped.entries]:
        assert entry.message is not None
        entry.message.content = "changed"
        for tool_call in entry.message.tool_calls or []:
            tool_call.arguments["url"] = "changed"
        for result in entry.tool_results or []:
            result.result = "changed"
        if entry.metadata is not None:
            entry.metadata.setdefault("tags", []).append("changed")
    again = await b.build(thread.id, system_prompt="Be brief.")
    assert [m.model_dump() for m in again.messages] == before
    assert unwrap(await memory.get_path(thread_id=thread.id, include_tool_calls=True)) == path_before
    assert unwrap(await memory.get_path(thread_id=thread.id, include_tool_calls=True, copy=False)) == path_before


async def test_a_redacted_entry_is_counted_and_sent_as_redacted(memory: BaseMemoryAdapter) -> None:
    thread = unwrap(await memory.create_thread("agent"))
    entries = await conversation(memory, thread.id, [f"turn {i} {WORDS} {WORDS}" for i in range(6)])
    b = builder(memory, max_tokens=4000)
    first = await b.build(thread.id)
    unwrap(await memory.redact_entry(entries[-1].id, {"at": entries[-1].created_at}))
    again = await b.build(thread.id)
    assert WORDS in first.messages[-1].text and WORDS not in again.messages[-1].text
    assert again.partitions["recent"] < first.partitions["recent"]


async def test_a_fork_of_a_compacted_thread_builds_the_same_history(memory: BaseMemoryAdapter) -> None:
    thread = unwrap(await memory.create_thread("agent"))
    entries = await conversation(memory, thread.id, [f"message {i}" for i in range(6)])
    unwrap(
        await memory.add_entry(
            {
                "thread_id": thread.id,
                "type": "compaction",
                "event": {"summary": "they met", "first_kept_entry_id": entries[4].id},
            }
        )
    )
    last = await say(memory, thread.id, "user", "and then?")
    fork = unwrap(await memory.fork_thread(thread.id, last.id))
    b = builder(memory, max_tokens=4000)
    origin = await b.build(thread.id)
    copy = await b.build(fork.id)
    texts = [m.text for m in origin.messages]
    assert texts == [m.text for m in copy.messages]
    assert texts[1:] == ["message 4", "message 5", "and then?"] and "they met" in texts[0]


async def test_a_compaction_naming_an_entry_of_another_thread_covers_everything_before_it(
    memory: BaseMemoryAdapter,
) -> None:
    # As in a fork written before forks renamed the entries their events name.
    other = unwrap(await memory.create_thread("agent"))
    elsewhere = await say(memory, other.id, "user", "in another thread")
    thread = unwrap(await memory.create_thread("agent"))
    await conversation(memory, thread.id, [f"message {i}" for i in range(4)])
    unwrap(
        await memory.add_entry(
            {
                "thread_id": thread.id,
                "type": "compaction",
                "event": {"summary": "s", "first_kept_entry_id": elsewhere.id},
            }
        )
    )
    await say(memory, thread.id, "user", "after")
    context = await builder(memory, max_tokens=4000).build(thread.id)
    view = unwrap(await read_compacted_history(memory, thread_id=thread.id))
    assert [m.text for m in context.messages] == [f"{SUMMARY_HEADING}\ns", "after"]
    assert [e.type for e in view] == ["compaction", "message"], "the same view as the whole-branch reader"


async def test_a_thread_longer_than_what_was_read_says_its_left_out_list_is_not_whole(
    memory: BaseMemoryAdapter,
) -> None:
    thread = unwrap(await memory.create_thread("agent"))
    turns = await conversation(memory, thread.id, [f"turn {i} {WORDS}" for i in range(600)])
    context = await builder(memory).build(thread.id, max_tokens=300, reserve_tokens=0)
    sent = [e.id for e in context.entries]
    listed = [e.id for e in context.dropped.entries]
    assert context.truncated and not context.dropped.entries_complete
    # What is listed is the run just before what was sent, newest last, with nothing skipped.
    ids = [t.id for t in turns]
    assert listed and ids[ids.index(listed[0]) : ids.index(sent[-1]) + 1] == listed + sent
    assert context.metadata.original_message_count == len(listed) + len(sent) < 600
    assert context.dropped.token_count >= sum(count_entry_tokens(t) for t in turns if t.id in set(listed))


async def test_what_a_compaction_covers_is_not_listed_as_left_out(memory: BaseMemoryAdapter) -> None:
    thread = unwrap(await memory.create_thread("agent"))
    old = await conversation(memory, thread.id, [f"old {i}" for i in range(6)])
    kept = await conversation(memory, thread.id, [f"kept {i} {WORDS}" for i in range(4)])
    unwrap(
        await memory.add_entry(
            {
                "thread_id": thread.id,
                "type": "compaction",
                "event": {"summary": "They talked about old things.", "first_kept_entry_id": kept[0].id},
            }
        )
    )
    after = await conversation(memory, thread.id, [f"new {i} {WORDS}" for i in range(2)])
    room = sum(count_entry_tokens(e) for e in after) + 60  # the summary and the newest turns
    context = await builder(memory).build(thread.id, max_tokens=room, reserve_tokens=0)
    assert context.messages[0].text.startswith("Summary of the earlier conversation:")
    left = [e.id for e in context.dropped.entries]
    assert left and set(left) <= {e.id for e in kept + after}
    assert not {e.id for e in old} & set(left)
    assert context.dropped.entries_complete and left[0] == kept[0].id
