"""What every benchmark module shares: a row of figures, timing helpers, and the report."""

from __future__ import annotations

import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Row:
    """One measured figure beside its baseline from the same run, and the target it must meet.

    ``ratio`` is ``value / baseline`` (or as ``ratio_note`` explains); ``target`` states the bar
    in words and ``passed`` whether it was met (``None`` when there is no bar).
    """

    group: str
    name: str
    value: float
    unit: str
    baseline: float | None = None
    baseline_name: str | None = None
    ratio: float | None = None
    target: str | None = None
    passed: bool | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def percentiles(samples: list[float]) -> tuple[float, float]:
    """p50 and p95 of ``samples``."""
    ordered = sorted(samples)
    p50 = statistics.median(ordered)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return p50, p95


def time_sync(fn: Callable[[], Any], repeat: int) -> list[float]:
    """Seconds each of ``repeat`` calls of ``fn`` took."""
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


async def time_async(fn: Callable[[], Awaitable[Any]], repeat: int) -> list[float]:
    """Seconds each of ``repeat`` awaits of ``fn()`` took."""
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        await fn()
        out.append(time.perf_counter() - start)
    return out
