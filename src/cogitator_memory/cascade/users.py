"""Finding a user's threads and messages for ``delete_user``.

A user owns the threads whose ``metadata["user_id"]`` is theirs and joined those whose
``metadata["memory_user_ids"]`` (:data:`~cogitator_memory.threads.records.MEMORY_USERS_KEY`)
lists them. A store that can find them through an index offers
``threads_of_user(user_id) -> MemoryResult[list[Thread]]`` (every thread owned or joined); on
another store every thread is listed, page by page.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..result import unwrap
from ..threads.records import MEMORY_USERS_KEY, USER_ID_KEY, MemoryEntry, Thread

#: Threads read in one page when a store has to list them all.
PAGE = 1000


@dataclass
class UserThreads:
    """The threads a user owns (``owned``) and those they wrote in (``joined``)."""

    owned: list[Thread] = field(default_factory=list)
    joined: list[Thread] = field(default_factory=list)


def owns(thread: Thread, user_id: str) -> bool:
    """Whether the thread is the user's (``metadata["user_id"]``)."""
    return (thread.metadata or {}).get(USER_ID_KEY) == user_id


def joined(thread: Thread, user_id: str) -> bool:
    """Whether the thread lists the user in ``metadata["memory_user_ids"]``."""
    users = (thread.metadata or {}).get(MEMORY_USERS_KEY)
    return isinstance(users, list) and user_id in users


def written_by(entry: MemoryEntry, user_id: str) -> bool:
    """Whether the user wrote the entry: a user message whose ``metadata["user_id"]`` or sender
    name is theirs."""
    if entry.message is None or entry.message.role != "user":
        return False
    return (entry.metadata or {}).get(USER_ID_KEY) == user_id or entry.message.name == user_id


async def find_user_threads(memory: Any, user_id: str) -> UserThreads:
    """The threads the user owns and joined, through the store's index when it has one."""
    found: list[Thread]
    indexed = getattr(memory, "threads_of_user", None)
    if callable(indexed):
        found = unwrap(await indexed(user_id))
    else:
        found = []
        cursor: str | None = None
        while True:
            page = unwrap(await memory.list_threads(limit=PAGE, cursor=cursor))
            found.extend(t for t in page.threads if owns(t, user_id) or joined(t, user_id))
            cursor = page.next_cursor
            if cursor is None:
                break
    out = UserThreads()
    for thread in found:
        if owns(thread, user_id):
            out.owned.append(thread)
        elif joined(thread, user_id):
            out.joined.append(thread)
    return out


__all__ = ["PAGE", "UserThreads", "find_user_threads", "joined", "owns", "written_by"]
