"""Extraction of the BEAM 100K chats through a scripted model answering from the data itself.

Each chat becomes a thread (every message an entry, dated by its batch's ``time_anchor``, one
minute apart, as ``bench_recall`` does) and ``MemoryExtractor.extract`` reads it in windows of
4,000 tokens. The model is a ``ScriptedServer`` speaking OpenAI's chat completions over real HTTP:
for every window it reads the numbered ``<message>`` blocks it was sent and answers, after a line
of prose and a ``[1]``, a fenced JSON array with

* one item per user message of the window, quoting the message's first sentence (the words the
  data holds), under one of 20 attributes picked from the sentence (so slots are superseded as a
  real extraction's are), with the first time words of the sentence as ``valid_from``;
* one item per window quoting a sentence no message holds (the first one with words added),
  which the extractor must reject.

Every chat is the conversation of a user of its own (its own scope). Figures: quotes verified and
rejected against what the model took from the text it was shown and what it made up, items
written, and the time per window spent outside the model, on ``InMemoryAdapter`` and SQLite (a
file). The model's time (the HTTP round trip and the scripted answer) is measured around each
``SummarizeFn`` call and subtracted; the planning of a chat's windows (before its first call) is
reported apart, per window. Beside it, right after each chat so both see the same load, the time
to write the same items of each window through ``MemoryItems.add`` alone into a store of the same
engine: what any extraction pays for its writes. ``own`` is the difference, window by window:
the extractor's own cost (prompts, reading the answers, checking quotes, dating).

Run: ``python -m benchmarks --only extract`` or ``python -m benchmarks.bench_extract [--data PATH]
[--chats N]``; the data folder comes from ``--data``, else ``$COGMEM_BEAM_DIR``, else
``../shared/data/beam-100k``. Without it the benchmark is skipped with a message.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import tempfile
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cogitator_memory import InMemoryAdapter, SQLiteAdapter, frozen_clock, unwrap
from cogitator_memory.items import MemoryItems, NewMemoryItem
from cogitator_memory.items.extract import MemoryExtractor
from cogitator_memory.models import OpenAIChatClient, SummarizeOptions
from cogitator_memory.recall import find_times
from cogitator_memory.testing.scripted_server import ScriptedChatRequest, ScriptedServer, openai_chat_handler
from cogitator_memory.threads.records import Message as ChatMessage

from .beam import Chat, load_chats
from .common import Row, percentiles

AGENT = "beam"
ATTRIBUTES = 20
BLOCK = re.compile(r'<message number="(\d+)" from="(\w+)"[^>]*>\n(.*?)\n</message>', re.S)
SENTENCE = re.compile(r"\S.*?(?:[.!?](?=\s)|\n|$)", re.S)
FAKE_SUFFIX = ", as everyone at the office already knew"
#: What the scripted model finds time words from (it only picks the words; the extractor dates them).
SESSION_AT = datetime(2024, 1, 1, tzinfo=UTC)


def first_sentence(text: str) -> str | None:
    """The message's first sentence of at least 12 characters (at most 300), as written."""
    for match in SENTENCE.finditer(text):
        sentence = match.group().strip()
        if len(sentence) >= 12:
            return sentence[:300].rstrip()
    return None


class ScriptedModel:
    """The benchmark's model: the items the window's user messages state (see the module doc).
    It counts the quotes it took from the text it was shown and those it made up."""

    def __init__(self) -> None:
        self.taken = 0
        self.made_up = 0
        self.answered = 0

    def __call__(self, chat: ScriptedChatRequest) -> str:
        items: list[dict[str, Any]] = []
        for number, who, text in BLOCK.findall(chat.messages[0][1]):
            sentence = first_sentence(text) if who == "user" else None
            if sentence is None:
                continue
            element: dict[str, Any] = {
                "kind": "fact",
                "subject": "user",
                "attribute": f"topic {zlib.crc32(sentence.encode()) % ATTRIBUTES}",
                "value": sentence,
                "quotes": [{"message": int(number), "quote": sentence}],
                "confidence": 0.9,
            }
            times = find_times(sentence, SESSION_AT)
            if times:
                element["valid_from"] = times[0].text
            items.append(element)
        self.taken += len(items)
        if items:
            fake = dict(items[0], value=items[0]["value"] + FAKE_SUFFIX, attribute="rumour")
            fake["quotes"] = [{"message": items[0]["quotes"][0]["message"], "quote": fake["value"]}]
            items.append(fake)
            self.made_up += 1
        self.answered += len(items)
        fence = "`" * 3
        return f"The items of message [1] onward:\n{fence}json\n{json.dumps(items, indent=1)}\n{fence}"


