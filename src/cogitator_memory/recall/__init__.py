"""Recall: reading what a turn asks for and finding it in memory.

For now this holds time resolution: :func:`resolve_time` turns time words ("last Tuesday",
"early March", "the 90s") into a UTC interval with its precision, and :func:`find_times`
finds such words in running text. See ``docs/time.md``.
"""

from .time import (
    PRECISIONS,
    Hemisphere,
    Precision,
    Prefer,
    TimeInterval,
    TimeMention,
    find_times,
    resolve_time,
    zone_hemisphere,
)

__all__ = [
    "PRECISIONS",
    "Hemisphere",
    "Precision",
    "Prefer",
    "TimeInterval",
    "TimeMention",
    "find_times",
    "resolve_time",
    "zone_hemisphere",
]
