"""Which entries a cascade takes: the entries asked for, the replies of a user message, the
copies in forks (followed through ``metadata["memory_forks"]`` and ``metadata["fork_of"]``) and
the compaction summaries that cover or quote them. Reads only; nothing here writes."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ..errors import InvalidArgumentError
from ..result import unwrap
from ..threads import tree
from ..threads.records import (
    COMPACTION_SUMMARY_KEY,
    FORK_OF_KEY,
    FORKS_KEY,
    MemoryEntry,
    Thread,
)

ALL_TYPES = "all"


async def thread_entries(memory: Any, thread_id: str) -> list[MemoryEntry]:
    """Every entry of a thread, events included, in the order they were added."""
    found: list[MemoryEntry] = unwrap(await memory.get_entries(thread_id, types=ALL_TYPES, include_tool_calls=True))
    return found


def children_of(entries: Iterable[MemoryEntry]) -> dict[str | None, list[MemoryEntry]]:
    """The entries by parent id."""
    out: dict[str | None, list[MemoryEntry]] = defaultdict(list)
    for entry in entries:
        out[entry.parent_id].append(entry)
    return out


def is_user_message(entry: MemoryEntry) -> bool:
    """Whether the entry is a message a user wrote."""
    return entry.type == "message" and entry.message is not None and entry.message.role == "user"


def with_replies(entries: list[MemoryEntry], chosen: set[str]) -> set[str]:
    """``chosen`` and, for each user message among them, the entries after it on every branch up
    to the next user message (events among them too)."""
    kids = children_of(entries)
    by_id = {e.id: e for e in entries}
    out = set(chosen)
    stack = [by_id[i] for i in chosen if i in by_id and is_user_message(by_id[i])]
    while stack:
        entry = stack.pop()
        for child in kids.get(entry.id, ()):
            if is_user_message(child):
                continue
            if child.id not in out:
                out.add(child.id)
            stack.append(child)
    return out


def note(skipped: list[str] | None, what: str) -> None:
    """Add ``what`` to ``skipped`` (once)."""
    if skipped is not None and what not in skipped:
        skipped.append(what)


def listed_ids(thread: Thread | None, key: str, skipped: list[str] | None = None) -> list[str]:
    """The ids ``thread``'s metadata lists under ``key`` (a list; a single id or a mapping's
    keys as older versions wrote). An entry that is not a readable id (empty, blank, over 256
    characters, control characters, not text: data written before the writes were checked, or
    past the store's calls) is left out and described in ``skipped``: a cascade never stops
    for data it cannot read, it goes past it and says so."""
    if thread is None:
        return []
    value = (thread.metadata or {}).get(key)
    if value is None:
        return []
    listed: list[Any]
    if isinstance(value, str):
        listed = [value]
    elif isinstance(value, list):
        listed = value
    elif isinstance(value, Mapping):
        listed = list(value)
    else:
        note(skipped, f"thread {thread.id}: metadata.{key} skipped: not a list of ids ({type(value).__name__})")
        return []
    out: list[str] = []
    for i, one in enumerate(listed):
        try:
            out.append(tree.check_id(f"metadata.{key}[{i}]", one))
        except InvalidArgumentError as exc:
            note(skipped, f"thread {thread.id}: {exc.argument} skipped: {exc.problem}")
    return out


def fork_ids(thread: Thread | None, skipped: list[str] | None = None) -> list[str]:
    """The threads forked from ``thread`` (``metadata["memory_forks"]``; what cannot be read
    is described in ``skipped``, see :func:`listed_ids`)."""
    return listed_ids(thread, FORKS_KEY, skipped)


def _entry_ids_in(value: object) -> Iterator[str]:
    """Every ``entry_id`` string named anywhere in nested data (atoms and their evidence)."""
    if isinstance(value, Mapping):
        for key, inner in value.items():
            if key == "entry_id" and isinstance(inner, str):
                yield inner
            else:
                yield from _entry_ids_in(inner)
    elif isinstance(value, list | tuple):
        for inner in value:
            yield from _entry_ids_in(inner)


def quoted_entries(entry: MemoryEntry) -> set[str]:
    """The entries a summary's atoms quote (a compaction's ``event``, a legacy summary's metadata)."""
    found: set[str] = set()
    if entry.event is not None:
        found.update(_entry_ids_in(entry.event.model_dump(mode="json", by_alias=True)))
    if entry.metadata:
        found.update(_entry_ids_in(entry.metadata))
    return found


def is_summary(entry: MemoryEntry) -> bool:
    """A compaction entry, or a legacy summary kept as a message (``metadata["compaction_summary"]``)."""
    return entry.type == "compaction" or bool((entry.metadata or {}).get(COMPACTION_SUMMARY_KEY))


def covered_by(summary: MemoryEntry, path: list[MemoryEntry]) -> set[str]:
    """The entries a compaction on ``path`` (its branch from the root, ending at it) stands in
    for: those before ``first_kept_entry_id``, or, when that entry is not on the branch any
    more, every entry before the compaction."""
    before = [e for e in path if e.id != summary.id]
    first_kept = getattr(summary.event, "first_kept_entry_id", None) if summary.type == "compaction" else None
    if summary.type != "compaction":
        return set()
    ids = [e.id for e in before]
    if first_kept is not None and first_kept in ids:
        return set(ids[: ids.index(first_kept)])
    return set(ids)


def summaries_over(entries: list[MemoryEntry], gone: set[str]) -> list[MemoryEntry]:
    """The summaries of a thread (not already among ``gone``) that cover an entry of ``gone``
    or quote one in an atom."""
    by_id = {e.id: e for e in entries}
    out: list[MemoryEntry] = []
    for entry in entries:
        if entry.id in gone or not is_summary(entry):
            continue
        if quoted_entries(entry) & gone:
            out.append(entry)
            continue
        path: list[MemoryEntry] = []
        at: MemoryEntry | None = entry
        while at is not None:
            path.append(at)
            at = by_id.get(at.parent_id) if at.parent_id is not None else None
        path.reverse()
        if covered_by(entry, path) & gone:
            out.append(entry)
    return out


async def follow_forks(
    memory: Any,
    thread: Thread | None,
    gone: set[str],
    keep_replies: bool,
    seen: set[str],
    skipped: list[str] | None = None,
) -> dict[str, set[str]]:
    """The copies of ``gone`` (and, unless ``keep_replies``, their replies) in the forks of
    ``thread`` and the forks of those, by fork thread id (fork ids that cannot be read are
    described in ``skipped``)."""
    out: dict[str, set[str]] = {}
    for fork_id in fork_ids(thread, skipped):
        if fork_id in seen:
            continue
        seen.add(fork_id)
        fork = unwrap(await memory.get_thread(fork_id))
        if fork is None:
            continue
        entries = await thread_entries(memory, fork_id)
        copies = {e.id for e in entries if (e.metadata or {}).get(FORK_OF_KEY) in gone}
        if not copies:
            continue
        if not keep_replies:
            copies = with_replies(entries, copies)
        out[fork_id] = copies
        for deeper, ids in (await follow_forks(memory, fork, copies, keep_replies, seen, skipped)).items():
            out.setdefault(deeper, set()).update(ids)
    return out


__all__ = [
    "ALL_TYPES",
    "children_of",
    "covered_by",
    "follow_forks",
    "fork_ids",
    "is_summary",
    "is_user_message",
    "listed_ids",
    "note",
    "quoted_entries",
    "summaries_over",
    "thread_entries",
    "with_replies",
]
