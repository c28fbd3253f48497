"""Hierarchical compaction: what it keeps of the BEAM 100K chats, what it costs, and ``build()`` after it.

- **Coverage** (BEAM dev chats, SQLite file): each chat is written as a thread 40 messages at a
  time, compacted (``strategy="hierarchical"``, ``threshold=30_000``, ``keep_recent_tokens=4000``,
  chapters of 4,000 tokens) after each batch and once more at the end (``threshold=1``). The
  summarizer is a local ``SummarizeFn`` answering from the chats' own text: it reads the numbered
  transcript it is sent and answers one atom per sentence of a user message that states a task
  (``I need to``, ``I want to``, ...) or a decision (``I've decided``, ``I'll use``, ...), quoting
  the sentence exactly. The same rule run over every user message the final compaction covers
  gives the open tasks and decisions of the transcript; the figure is the share of them the
  handoff lists (under Open tasks and Decisions). The model never closes one, so all stay open,
  across chapters, arcs, the saga and every compaction of the chat.
- **Time per chapter** excluding the model: the wall time of the ``compact()`` calls less the time
  spent in the summarizer, per chapter read, on SQLite (BEAM chats and the 100,000-entry thread)
  beside the same BEAM runs on ``InMemoryAdapter``.
- **build() after compaction**: a SQLite thread of 100,000 messages of about 190 characters
  (``bench_context``'s), compacted hierarchically once (``keep_recent_tokens=3000``), then
  ``ContextBuilder(strategy="recent", max_tokens=4000).build()`` p50 beside a fresh 2,000-entry
  SQLite thread in the same run. Target: within 1.5x.

Run: ``python -m benchmarks --only compaction`` (``--quick``: 3 chats, 20,000 entries).
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cogitator_memory import InMemoryAdapter, SQLiteAdapter, unwrap
from cogitator_memory.compaction import CompactionService
from cogitator_memory.compaction.hierarchical import HANDOFF_SECTIONS
from cogitator_memory.context import ContextBuilder
from cogitator_memory.context.history import compaction_of, read_compacted_history
from cogitator_memory.models import SummarizeOptions
from cogitator_memory.threads.base import BaseMemoryAdapter
from cogitator_memory.threads.records import Message
from cogitator_memory.tokens import count_tokens

from .beam import Chat, load_chats
from .bench_context import _fill
from .common import Row, percentiles, time_async

BATCH = 40
HEADER = re.compile(r"^\[(\d+)\] (user|assistant|system|tool[^:]*): ?(.*)$")
SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")
TASK = re.compile(
    r"\b(?:I need to|I have to|I want to|I'd like to|I plan to|I'm planning to|I still need to|I must|we need to)\b",
    re.I,
)
DECISION = re.compile(
    r"\b(?:I(?:'ve| have)? decided|I'll go with|I'm going with|I've chosen|I chose|I'm going to use|I'll use"
    r"|we decided|let's go with|I've settled on|I opted)\b",
    re.I,
)


def _squash(text: str) -> str:
    return " ".join(text.split())


def atoms_of(text: str) -> list[tuple[str, str]]:
    """The (kind, sentence) pairs the scripted summarizer takes from a user message."""
    out: list[tuple[str, str]] = []
    for line in text.splitlines():
        for match in SENTENCE.finditer(line):
            sentence = match.group(0).strip()
            if not 12 <= len(sentence) <= 300 or "`" in sentence:
                continue
            if DECISION.search(sentence):
                out.append(("decision", sentence))
            elif TASK.search(sentence):
                out.append(("task", sentence))
    return out


def numbered(transcript: str) -> dict[int, tuple[str, str]]:
    """Message number -> (role, text) of a chapter's numbered transcript."""
    out: dict[int, tuple[str, str]] = {}
    current: int | None = None
    for line in transcript.splitlines():
        match = HEADER.match(line)
        if match:
            current = int(match.group(1))
            out[current] = (match.group(2), match.group(3))
        elif line in ("(this chapter)", "(the end of the previous chapter, for context)"):
            current = None
        elif current is not None:
            role, text = out[current]
            out[current] = (role, text + "\n" + line)
    return out


