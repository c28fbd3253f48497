"""Records of compaction: the result of a ``compact()`` call and the error a refused one raises."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..errors import MemoryStoreError

CompactionStrategy = Literal["summary", "sliding-window", "hybrid"]
"""How older entries are replaced: a model's summary, a window of the newest entries, or the
window when it would leave out at most :data:`HYBRID_WINDOW_LIMIT` entries, else a summary."""

COMPACTION_STRATEGIES: tuple[str, ...] = ("summary", "sliding-window", "hybrid")

#: ``hybrid`` leaves entries out without a summary when at most this many would go.
HYBRID_WINDOW_LIMIT = 5

#: Entries kept as they are when ``keep_recent`` is not given.
DEFAULT_KEEP_RECENT = 10

#: Seconds a summarizer may take before the compaction gives up (and writes nothing).
DEFAULT_SUMMARY_TIMEOUT = 120.0


class CompactionError(MemoryStoreError):
    """A compaction was refused and the thread left as it was: the summarizer failed, timed out
    or answered no usable summary, or entries it summarized were deleted or redacted meanwhile."""


@dataclass(frozen=True, slots=True)
class CompactionResult:
    """What ``compact()`` did.

    ``session_id`` is the thread; ``original_messages`` the conversation entries of its
    compacted view before, ``compacted_messages`` after (the summary counting as one);
    ``summary_tokens`` the tokens of the summary written (0 when none was written or the window
    strategy wrote a note). ``entry_id`` is the compaction entry written, ``None`` when the
    thread was under its thresholds and nothing was written; ``strategy`` the one applied
    (``hybrid`` resolves to ``summary`` or ``sliding-window``); ``covered`` how many entries
    the new compaction stands in for, beyond an earlier summary.
    """

    session_id: str
    original_messages: int
    compacted_messages: int
    summary_tokens: int
    entry_id: str | None = None
    strategy: str | None = None
    covered: int = 0

    @property
    def compacted(self) -> bool:
        """Whether a compaction entry was written."""
        return self.entry_id is not None


__all__ = [
    "COMPACTION_STRATEGIES",
    "DEFAULT_KEEP_RECENT",
    "DEFAULT_SUMMARY_TIMEOUT",
    "HYBRID_WINDOW_LIMIT",
    "CompactionError",
    "CompactionResult",
    "CompactionStrategy",
]
