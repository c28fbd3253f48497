"""How a store reports a branch it cannot walk: stored parent links that loop.

A healthy branch reaches its root in at most as many steps as its thread has entries (no
store writes a parent link that loops). A damaged store (a file edited by hand, a restored
backup mixing two versions, a bug) can hold parent links that form a cycle; a walk that
follows them would never end. Every store bounds its walk by the thread's entry count and,
when the bound is reached, fails the call with the error :func:`broken_branch` builds: a
:class:`~cogitator_memory.errors.StoreUnavailableError` (the store failed while serving the
call) naming the thread and the entry the walk started from. Retrying does not help; the data
needs repair (delete the entries of the loop, or the thread).
"""

from __future__ import annotations

from ..errors import StoreUnavailableError


def broken_branch(store: str, thread_id: str, entry_id: str, steps: int) -> StoreUnavailableError:
    """The error of a walk from ``entry_id`` that did not reach a root within ``steps`` steps."""
    return StoreUnavailableError(
        f"{store}: thread {thread_id} is damaged: the branch above entry {entry_id} does not reach a root "
        f"within {steps} steps (its parent links loop); repair the data (delete the entries of the loop) "
        "or delete the thread"
    )


__all__ = ["broken_branch"]
