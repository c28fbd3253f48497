"""Memory upkeep passes on a scope of 10,000 items, in memory and on SQLite (a file, WAL), the model left out.

The model is an in-process ``SummarizeFn`` whose time is measured and taken out of each pass, so
the figures are what upkeep itself costs: reading the scope, grouping, fingerprints, checking the
answer and writing the files or stale marks.

* ``MemoryObservations.refresh`` after one new item, on a scope of 10,000 facts about 100
  entities whose observations are all written (p50 of 5 passes, each after a new item), and the
  model calls such a refresh makes. Target: exactly 1 call.
* ``MemoryConsolidator.dedupe`` over the same scope (10 subjects asked, the model marking one
  repeat each), and ``fold_lessons`` of 20 new lessons into a playbook.
* Baseline, in the same run: the store reading the scope's 10,000 items (``query_items``), the
  floor every pass stands on.

``--quick`` uses 2,000 items.
"""

from __future__ import annotations

import json
import re
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cogitator_memory import InMemoryAdapter, SQLiteAdapter, frozen_clock, unwrap
from cogitator_memory.files import MemoryFiles
from cogitator_memory.items import MemoryItem, MemoryItems, MemoryScope
from cogitator_memory.models import SummarizeOptions
from cogitator_memory.threads.records import Message
from cogitator_memory.upkeep import MemoryConsolidator, MemoryObservations

from .common import Row, percentiles

T0 = datetime(2026, 1, 1, tzinfo=UTC)
SCOPE = MemoryScope(agent_id="bench", user_id="ana")
ENTITIES = 100
PASSES = 5
_ID = re.compile(r'"id": "([^"]+)"')


class Model:
    """An instant model that answers each upkeep prompt sensibly and keeps the time it took."""

    def __init__(self) -> None:
        self.calls = 0
        self.seconds = 0.0

    async def __call__(self, messages: Sequence[Message], options: SummarizeOptions) -> str:
        started = time.perf_counter()
        self.calls += 1
        text = str(messages[-1].content)
        ids = _ID.findall(text)
        prompt = options.prompt or ""
        if "keep notes about one entity" in prompt:
            answer = json.dumps([{"statement": "Holds steady.", "items": ids[:3]}])
        elif "tidy an assistant's memory" in prompt:
            answer = json.dumps([{"keep": ids[-1], "drop": [ids[0]], "reason": "duplicate"}] if len(ids) > 1 else [])
        else:
            answer = json.dumps([{"op": "add", "rule": f"Rule from {i}.", "lessons": [i]} for i in ids[:3]])
        self.seconds += time.perf_counter() - started
        return answer


def _item(n: int) -> MemoryItem:
    entity = n % ENTITIES
    return MemoryItem(
        id=f"mem_{n:07d}",
        kind="fact",
        subject=f"person {entity}",
        attribute=f"attribute {n}",
        value=f"Value {n} that person {entity} mentioned while planning a trip.",
        trust="system",
        confidence=1.0,
        scope=SCOPE,
        status="active",
        recorded_at=T0 + timedelta(seconds=n),
    )


async def _measure(memory: Any, label: str, size: int) -> list[Row]:
    for start in range(0, size, 1000):
        unwrap(await memory.add_items([_item(n) for n in range(start, min(size, start + 1000))]))
    items = MemoryItems(adapter=memory)
    files = MemoryFiles(adapter=memory)
    model = Model()
    keeper = MemoryObservations(files=files, items=items, item_adapter=memory)
    consolidator = MemoryConsolidator(items=items, files=files, item_adapter=memory)

    baseline: list[float] = []
    for _ in range(PASSES):
        started = time.perf_counter()
        unwrap(await memory.query_items({"scope": SCOPE}))
        baseline.append(time.perf_counter() - started)
    base_p50, _ = percentiles(baseline)

    with frozen_clock(T0 + timedelta(days=1)):
        await keeper.refresh(SCOPE, summarize=model, max_entities=ENTITIES)
    refresh: list[float] = []
    calls: list[int] = []
    for n in range(PASSES):
        at = T0 + timedelta(days=2, minutes=n)
        with frozen_clock(at):
            await items.add(
                {"kind": "fact", "subject": f"person {n}", "attribute": "new", "value": f"new {n}",
                 "trust": "system", "scope": SCOPE}
            )  # fmt: skip
            model.calls, model.seconds = 0, 0.0
            started = time.perf_counter()
            await keeper.refresh(SCOPE, summarize=model)
            refresh.append(time.perf_counter() - started - model.seconds)
            calls.append(model.calls)

    dedupe: list[float] = []
    for n in range(PASSES):
        with frozen_clock(T0 + timedelta(days=3, minutes=n)):
            model.calls, model.seconds = 0, 0.0
            started = time.perf_counter()
            await consolidator.dedupe(SCOPE, summarize=model, max_subjects=10, max_changes=10)
            dedupe.append(time.perf_counter() - started - model.seconds)

    fold: list[float] = []
    for n in range(PASSES):
        with frozen_clock(T0 + timedelta(days=4, minutes=n)):
            for k in range(20):
                await items.add(
                    {"kind": "lesson", "subject": "assistant", "value": f"lesson {n}-{k}", "trust": "system",
                     "scope": SCOPE}
                )  # fmt: skip
            model.calls, model.seconds = 0, 0.0
            started = time.perf_counter()
            await consolidator.fold_lessons(SCOPE, summarize=model)
            fold.append(time.perf_counter() - started - model.seconds)

    def row(name: str, samples: list[float]) -> Row:
        p50, p95 = percentiles(samples)
        return Row(
            "upkeep",
            f"{name} ({size:,} items, {label}) p50",
            p50 * 1000,
            "ms",
            baseline=base_p50 * 1000,
            baseline_name="reading the scope's items",
            ratio=p50 / base_p50 if base_p50 else None,
            extra={"p95_ms": p95 * 1000},
        )

    return [
        row("observations refresh after one new item", refresh),
        Row(
            "upkeep",
            f"model calls of a refresh after one new item ({label})",
            max(calls),
            "calls",
            target="exactly 1",
            passed=all(c == 1 for c in calls),
            extra={"calls": calls},
        ),
        row("dedupe pass, 10 subjects", dedupe),
        row("fold of 20 lessons", fold),
    ]


async def run(quick: bool) -> list[Row]:
    size = 2_000 if quick else 10_000
    rows: list[Row] = []
    async with InMemoryAdapter() as memory:
        rows.extend(await _measure(memory, "memory", size))
    with tempfile.TemporaryDirectory() as folder:
        async with SQLiteAdapter(path=Path(folder) / "upkeep.db") as memory:
            rows.extend(await _measure(memory, "sqlite", size))
    return rows
