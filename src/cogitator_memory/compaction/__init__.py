"""Compaction: a summary stands in for the older part of a thread's branch, nothing deleted.

:class:`CompactionService` writes compaction entries (``summary``, ``sliding-window``,
``hybrid``); the context builder and :func:`~cogitator_memory.context.read_compacted_history`
read them; :class:`SessionManager` keeps a user's conversation on a channel as one thread. See ``docs/compaction.md``.
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
from .sessions import (
    DEFAULT_INDEX_REFRESH_INTERVAL,
    SESSION_INDEX_AGENT_ID,
    SESSION_INDEX_THREAD_ID,
    SESSION_STATUSES,
    Session,
    SessionManager,
    session_id_of,
)

__all__ = [
    "COMPACTION_PROMPT",
    "COMPACTION_STRATEGIES",
    "DEFAULT_INDEX_REFRESH_INTERVAL",
    "DEFAULT_KEEP_RECENT",
    "DEFAULT_SUMMARY_TIMEOUT",
    "HYBRID_WINDOW_LIMIT",
    "SESSION_INDEX_AGENT_ID",
    "SESSION_INDEX_THREAD_ID",
    "SESSION_STATUSES",
    "CompactionError",
    "CompactionResult",
    "CompactionService",
    "CompactionStrategy",
    "Session",
    "SessionManager",
    "session_id_of",
]
