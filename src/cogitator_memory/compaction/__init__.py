"""Compaction: a summary stands in for the older part of a thread's branch, nothing deleted.

:class:`CompactionService` writes compaction entries (``summary``, ``sliding-window``,
``hybrid``); the context builder and :func:`~cogitator_memory.context.read_compacted_history`
read them; ``hierarchical`` reads the branch in chapters of checked atoms (:class:`CompactionAtom`)
folded into arcs and a saga (:mod:`.hierarchical`); :class:`SessionManager` keeps a user's
conversation on a channel as one thread. See ``docs/compaction.md``.
"""

from .hierarchical import (
    COMPACTION_ATTEMPTS,
    COMPACTION_CONTINUATIONS,
    HANDOFF_SECTIONS,
    HIERARCHICAL_PROMPT,
    HierarchicalConfig,
    chapter_atoms,
    handoff_text,
)
from .records import (
    ATOM_KINDS,
    COMPACTION_STRATEGIES,
    DEFAULT_KEEP_RECENT,
    DEFAULT_SUMMARY_TIMEOUT,
    HYBRID_WINDOW_LIMIT,
    OPEN_ITEM_KINDS,
    AtomKind,
    CompactionAtom,
    CompactionError,
    CompactionLevels,
    CompactionNode,
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
    "ATOM_KINDS",
    "COMPACTION_ATTEMPTS",
    "COMPACTION_CONTINUATIONS",
    "COMPACTION_PROMPT",
    "COMPACTION_STRATEGIES",
    "DEFAULT_INDEX_REFRESH_INTERVAL",
    "DEFAULT_KEEP_RECENT",
    "DEFAULT_SUMMARY_TIMEOUT",
    "HANDOFF_SECTIONS",
    "HIERARCHICAL_PROMPT",
    "HYBRID_WINDOW_LIMIT",
    "OPEN_ITEM_KINDS",
    "SESSION_INDEX_AGENT_ID",
    "SESSION_INDEX_THREAD_ID",
    "SESSION_STATUSES",
    "AtomKind",
    "CompactionAtom",
    "CompactionError",
    "CompactionLevels",
    "CompactionNode",
    "CompactionResult",
    "CompactionService",
    "CompactionStrategy",
    "HierarchicalConfig",
    "Session",
    "SessionManager",
    "chapter_atoms",
    "handoff_text",
    "session_id_of",
]
