"""Cascades: deleting, redacting and rewinding entries together with what memory derived from
them (summaries, items, facts, graph, vectors, memory files, observations and playbook rules).

:mod:`.service` holds :class:`MemoryCascade`, :mod:`.entries` finds the entries that go
(replies, copies in forks, summaries over them), :mod:`.derived` takes the derived memory,
:mod:`.users` finds a user's threads, :mod:`.records` the counts, :mod:`.scrub` clears the
bytes a SQLite file keeps of what went. See ``docs/cascade.md``.
"""

from .records import (
    CascadeCounts,
    CascadePlan,
    CascadeWho,
    EntryCounts,
    FactCounts,
    GraphCounts,
    ItemCounts,
    check_who,
)
from .service import MemoryCascade
from .users import UserThreads, find_user_threads

__all__ = [
    "CascadeCounts",
    "CascadePlan",
    "CascadeWho",
    "EntryCounts",
    "FactCounts",
    "GraphCounts",
    "ItemCounts",
    "MemoryCascade",
    "UserThreads",
    "check_who",
    "find_user_threads",
]