def scope_of(chat: Chat) -> dict[str, str]:
    """Every chat is the conversation of a user of its own."""
    return {"agent_id": AGENT, "user_id": f"reader-{chat.name}"}


async def load_thread(memory: Any, chat: Chat) -> list[Any]:
    """The chat as a thread of the store; returns its entries."""
    thread = unwrap(await memory.create_thread(AGENT, {"user_id": scope_of(chat)["user_id"]}))
    previous = None
    for i, message in enumerate(chat.messages):
        assert message.anchor is not None
        at = message.anchor + timedelta(hours=9, minutes=i)
        if previous is not None and at <= previous:
            at = previous + timedelta(minutes=1)
        previous = at
        with frozen_clock(at):
            unwrap(
                await memory.add_entry(
                    {"thread_id": thread.id, "message": {"role": message.role or "user", "content": message.content}}
                )
            )
    return list(unwrap(await memory.get_entries(thread_id=thread.id)))


@dataclass
class Timeline:
    """When each model call started and ended, and whether it opened a window."""

    calls: list[tuple[float, float, bool]] = field(default_factory=list)


@dataclass
class Outcome:
    """What extracting every chat on one engine measured."""

    windows: int = 0
    calls: int = 0
    quotes_verified: int = 0
    quotes_rejected: int = 0
    expected_verified: int = 0
    expected_rejected: int = 0
    items_written: int = 0
    items_active: int = 0
    dropped: int = 0
    dates: int = 0
    per_window: list[float] = field(default_factory=list)
    planning: list[float] = field(default_factory=list)
    model_seconds: float = 0.0
    writes: list[float] = field(default_factory=list)


async def extract_all(chats: list[Chat], engine: str, folder: Path, server: ScriptedServer) -> Outcome:
    model = ScriptedModel()
    server.fallback("/v1/chat/completions", openai_chat_handler(model))
    outcome = Outcome()
    memory, alone = (
        (SQLiteAdapter(path=folder / f"extract-{engine}.db"), SQLiteAdapter(path=folder / f"writes-{engine}.db"))
        if engine == "SQLite"
        else (InMemoryAdapter(), InMemoryAdapter())
    )
    async with (
        memory,
        alone,
        OpenAIChatClient(provider="vllm", base_url=server.url + "/v1", model="scripted", timeout=60) as client,
    ):
        inner = client.as_summarize_fn()
        timeline = Timeline()

        async def timed(messages: Sequence[ChatMessage], options: SummarizeOptions) -> str:
            started = time.perf_counter()
            try:
                return await inner(messages, options)
            finally:
                timeline.calls.append((started, time.perf_counter(), len(messages) == 1))

        batches: dict[int, list[NewMemoryItem]] = {}

        def keep(items: list[NewMemoryItem]) -> list[NewMemoryItem]:
            batches[sum(1 for call in timeline.calls if call[2]) - 1] = items  # the window being written
            return items

        extractor = MemoryExtractor(items=MemoryItems(adapter=memory), summarize=timed, before_write=keep)
        for chat in chats:
            entries = await load_thread(memory, chat)
            timeline.calls.clear()
            batches.clear()
            started = time.perf_counter()
            report = await extractor.extract(entries, scope=scope_of(chat))
            ended = time.perf_counter()
            opens = [i for i, call in enumerate(timeline.calls) if call[2]]
            outcome.writes.extend(await writes_alone([batches.get(k, []) for k in range(len(opens))], alone))
            outcome.planning.append((timeline.calls[opens[0]][0] - started) / len(opens))
            for k, first in enumerate(opens):
                last = opens[k + 1] if k + 1 < len(opens) else len(timeline.calls)
                stop = timeline.calls[opens[k + 1]][0] if k + 1 < len(opens) else ended
                calls = timeline.calls[first:last]
                inside = sum(end - start for start, end, _ in calls)
                outcome.per_window.append(stop - calls[0][0] - inside)
                outcome.model_seconds += inside
            outcome.windows += len(report.windows)
            outcome.calls += report.calls
            outcome.quotes_verified += report.quotes_verified
            outcome.quotes_rejected += report.quotes_rejected
            outcome.items_written += len(report.items)
            outcome.items_active += sum(1 for i in report.items if i.status == "active")
            outcome.dropped += report.items_dropped
            outcome.dates += sum(1 for i in report.items if i.valid_from is not None)
    outcome.expected_verified, outcome.expected_rejected = model.taken, model.made_up
    return outcome


