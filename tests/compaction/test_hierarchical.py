"""Hierarchical compaction on every built-in thread store, through a chat model over real HTTP."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from typing import Any

import pytest

from cogitator_memory import unwrap
from cogitator_memory.compaction import CompactionError, CompactionService
from cogitator_memory.compaction.hierarchical import HANDOFF_SECTIONS, atom_id
from cogitator_memory.compaction.records import CompactionLevels
from cogitator_memory.context.history import read_compacted_history
from cogitator_memory.errors import InvalidArgumentError
from cogitator_memory.models import OpenAIChatClient, SummarizeOptions, summarize_fn
from cogitator_memory.testing.scripted_server import (
    RecordedRequest,
    ScriptedChatRequest,
    ScriptedResponse,
    ScriptedServer,
    openai_chat_handler,
)
from cogitator_memory.threads.base import BaseMemoryAdapter
from cogitator_memory.threads.records import CompactionEvent, MemoryEntry, Message

PATH = "/v1/chat/completions"


def number_of(chat: ScriptedChatRequest, phrase: str) -> int | None:
    """The number of the transcript message holding ``phrase``, as the model would read it."""
    transcript = next(text for role, text in chat.messages if role == "user")
    for line in transcript.splitlines():
        match = re.match(r"\[(\d+)\] ", line)
        if match and phrase in line:
            return int(match.group(1))
    return None


def atom(chat: ScriptedChatRequest, kind: str, text: str, quote: str, **extra: Any) -> dict[str, Any] | None:
    number = number_of(chat, quote)
    if number is None:
        return None
    return {"kind": kind, "text": text, "evidence": [{"message": number, "quote": quote}], **extra}


async def say(memory: BaseMemoryAdapter, thread_id: str, role: str, text: str, **more: Any) -> MemoryEntry:
    return unwrap(await memory.add_entry({"thread_id": thread_id, "message": {"role": role, "content": text, **more}}))


async def everything(memory: BaseMemoryAdapter, thread_id: str) -> list[tuple[str, str]]:
    return [(e.id, e.type) for e in unwrap(await memory.get_entries(thread_id, types="all"))]


async def trip(memory: BaseMemoryAdapter, thread_id: str) -> None:
    await say(memory, thread_id, "user", "Please plan the Porto trip.\nTODO: book the train to Porto")
    await say(
        memory,
        thread_id,
        "assistant",
        "Writing the notes.",
        tool_calls=[{"id": "c1", "name": "write_file", "arguments": {"path": "notes/porto.md", "text": "x"}}],
    )
    await say(memory, thread_id, "tool", "Error: disk full", tool_call_id="c1", name="write_file")
    await say(memory, thread_id, "user", "We decided to travel on May 3. Ana must have a window seat.")
    await say(memory, thread_id, "assistant", "Noted. Which hotel do you prefer?")
    await say(memory, thread_id, "user", "Ana's budget is 900 euros.")
    await say(memory, thread_id, "assistant", "Understood, 900 euros in all.")


def first_answer(chat: ScriptedChatRequest) -> str:
    atoms = [
        atom(chat, "decision", "Travel on May 3", "We decided to travel on May 3"),
        atom(chat, "constraint", "Ana must have a window seat", "Ana must have a window seat"),
        atom(chat, "thread", "Which hotel does Ana prefer?", "Which hotel do you prefer?"),
        atom(chat, "fact", "The trip is to Porto", "Please plan the Porto trip"),
        atom(chat, "fact", "Ana lives in Lisbon", "Ana lives in Lisbon"),  # no such words: not sent
        # a quote that is not in its message: kept, not verified, marked in the handoff
        {"kind": "fact", "text": "Ana likes trains", "evidence": [{"message": 1, "quote": "Ana adores trains"}]},
        {"kind": "mood", "text": "cheerful", "evidence": []},
    ]
    kept = [a for a in atoms if a is not None]
    return "Here are the atoms:\n```json\n" + json.dumps([*kept, "not an atom"]) + "\n```"


HANDOFF_1 = """\
Open tasks:
- book the train to Porto

Constraints:
- Ana must have a window seat

Decisions:
- Travel on May 3

Unresolved errors:
- write_file failed: Error: disk full

Open questions:
- Which hotel does Ana prefer?

Files:
- notes/porto.md

Facts:
- The trip is to Porto
- Ana likes trains (unverified: its quote was not found in the conversation)

