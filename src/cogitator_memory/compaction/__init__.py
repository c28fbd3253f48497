"""Compaction: a summary stands in for the older part of a thread's branch, nothing deleted.

:class:`CompactionService` writes compaction entries (``summary``, ``sliding-window``,
``hybrid``); the context builder and :func:`~cogitator_memory.context.read_compacted_history`
read them. See ``docs/compaction.md``.
"""

from .records import (
    COMPACTION_STRATEGIES,
    DEFAULT_KEEP_RECENT,
    DEFAULT_SUMMARY_TIMEOUT,
    HYBRID_WINDOW_LIMIT,
    CompactionError,
    CompactionResult,
    CompactionStrategy,
)
from .service import COMPACTION_PROMPT, CompactionService

__all__ = [
    "COMPACTION_PROMPT",
    "COMPACTION_STRATEGIES",
    "DEFAULT_KEEP_RECENT",
    "DEFAULT_SUMMARY_TIMEOUT",
    "HYBRID_WINDOW_LIMIT",
    "CompactionError",
    "CompactionResult",
    "CompactionService",
    "CompactionStrategy",
]
