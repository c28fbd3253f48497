"""extraction.pipeline: the window loop both readers run (which failures pass, which stop, which
error is raised with what report), and the windows each reader's closing line asks for."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest

from cogitator_memory.errors import InvalidArgumentError
from cogitator_memory.extraction import (
    ExtractionAnswerError,
    ExtractionPipeline,
    ExtractionWindowError,
    ReportTotals,
    Window,
    WindowCounts,
)
from cogitator_memory.graph.extract import GraphWindowError
from cogitator_memory.graph.prompts import GRAPH_ANSWER, render_graph_window
from cogitator_memory.items.extract import WindowError
from cogitator_memory.threads.records import MemoryEntry, Message

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def entries(*texts: str) -> list[MemoryEntry]:
    return [
        MemoryEntry(
            id=f"e{i}",
            thread_id="t1",
            seq=i,
            type="message",
            message=Message(role="user", content=text),
            created_at=T0 + timedelta(minutes=i),
        )
        for i, text in enumerate(texts, 1)
    ]


async def never(messages: list[Message], options: object) -> str:
    raise AssertionError("the model is not asked in these tests")


def pipeline(answer: str = "items", window_tokens: int = 120) -> ExtractionPipeline:
    return ExtractionPipeline(
        summarize=never,  # type: ignore[arg-type]
        prompt="system",
        retry_prompt="again",
        continuation=lambda read: "go on",
        answer=answer,
        window_tokens=window_tokens,
    )


@dataclass
class Counts(WindowCounts):
    ran: list[str] = field(default_factory=list)


@dataclass
class Report(ReportTotals):
    windows: list[Counts] = field(default_factory=list)
    errors: list[ExtractionWindowError] = field(default_factory=list)


def windows_of(n: int) -> list[Window]:
    plan = pipeline().plan(entries(*(f"message {i} " + "word " * 30 for i in range(n))), "UTC")
    assert len(plan.windows) == n, "one message a window"
    return plan.windows


def step(counts: Counts, name: str, fails: BaseException | None = None) -> Callable[[], Awaitable[None]]:
    async def run() -> None:
        counts.ran.append(name)
        if fails is not None:
            raise fails

    return run


async def test_a_passing_failure_lets_the_next_window_be_read_and_the_first_error_is_raised() -> None:
    windows = windows_of(3)
    report = Report(windows=[Counts(w.number, w.entry_ids, w.tokens) for w in windows])
    no_array = ExtractionAnswerError(1, ["no array"])

    def steps(window: Window, counts: Counts) -> list[Callable[[], Awaitable[None]]]:
        if window.number == 1:
            return [step(counts, "read", no_array), step(counts, "write")]
        return [step(counts, "read"), step(counts, "write")]

    with pytest.raises(WindowError) as raised:
        await ExtractionPipeline.run(windows, report, steps, passing=(ExtractionAnswerError,), window_error=WindowError)
    assert raised.value.report is report
    assert raised.value.__cause__ is no_array
    assert [w.ran for w in report.windows] == [["read", "write"], ["read", "write"], ["read", "write"]]
    assert [w.status for w in report.windows] == ["failed", "read", "read"]
    assert report.windows[0].error is raised.value
    assert str(raised.value).startswith(f"extraction window 1 of 3 (entries {windows[0].entry_ids[0]}")


async def test_any_other_failure_stops_the_call_after_every_step_of_its_window() -> None:
    windows = windows_of(3)
    report = Report(windows=[Counts(w.number, w.entry_ids, w.tokens) for w in windows])
    store_down = RuntimeError("store down")

    def steps(window: Window, counts: Counts) -> list[Callable[[], Awaitable[None]]]:
        if window.number == 2:  # the read passes, the write fails: the window's error is the read's
            return [step(counts, "read", ExtractionAnswerError(2, [])), step(counts, "write", store_down)]
        return [step(counts, "read"), step(counts, "write")]

    with pytest.raises(GraphWindowError) as raised:
        await ExtractionPipeline.run(
            windows, report, steps, passing=(ExtractionAnswerError,), window_error=GraphWindowError
        )
    assert [w.status for w in report.windows] == ["read", "failed", "not_read"]
    assert report.windows[1].ran == ["read", "write"]
    assert report.windows[2].ran == [], "a failure that does not pass stops the call"
    assert isinstance(raised.value.__cause__, ExtractionAnswerError)
    assert str(raised.value).startswith("graph extraction window 2 of 3")
    assert isinstance(raised.value, ExtractionWindowError) and not isinstance(raised.value, WindowError)


def test_each_reader_s_windows_close_asking_for_its_answer() -> None:
    said = entries("my sister Ana moved to Porto")
    [items_window] = pipeline().plan(said, "Europe/Lisbon").windows
    plan = pipeline(answer=GRAPH_ANSWER).plan(said, "Europe/Lisbon")
    [graph_window] = plan.windows
    assert items_window.text.endswith("Answer with the JSON array of items only, as the system prompt says.")
    assert graph_window.text.endswith(
        "Answer with the JSON array of entities and relations only, as the system prompt says."
    )
    assert graph_window.text == render_graph_window(graph_window, plan.zone, plan.zone_name)
    assert "Times are local to Europe/Lisbon." in graph_window.text


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"summarize": "model"}, "summarize"),
        ({"window_tokens": 10}, "window_tokens"),
        ({"max_tokens": 0}, "max_tokens"),
    ],
)
def test_the_pipeline_names_a_bad_argument(arguments: dict[str, object], named: str) -> None:
    given: dict[str, object] = {
        "summarize": never,
        "prompt": "system",
        "retry_prompt": "again",
        "continuation": lambda read: "go on",
        "answer": "items",
        **arguments,
    }
    with pytest.raises(InvalidArgumentError, match=named):
        ExtractionPipeline(**given)  # type: ignore[arg-type]


def test_report_totals_add_up_every_window() -> None:
    report = Report(windows=[Counts(1, ["e1"], 10, calls=2, continuations=1), Counts(2, ["e2"], 10, calls=3)])
    assert (report.calls, report.continuations) == (5, 1)