Done:
- none"""


async def test_handoff_holds_checked_atoms_in_fixed_order(
    memory: BaseMemoryAdapter, server: ScriptedServer, client: OpenAIChatClient
) -> None:
    server.fallback(PATH, openai_chat_handler(first_answer))
    thread = unwrap(await memory.create_thread("concierge"))
    await trip(memory, thread.id)
    before = await everything(memory, thread.id)
    service = CompactionService(memory, summarize_fn(client))

    result = await service.compact(
        thread.id, strategy="hierarchical", message_threshold=5, keep_recent=2, summary_prompt="Mind the budget."
    )

    assert result.compacted and result.strategy == "hierarchical" and result.covered == 5
    assert (result.original_messages, result.compacted_messages) == (7, 3)
    view = unwrap(await read_compacted_history(memory, thread_id=thread.id))
    event = view[0].event
    assert isinstance(event, CompactionEvent) and event.strategy == "hierarchical"
    assert event.summary == HANDOFF_1
    assert [line for line in event.summary.splitlines() if line.endswith(":")] == [f"{s}:" for s in HANDOFF_SECTIONS]
    levels = CompactionLevels.model_validate(event.model_extra["levels"])  # type: ignore[index]
    assert levels.saga is None and levels.arcs == [] and len(levels.chapters) == 1
    chapter = levels.chapters[0]
    assert chapter.from_ == before[0][0] and chapter.to == before[4][0]
    # the atom whose quote is not in its message is kept, marked, as the spec's atoms are
    assert [a.text for a in chapter.atoms if not a.verified] == ["Ana likes trains"]
    assert {a.source for a in chapter.atoms if a.kind in ("file", "error")} == {"entries"}
    assert [e.id for e in view[1:]] == [before[5][0], before[6][0]]
    assert await everything(memory, thread.id) == [*before, (view[0].id, "compaction")]  # nothing deleted

    (request,) = server.requests_to(PATH)
    body = request.json()
    system = body["messages"][0]["content"]
    assert system.startswith("You read one chapter") and system.endswith("Mind the budget.")
    transcript = body["messages"][1]["content"]
    assert transcript.splitlines()[0] == "[1] user: Please plan the Porto trip."
    assert "Ana's budget" not in transcript  # the kept tail is not read


async def test_open_items_close_only_with_holding_evidence(
    memory: BaseMemoryAdapter, server: ScriptedServer, client: OpenAIChatClient
) -> None:
    server.fallback(PATH, openai_chat_handler(first_answer))
    thread = unwrap(await memory.create_thread("concierge"))
    await trip(memory, thread.id)
    service = CompactionService(memory, summarize_fn(client))
    await service.compact(thread.id, strategy="hierarchical", message_threshold=5, keep_recent=2)

    task = atom_id("task", "book the train to Porto")
    question = atom_id("thread", "Which hotel does Ana prefer?")
    decision = atom_id("decision", "Travel on May 3")
    seen_open: list[str] = []

    def closing(chat: ScriptedChatRequest) -> str:
        seen_open.extend(re.findall(r"^- \[([a-z]+-[0-9a-f]+)\]", chat.system, re.MULTILINE))
        atoms = [
            atom(chat, "task", "x", "I booked the train", closes=task),
            atom(chat, "thread", "x", "The Grand Hotel, please", closes=question),
            {"closes": decision, "evidence": [{"message": 1, "quote": "we cancelled the May 3 plan"}]},
            atom(chat, "fact", "Budget is 900 euros", "budget is 900 euros"),
            atom(chat, "fact", "Ana stays at the Grand Hotel", "The Grand Hotel, please"),
        ]
        return json.dumps([a for a in atoms if a is not None])

    server.fallback(PATH, openai_chat_handler(closing))
    await say(memory, thread.id, "user", "I booked the train this morning.")
    await say(memory, thread.id, "assistant", "Great. Anything else?")
    await say(memory, thread.id, "user", "The Grand Hotel, please.")
    await say(memory, thread.id, "assistant", "Booked.")
    result = await service.compact(thread.id, strategy="hierarchical", message_threshold=5, keep_recent=1)

    assert result.compacted
    assert {task, question, decision} <= set(seen_open)
    view = unwrap(await read_compacted_history(memory, thread_id=thread.id))
    summary = view[0].event.summary  # type: ignore[union-attr]
    assert summary.startswith("Open tasks:\n- none\n\nConstraints:\n- Ana must have a window seat")
    assert "Decisions:\n- Travel on May 3\n" in summary  # its closing quote does not hold
    assert "Open questions:\n- none" in summary
    assert (
        "Facts:\n- The trip is to Porto\n- Ana likes trains (unverified: its quote was not found in the conversation)"
        "\n- Budget is 900 euros\n- Ana stays at the Grand Hotel" in summary
    )
    assert summary.endswith("Done:\n- task: book the train to Porto\n- thread: Which hotel does Ana prefer?")
    levels = CompactionLevels.model_validate(view[0].event.model_extra["levels"])  # type: ignore[union-attr,index]
    assert len(levels.chapters) == 2
    # only the entries after the first compaction were read again
    second = server.requests_to(PATH)[-1].json()["messages"][1]["content"]
    assert "Please plan the Porto trip" not in second and "Ana's budget is 900 euros" in second


async def test_chapters_fold_into_arcs_and_a_saga_without_a_model(
    memory: BaseMemoryAdapter, server: ScriptedServer, client: OpenAIChatClient
) -> None:
    def one_fact(chat: ScriptedChatRequest) -> str:
        transcript = next(text for role, text in chat.messages if role == "user")
        lines = [line for line in transcript.split("(this chapter)")[-1].splitlines() if line.startswith("[")]
        number, text = re.match(r"\[(\d+)\] user: (step \d+)", lines[0]).groups()  # type: ignore[union-attr]
        return json.dumps(
            [{"kind": "fact", "text": f"did {text}", "evidence": [{"message": int(number), "quote": text}]}]
        )

    server.fallback(PATH, openai_chat_handler(one_fact))
    thread = unwrap(await memory.create_thread("concierge"))
    for i in range(24):
        await say(memory, thread.id, "user", f"step {i} " + "word " * 40)
        await say(memory, thread.id, "assistant", "ok " * 30)
    await say(memory, thread.id, "user", "TODO: send the report")
    await say(memory, thread.id, "assistant", "Will do.")
    service = CompactionService(memory, summarize_fn(client))

    result = await service.compact(
        thread.id,
        strategy="hierarchical",
        message_threshold=10,
        keep_recent_tokens=10,
        chapter_tokens=100,
        chapter_concurrency=3,
        chapters_per_arc=2,
        arcs_per_saga=2,
    )

    calls = server.requests_to(PATH)
    assert len(calls) == 24  # one chapter per step (the task line joins the last one)
    assert result.covered == 50
    view = unwrap(await read_compacted_history(memory, thread_id=thread.id))
    event = view[0].event
    levels = CompactionLevels.model_validate(event.model_extra["levels"])  # type: ignore[union-attr,index]
    assert levels.saga is not None and len(levels.arcs) <= 2 and len(levels.chapters) <= 2
    entries = unwrap(await memory.get_entries(thread.id))
    assert levels.chapters[-1].to == entries[-1].id and levels.saga.from_ == entries[0].id
    facts = [f"did step {i}" for i in range(24)]
    assert event.summary.split("Facts:\n")[1].split("\n\n")[0] == "\n".join(f"- {f}" for f in facts)  # type: ignore[union-attr]
    assert "Open tasks:\n- send the report\n" in event.summary  # type: ignore[union-attr]
    assert len(view) == 1  # keep_recent_tokens=10 keeps no whole turn here
    sent = [r.json()["messages"][1]["content"] for r in calls]  # in any order: three at a time
    first = [t for t in sent if not t.startswith("(the end of the previous chapter, for context)\n[1] ")]
    assert len(first) == 1 and first[0].startswith("[1] user: step 0 ")


async def test_cut_answer_is_continued_after_its_last_atom(
    memory: BaseMemoryAdapter, server: ScriptedServer, client: OpenAIChatClient
) -> None:
    def answer(chat: ScriptedChatRequest) -> str:
        if "cut off" in chat.last_user_text:
            return json.dumps([atom(chat, "fact", "Budget is 900 euros", "budget is 900 euros")])
        whole = json.dumps(atom(chat, "decision", "Travel on May 3", "We decided to travel on May 3"))
        return f'[{whole}, {{"kind": "fact", "text": "Budg'

    server.fallback(PATH, openai_chat_handler(answer))
    thread = unwrap(await memory.create_thread("concierge"))
    await trip(memory, thread.id)
    await say(memory, thread.id, "user", "Go on.")
    service = CompactionService(memory, summarize_fn(client))

    result = await service.compact(thread.id, strategy="hierarchical", message_threshold=5, keep_recent=1)

    assert result.compacted
    calls = server.requests_to(PATH)
    assert len(calls) == 2
    follow = calls[1].json()["messages"]
    assert follow[-1]["role"] == "user" and "after 1 atom" in follow[-1]["content"]
    summary = unwrap(await read_compacted_history(memory, thread_id=thread.id))[0].event.summary  # type: ignore[union-attr]
    assert "Decisions:\n- Travel on May 3\n" in summary and "Facts:\n- Budget is 900 euros\n" in summary


async def test_refusals_leave_the_thread_as_it_was(
    memory: BaseMemoryAdapter, server: ScriptedServer, client: OpenAIChatClient
) -> None:
    thread = unwrap(await memory.create_thread("concierge"))
    await trip(memory, thread.id)
    before = await everything(memory, thread.id)
    service = CompactionService(memory, summarize_fn(client), timeout=5)

    server.fallback(PATH, openai_chat_handler("I cannot find anything worth keeping."))
    with pytest.raises(CompactionError, match="no JSON array of atoms in 3 answers"):
        await service.compact(thread.id, strategy="hierarchical", message_threshold=5, keep_recent=2)
    calls = server.requests_to(PATH)
    assert len(calls) == 3
    assert calls[2].json()["messages"][-1]["content"].startswith("That answer held no JSON array.")
    assert await everything(memory, thread.id) == before

    server.enqueue(PATH, status=500, json={"error": {"message": "overloaded"}})
    with pytest.raises(CompactionError, match="the summarizer failed"):
        await service.compact(thread.id, strategy="hierarchical", message_threshold=5, keep_recent=2)
    assert await everything(memory, thread.id) == before

    # a hierarchical compaction whose levels cannot be read: its open items would be lost
    unwrap(
        await memory.add_entry(
            {
                "thread_id": thread.id,
                "type": "compaction",
                "event": CompactionEvent(
                    summary="Open tasks:\n- book the train", strategy="hierarchical", levels={"chapters": "lost"}
                ),
            }
        )
    )
    await say(memory, thread.id, "user", "More words. " * 5)
    after_bad = await everything(memory, thread.id)
    server.fallback(PATH, openai_chat_handler("[]"))
    with pytest.raises(CompactionError, match="open items would be lost"):
        await service.compact(thread.id, strategy="hierarchical", message_threshold=1, keep_recent=0)
    assert await everything(memory, thread.id) == after_bad


async def test_hierarchical_arguments_are_checked(memory: BaseMemoryAdapter, client: OpenAIChatClient) -> None:
    thread = unwrap(await memory.create_thread("concierge"))
    service = CompactionService(memory, summarize_fn(client))
    for name, value in (
        ("chapter_tokens", 0),
        ("chapter_concurrency", -1),
        ("chapters_per_arc", True),
        ("arcs_per_saga", "4"),
        ("keep_recent_tokens", -5),
    ):
        with pytest.raises(InvalidArgumentError) as caught:
            await service.compact(thread.id, strategy="hierarchical", message_threshold=1, **{name: value})
        assert caught.value.argument == name  # type: ignore[attr-defined]
    with pytest.raises(InvalidArgumentError) as caught:
        await service.compact(thread.id, strategy="summary", message_threshold=1, keep_recent_tokens=100)
    assert caught.value.argument == "keep_recent_tokens"  # type: ignore[attr-defined]


async def test_an_earlier_plain_summary_is_read_as_the_first_message(
    memory: BaseMemoryAdapter, server: ScriptedServer, client: OpenAIChatClient
) -> None:
    thread = unwrap(await memory.create_thread("concierge"))
    await trip(memory, thread.id)
    service = CompactionService(memory, summarize_fn(client))
    server.fallback(PATH, openai_chat_handler("Ana goes to Porto on May 3 and still needs a hotel."))
    await service.compact(thread.id, message_threshold=5, keep_recent=2)

    def from_summary(chat: ScriptedChatRequest) -> str:
        found = atom(chat, "thread", "Which hotel?", "still needs a hotel")
        return json.dumps([found] if found else [])

    server.fallback(PATH, openai_chat_handler(from_summary))
    await say(memory, thread.id, "user", "Let us talk about food.")
    result = await service.compact(thread.id, strategy="hierarchical", message_threshold=3, keep_recent=1)

    assert result.compacted
    transcript = server.requests_to(PATH)[-1].json()["messages"][1]["content"]
    assert transcript.startswith("[1] earlier summary: Ana goes to Porto on May 3")
    summary = unwrap(await read_compacted_history(memory, thread_id=thread.id))[0].event.summary  # type: ignore[union-attr]
    assert "Open questions:\n- Which hotel?\n" in summary


def test_folding_keeps_open_items_and_reopens_on_newer_word() -> None:
    from cogitator_memory.compaction.hierarchical import SAGA_KEPT, fold, handoff_text, open_items_of
    from cogitator_memory.compaction.records import CompactionAtom, CompactionNode

    def made(kind: str, text: str, status: str = "open") -> CompactionAtom:
        return CompactionAtom(id=atom_id(kind, text), kind=kind, status=status, text=text, verified=True)  # type: ignore[arg-type]

    chapters = [
        CompactionNode.model_validate(
            {"from": f"e{i}", "to": f"e{i}", "atoms": [made("fact", f"fact {i}.{j}") for j in range(30)]}
        )
        for i in range(20)
    ]
    chapters[0] = chapters[0].model_copy(update={"atoms": [made("task", "ship it"), made("thread", "why?")]})
    chapters[5] = chapters[5].model_copy(update={"atoms": [made("task", "ship it", "closed")]})
    chapters[9] = chapters[9].model_copy(update={"atoms": [made("task", "Ship it")]})  # said open again
    levels = CompactionLevels()
    for chapter in chapters:
        levels = fold(CompactionLevels(saga=levels.saga, arcs=levels.arcs, chapters=[*levels.chapters, chapter]), 2, 2)

    assert levels.saga is not None and len(levels.arcs) <= 2 and len(levels.chapters) <= 2
    assert (levels.saga.from_, levels.chapters[-1].to) == ("e0", "e19")
    assert sorted(a.text for a in open_items_of(levels)) == ["Ship it", "why?"]
    assert sum(a.kind == "fact" for a in levels.saga.atoms) == SAGA_KEPT
    text = handoff_text(levels)
    assert text.startswith("Open tasks:\n- Ship it\n\nConstraints:\n- none")
    assert "Done:\n- none" in text


def test_an_unverified_atom_never_closes_reopens_or_replaces_and_is_marked() -> None:
    from cogitator_memory.compaction.hierarchical import UNVERIFIED_MARK, handoff_text, merge_atoms, open_items_of
    from cogitator_memory.compaction.records import CompactionAtom, CompactionNode

    def made(kind: str, text: str, status: str = "open", verified: bool = True) -> CompactionAtom:
        return CompactionAtom(id=atom_id(kind, text), kind=kind, status=status, text=text, verified=verified)  # type: ignore[arg-type]

    merged = merge_atoms(
        [
            [made("task", "ship it"), made("decision", "go", "closed"), made("fact", "Ana is vegan")],
            # none of these quotes held: they change nothing already there
            [made("task", "ship it", "closed", False), made("decision", "go", "open", False)],
            [made("fact", "Ana is vegan", verified=False), made("fact", "Ana likes trains", verified=False)],
        ]
    )
    by_text = {a.text: a for a in merged}
    assert by_text["ship it"].status == "open" and by_text["ship it"].verified
    assert by_text["go"].status == "closed" and by_text["Ana is vegan"].verified
    assert not by_text["Ana likes trains"].verified  # something new: kept, not verified
    levels = CompactionLevels(chapters=[CompactionNode.model_validate({"from": "e1", "to": "e2", "atoms": merged})])
    assert [a.text for a in open_items_of(levels)] == ["ship it"]
    text = handoff_text(levels)
    assert f"- Ana likes trains {UNVERIFIED_MARK}" in text and "- Ana is vegan\n" in text


async def test_a_timed_out_chapter_writes_nothing_and_racing_entries_stay_after_the_tree(
    memory: BaseMemoryAdapter, server: ScriptedServer, client: OpenAIChatClient
) -> None:
    thread = unwrap(await memory.create_thread("concierge"))
    await trip(memory, thread.id)
    before = await everything(memory, thread.id)

    def late_answer(request: RecordedRequest) -> ScriptedResponse:
        time.sleep(1.0)
        return ScriptedResponse(json={})

    server.fallback(PATH, late_answer)
    slow = CompactionService(memory, summarize_fn(client), timeout=0.3)
    with pytest.raises(CompactionError, match="no answer within"):
        await slow.compact(thread.id, strategy="hierarchical", message_threshold=5, keep_recent=2)
    assert await everything(memory, thread.id) == before

    server.fallback(PATH, openai_chat_handler(first_answer))
    model = summarize_fn(client)
    late: list[MemoryEntry] = []

    async def racing(messages: Sequence[Message], options: SummarizeOptions) -> str:
        if not late:
            late.append(await say(memory, thread.id, "user", "A late question about the trains."))
        return await model(messages, options)

    result = await CompactionService(memory, racing).compact(
        thread.id, strategy="hierarchical", message_threshold=5, keep_recent=2
    )
    assert result.compacted and result.covered == 5
    view = unwrap(await read_compacted_history(memory, thread_id=thread.id))
    assert [e.id for e in view] == [result.entry_id, before[5][0], before[6][0], late[0].id]
    assert isinstance(view[0].event, CompactionEvent) and view[0].event.summary == HANDOFF_1
