"""Extraction: conversation entries read into records by a model, on quotes that are checked.

One pipeline, two readers. :mod:`.windows` cuts the entries into windows of messages and shows
them to the model; :mod:`.pipeline` asks the model for a JSON array a window (asked again, or
continued), goes through the windows and reports on each. The readers only differ in their prompt
and in how they read the model's answer into records:
:class:`~cogitator_memory.items.extract.MemoryExtractor` (memory items) and
:class:`~cogitator_memory.graph.extract.GraphExtractor` (entities and relations, and
:class:`~cogitator_memory.graph.auto.AutoExtractor` in the background). Both read an answer's
fields and quotes with :mod:`cogitator_memory.items.reading`.

This package imports no reader: ``items`` and ``graph`` import it.
"""

from .pipeline import (
    DEFAULT_EXTRACTION_MAX_TOKENS,
    DEFAULT_WINDOW_TOKENS,
    EXTRACTION_ATTEMPTS,
    EXTRACTION_CONTINUATIONS,
    ExtractionAnswerError,
    ExtractionPipeline,
    ExtractionPlan,
    ExtractionWindowError,
    ReportTotals,
    WindowCounts,
)
from .windows import MIN_WINDOW_TOKENS, Window, WindowMessage, check_entries, plan_windows

__all__ = [
    "DEFAULT_EXTRACTION_MAX_TOKENS",
    "DEFAULT_WINDOW_TOKENS",
    "EXTRACTION_ATTEMPTS",
    "EXTRACTION_CONTINUATIONS",
    "MIN_WINDOW_TOKENS",
    "ExtractionAnswerError",
    "ExtractionPipeline",
    "ExtractionPlan",
    "ExtractionWindowError",
    "ReportTotals",
    "Window",
    "WindowCounts",
    "WindowMessage",
    "check_entries",
    "plan_windows",
]