async def writes_alone(batches: list[list[NewMemoryItem]], memory: Any) -> list[float]:
    """Seconds to write each window's items through ``MemoryItems.add`` into a store of their own
    (right after the chat's extraction, so both see the same load); 0 for a window without items."""
    items = MemoryItems(adapter=memory)
    out = []
    for batch in batches:
        started = time.perf_counter()
        for item in batch:
            await items.add(item)
        out.append(time.perf_counter() - started)
    return out


async def measure(chats: list[Chat], engines: Sequence[str] = ("InMemory", "SQLite")) -> list[Row]:
    rows: list[Row] = []
    with ScriptedServer() as server, tempfile.TemporaryDirectory() as tmp:
        for engine in engines:
            outcome = await extract_all(chats, engine, Path(tmp), server)
            writes = outcome.writes
            quotes_ok = (
                outcome.quotes_verified == outcome.expected_verified
                and outcome.quotes_rejected == outcome.expected_rejected
            )
            counts = {
                "chats": len(chats),
                "windows": outcome.windows,
                "model calls": outcome.calls,
                "quotes verified": outcome.quotes_verified,
                "quotes the data holds": outcome.expected_verified,
                "quotes rejected": outcome.quotes_rejected,
                "quotes no message holds": outcome.expected_rejected,
                "items written": outcome.items_written,
                "items active": outcome.items_active,
                "items with a valid_from": outcome.dates,
                "answer elements dropped": outcome.dropped,
                "model seconds": round(outcome.model_seconds, 2),
            }
            print(f"[extract] {engine}: {json.dumps(counts)}", file=sys.stderr)
            rows.append(
                Row(
                    "extract",
                    f"beam-100k, {engine}: quotes verified",
                    outcome.quotes_verified,
                    "quotes",
                    outcome.expected_verified,
                    "quotes of sentences the data holds",
                    outcome.quotes_verified / outcome.expected_verified if outcome.expected_verified else None,
                    "every quote the data holds verified, every other rejected",
                    quotes_ok,
                    counts,
                )
            )
            rows.append(
                Row(
                    "extract",
                    f"beam-100k, {engine}: items written",
                    outcome.items_written,
                    "items",
                    outcome.expected_verified + outcome.expected_rejected,
                    "items the model answered",
                    outcome.items_written / (outcome.expected_verified + outcome.expected_rejected),
                    "every item answered written; only verified ones active",
                    outcome.items_written == outcome.expected_verified + outcome.expected_rejected
                    and outcome.items_active <= outcome.expected_verified,
                    {"items active": outcome.items_active},
                )
            )
            p50, p95 = percentiles(outcome.per_window)
            w50, w95 = percentiles(writes)
            own = [total - write for total, write in zip(outcome.per_window, writes, strict=True)]
            o50, o95 = percentiles(own)
            rows.append(
                Row(
                    "extract",
                    f"beam-100k, {engine}: time per window excluding the model, p50 ms",
                    p50 * 1e3,
                    "ms",
                    w50 * 1e3,
                    "MemoryItems.add of the same items alone, p50",
                    p50 / w50 if w50 else None,
                    "within 2x of writing the items alone",
                    p50 <= 2 * w50,
                    {
                        "p95_ms": p95 * 1e3,
                        "mean_ms": 1e3 * sum(outcome.per_window) / len(outcome.per_window),
                        "writes_alone_p95_ms": w95 * 1e3,
                        "writes_alone_mean_ms": 1e3 * sum(writes) / len(writes),
                        "own_p50_ms": o50 * 1e3,
                        "own_p95_ms": o95 * 1e3,
                        "planning_ms_per_window": 1e3 * sum(outcome.planning) / len(outcome.planning),
                        "model_ms_per_window": 1e3 * outcome.model_seconds / outcome.windows,
                    },
                )
            )
    return rows


async def run(quick: bool) -> list[Row]:
    """The benchmark entry point (3 chats with ``--quick``, else all 20)."""
    try:
        chats = load_chats(limit=3 if quick else None)
    except FileNotFoundError as exc:
        print(f"[extract] skipped: {exc}", file=sys.stderr)
        return []
    return await measure(chats)


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks.bench_extract [--data PATH] [--chats N] [--engine InMemory|SQLite]``."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_extract")
    parser.add_argument("--data", default=None, help="the beam-100k folder")
    parser.add_argument("--chats", type=int, default=None, help="only the first N chats")
    parser.add_argument("--engine", action="append", choices=["InMemory", "SQLite"], default=None)
    args = parser.parse_args(argv)
    try:
        chats = load_chats(args.data, limit=args.chats)
    except FileNotFoundError as exc:
        print(f"skipped: {exc}", file=sys.stderr)
        return 0
    rows = asyncio.run(measure(chats, args.engine or ("InMemory", "SQLite")))
    for row in rows:
        print(json.dumps(row.as_dict()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