@dataclass
class ScriptedSummarizer:
    """A ``SummarizeFn`` answering from the transcript's own user messages, timing itself."""

    calls: int = 0
    seconds: float = 0.0
    answers: list[int] = field(default_factory=list)

    async def __call__(self, messages: Sequence[Message], options: SummarizeOptions) -> str:
        started = time.perf_counter()
        self.calls += 1
        atoms = []
        for number, (role, text) in numbered(messages[0].text).items():
            if role != "user":
                continue
            for kind, sentence in atoms_of(text):
                atoms.append({"kind": kind, "text": sentence, "evidence": [{"message": number, "quote": sentence}]})
        self.answers.append(len(atoms))
        answer = json.dumps(atoms)
        self.seconds += time.perf_counter() - started
        return answer


def _section(handoff: str, name: str) -> set[str]:
    """The lines of one handoff section, without their dashes."""
    lines: list[str] = []
    inside = False
    for line in handoff.splitlines():
        if line.endswith(":") and line[:-1] in HANDOFF_SECTIONS:
            inside = line[:-1] == name
            continue
        if inside and line.startswith("- "):
            lines.append(_squash(line[2:]))
    return set(lines)


@dataclass
class ChatRun:
    truth: int = 0
    found: int = 0
    compactions: int = 0
    chapters: int = 0
    own_seconds: float = 0.0
    handoff_tokens: int = 0


async def _compact_chat(memory: BaseMemoryAdapter, chat: Chat) -> ChatRun:
    summarize = ScriptedSummarizer()
    service = CompactionService(memory, summarize)
    thread = unwrap(await memory.create_thread("beam", {"chat": chat.name}))
    run = ChatRun()
    options = {"strategy": "hierarchical", "keep_recent_tokens": 4000, "chapter_tokens": 4000}
    for start in range(0, len(chat.messages), BATCH):
        for message in chat.messages[start : start + BATCH]:
            unwrap(
                await memory.add_entry(
                    {"thread_id": thread.id, "message": {"role": message.role, "content": message.content}}
                )
            )
        final = start + BATCH >= len(chat.messages)
        before = summarize.seconds
        started = time.perf_counter()
        result = await service.compact(thread.id, threshold=1 if final else 30_000, **options)  # type: ignore[arg-type]
        run.own_seconds += time.perf_counter() - started - (summarize.seconds - before)
        run.compactions += result.compacted
    run.chapters = summarize.calls
    view = unwrap(await read_compacted_history(memory, thread_id=thread.id))
    event = compaction_of(view[0])
    assert event is not None and event.first_kept_entry_id is not None
    entries = unwrap(await memory.get_path(thread_id=thread.id))
    covered = []
    for entry in entries:
        if entry.id == event.first_kept_entry_id:
            break
        covered.append(entry)
    tasks, decisions = _section(event.summary, "Open tasks"), _section(event.summary, "Decisions")
    truth = {
        (kind, _squash(sentence))
        for entry in covered
        if entry.message is not None and entry.message.role == "user"
        for kind, sentence in atoms_of(entry.message.text)
    }
    run.truth = len(truth)
    run.found = sum(1 for kind, text in truth if text in (tasks if kind == "task" else decisions))
    run.handoff_tokens = count_tokens(event.summary)
    return run


async def _beam(folder: Path, chats: list[Chat]) -> list[Row]:
    rows: list[Row] = []
    per_chapter: dict[str, float] = {}
    for label in ("InMemory", "SQLite"):
        total = ChatRun()
        for chat in chats:
            memory: BaseMemoryAdapter = (
                InMemoryAdapter() if label == "InMemory" else SQLiteAdapter(path=folder / f"beam-{chat.name}.db")
            )
            async with memory:
                run = await _compact_chat(memory, chat)
            total.truth += run.truth
            total.found += run.found
            total.compactions += run.compactions
            total.chapters += run.chapters
            total.own_seconds += run.own_seconds
            total.handoff_tokens += run.handoff_tokens
        per_chapter[label] = total.own_seconds / max(1, total.chapters) * 1e3
        if label == "SQLite":
            coverage = total.found / max(1, total.truth)
            rows.append(
                Row(
                    "hierarchical compaction, BEAM 100K chats",
                    "open tasks and decisions in the handoff",
                    coverage * 100,
                    "%",
                    100.0,
                    "every one the transcript holds",
                    coverage,
                    "all of them",
                    total.found == total.truth,
                    {
                        "chats": len(chats),
                        "items": total.truth,
                        "found": total.found,
                        "compactions": total.compactions,
                        "chapters": total.chapters,
                        "mean_handoff_tokens": total.handoff_tokens / len(chats),
                    },
                )
            )
            rows.append(
                Row(
                    "hierarchical compaction, BEAM 100K chats",
                    "time per chapter excluding the model, SQLite",
                    per_chapter["SQLite"],
                    "ms",
                    per_chapter["InMemory"],
                    "InMemory, same chats",
                    per_chapter["SQLite"] / per_chapter["InMemory"],
                    None,
                    None,
                    {"chapters": total.chapters},
                )
            )
    return rows


async def _build_p50(memory: BaseMemoryAdapter, thread_id: str, repeat: int) -> tuple[float, int, int]:
    builder = ContextBuilder({"strategy": "recent", "max_tokens": 4000}, {"memory_adapter": memory})
    context = await builder.build(thread_id, system_prompt="You are a helpful assistant.")
    for _ in range(20):
        await builder.build(thread_id, system_prompt="You are a helpful assistant.")
    samples = await time_async(lambda: builder.build(thread_id, system_prompt="You are a helpful assistant."), repeat)
    return percentiles(samples)[0] * 1e3, context.metadata.original_message_count, len(context.messages)


async def _long_thread(folder: Path, big: int, repeat: int) -> list[Row]:
    async with SQLiteAdapter(path=folder / "fresh.db") as fresh:
        fresh_id = await _fill(fresh, 2_000)
        fresh_p50, fresh_read, _ = await _build_p50(fresh, fresh_id, repeat)
    async with SQLiteAdapter(path=folder / "long.db") as memory:
        started = time.perf_counter()
        thread_id = await _fill(memory, big)
        fill_seconds = time.perf_counter() - started
        before_p50, _, _ = await _build_p50(memory, thread_id, repeat)
        summarize = ScriptedSummarizer()
        service = CompactionService(memory, summarize)
        started = time.perf_counter()
        result = await service.compact(
            thread_id, strategy="hierarchical", threshold=1, keep_recent_tokens=3000, chapter_tokens=4000
        )
        compact_seconds = time.perf_counter() - started
        own = (compact_seconds - summarize.seconds) / max(1, summarize.calls) * 1e3
        after_p50, read, sent = await _build_p50(memory, thread_id, repeat)
    print(
        f"[compaction] {big:,} entries written in {fill_seconds:.1f}s, compacted in {compact_seconds:.1f}s",
        file=sys.stderr,
    )
    return [
        Row(
            'build(strategy="recent", max_tokens=4000) after compaction',
            f"SQLite, {big:,} entries compacted, p50 ms",
            after_p50,
            "ms",
            fresh_p50,
            "SQLite, fresh 2,000 entries, p50",
            after_p50 / fresh_p50,
            "within 1.5x of 2,000",
            after_p50 <= 1.5 * fresh_p50,
            {
                "entries_read": read,
                "messages_sent": sent,
                "fresh_entries_read": fresh_read,
                "same_thread_before_compaction_p50_ms": before_p50,
                "covered": result.covered,
            },
        ),
        Row(
            "hierarchical compaction, synthetic thread",
            f"time per chapter excluding the model, SQLite, {big:,} entries",
            own,
            "ms",
            None,
            None,
            None,
            None,
            None,
            {"chapters": summarize.calls, "compact_seconds": compact_seconds, "model_seconds": summarize.seconds},
        ),
    ]


async def run(quick: bool) -> list[Row]:
    try:
        chats = load_chats(limit=3 if quick else None)
    except FileNotFoundError as exc:
        print(f"[compaction] BEAM chats skipped: {exc}", file=sys.stderr)
        chats = []
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if chats:
            rows.extend(await _beam(folder, chats))
        rows.extend(await _long_thread(folder, 20_000 if quick else 100_000, 200 if quick else 1_000))
    return rows
