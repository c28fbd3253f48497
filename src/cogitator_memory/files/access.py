"""Who reads and writes memory files, and what they see: :class:`FileAccess`.

An access writes into its ``scope`` and reads the scopes ``visible_to`` sees (its scope by
default), each path from the narrowest scope that holds a version of it. With a ``place`` (a
branch of a thread) it is standing in a conversation: a version written in that thread is seen
only on the branches holding the entry it was written after, and what it writes records that
place. ``read_only`` refuses every change; ``reserved`` refuses changes of those paths and
everything under them. ``author`` goes on every version it writes, and ``observe`` hears of
each version a command showed or wrote (to keep the SHA-256 a later change should start from).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidArgumentError
from ..items.records import MemoryScope, check_scope, visible_scope_keys
from ..threads import tree
from .errors import MemoryFileError
from .paths import is_at_or_under, normalize_path
from .records import FILE_AUTHORS, FileAuthor, MemoryFilePlace, MemoryFileVersion

Observer = Callable[[MemoryFileVersion], object]


@dataclass(frozen=True)
class AccessPlace:
    """Where an access stands in a conversation: a thread, the entry it stands after (the leaf
    of its branch, ``None`` in an empty thread) and the ids of every entry on that branch."""

    thread_id: str
    entry_id: str | None = None
    branch: frozenset[str] = frozenset()


@dataclass
class FileAccess:
    """How a caller reaches memory files (see the module docstring). A dict of these fields
    works wherever a ``FileAccess`` does."""

    scope: MemoryScope | dict[str, Any]
    visible_to: MemoryScope | dict[str, Any] | None = None
    place: AccessPlace | dict[str, Any] | None = None
    read_only: bool = False
    reserved: Sequence[str] = ()
    author: FileAuthor = "model"
    observe: Observer | None = None


@dataclass(frozen=True)
class CheckedAccess:
    """A :class:`FileAccess` with every field checked and normalized (what the service uses)."""

    scope: MemoryScope
    seen: MemoryScope
    place: AccessPlace | None
    read_only: bool
    reserved: tuple[str, ...]
    author: FileAuthor
    observe: Observer | None
    keys: frozenset[str] = field(default_factory=frozenset)

    def sees(self, version: MemoryFileVersion) -> bool:
        """Whether a version of a scope this access reads is seen from its place."""
        mine, theirs = self.place, version.place
        if mine is None or theirs is None or theirs.thread_id != mine.thread_id:
            return True
        return theirs.entry_id is None or theirs.entry_id in mine.branch

    @property
    def version_place(self) -> MemoryFilePlace | None:
        """The place the versions this access writes record."""
        if self.place is None:
            return None
        return MemoryFilePlace(thread_id=self.place.thread_id, entry_id=self.place.entry_id)

    def reserved_among(self, paths: Collection[str]) -> str | None:
        """The first of ``paths`` that is reserved (or under a reserved path), if any."""
        for path in paths:
            if any(is_at_or_under(path, kept) for kept in self.reserved):
                return path
        return None

    async def tell(self, versions: Sequence[MemoryFileVersion]) -> None:
        """Let ``observe`` hear of each version."""
        if self.observe is None:
            return
        for version in versions:
            outcome = self.observe(version)
            if inspect.isawaitable(outcome):
                await outcome


def _place(value: object) -> AccessPlace | None:
    if value is None or isinstance(value, AccessPlace):
        return value
    if not isinstance(value, Mapping):
        raise InvalidArgumentError("access.place", f"must be an AccessPlace or a dict, got {type(value).__name__}")
    unknown = set(value) - {"thread_id", "entry_id", "branch"}
    if unknown:
        raise InvalidArgumentError(f"access.place.{sorted(unknown)[0]}", "is not a field of a place")
    thread_id = tree.check_id("access.place.thread_id", value.get("thread_id"))
    entry_id = tree.check_optional_id("access.place.entry_id", value.get("entry_id"))
    branch = value.get("branch", ())
    if isinstance(branch, str | bytes) or not isinstance(branch, Collection):
        raise InvalidArgumentError("access.place.branch", "must be a collection of entry ids")
    ids = frozenset(tree.check_id(f"access.place.branch[{i}]", e) for i, e in enumerate(branch))
    if entry_id is not None:
        ids |= {entry_id}
    return AccessPlace(thread_id=thread_id, entry_id=entry_id, branch=ids)


def check_access(value: object) -> CheckedAccess:
    """A :class:`CheckedAccess` from a :class:`FileAccess` or a dict of its fields;
    ``InvalidArgumentError`` naming the field (``access.scope.agent_id``) otherwise."""
    if isinstance(value, CheckedAccess):
        return value
    if isinstance(value, FileAccess):
        fields: Mapping[str, Any] = value.__dict__
    elif isinstance(value, Mapping):
        fields = value
        unknown = set(fields) - set(FileAccess.__dataclass_fields__)
        if unknown:
            raise InvalidArgumentError(f"access.{sorted(unknown)[0]}", "is not a field of a FileAccess")
    else:
        raise InvalidArgumentError("access", f"must be a FileAccess or a dict, got {type(value).__name__}")
    if fields.get("scope") is None:
        raise InvalidArgumentError("access.scope", "is required: the scope the access writes into")
    scope = check_scope("access.scope", fields["scope"])
    seen_value = fields.get("visible_to")
    seen = scope if seen_value is None else check_scope("access.visible_to", seen_value)
    if not seen.sees(scope):
        raise InvalidArgumentError(
            "access.visible_to", "must see access.scope (the same agent, and each limit of the scope unset or its own)"
        )
    reserved_value = fields.get("reserved") or ()
    if isinstance(reserved_value, str | bytes) or not isinstance(reserved_value, Sequence | set | frozenset):
        raise InvalidArgumentError("access.reserved", "must be a list of paths")
    reserved: list[str] = []
    for i, path in enumerate(reserved_value):
        try:
            reserved.append(normalize_path(path))
        except MemoryFileError as exc:
            raise InvalidArgumentError(f"access.reserved[{i}]", str(exc)) from None
    author = fields.get("author", "model")
    if author not in FILE_AUTHORS:
        raise InvalidArgumentError("access.author", f"must be one of {', '.join(FILE_AUTHORS)}, got {author!r}")
    observe = fields.get("observe")
    if observe is not None and not callable(observe):
        raise InvalidArgumentError("access.observe", "must be a function of one version (or a coroutine function)")
    read_only = fields.get("read_only", False)
    if not isinstance(read_only, bool):
        raise InvalidArgumentError("access.read_only", f"must be true or false, got {read_only!r}")
    return CheckedAccess(
        scope=scope,
        seen=seen,
        place=_place(fields.get("place")),
        read_only=read_only,
        reserved=tuple(reserved),
        author=author,
        observe=observe,
        keys=frozenset(visible_scope_keys(seen)),
    )


def narrowness(scope: MemoryScope) -> tuple[int, bool, bool, bool]:
    """How narrow a scope is, for choosing among the scopes holding one path: more limits is
    narrower; among as many, a thread's is narrower than a project's, a project's than a user's."""
    limits = (scope.thread_id is not None, scope.project_id is not None, scope.user_id is not None)
    return (sum(limits), *limits)


def joined_scope(scope: MemoryScope, other: MemoryScope | None) -> MemoryScope:
    """``scope`` with every limit ``other`` sets: where a change of a version of ``other`` goes,
    so it stands in front and is never shared wider than the version was."""
    if other is None:
        return scope
    return MemoryScope(
        agent_id=scope.agent_id,
        user_id=scope.user_id or other.user_id,
        project_id=scope.project_id or other.project_id,
        thread_id=scope.thread_id or other.thread_id,
    )


async def place_on_branch(memory: Any, thread_id: str, leaf_id: str | None = None) -> AccessPlace:
    """The :class:`AccessPlace` of a thread's branch, read from a thread store: the active
    branch, or the one ending at ``leaf_id``."""
    from ..result import unwrap

    path: Awaitable[Any] = memory.get_path(thread_id=thread_id, leaf_id=leaf_id)
    entries = unwrap(await path)
    ids = frozenset(entry.id for entry in entries)
    return AccessPlace(thread_id=thread_id, entry_id=entries[-1].id if entries else None, branch=ids)


__all__ = [
    "AccessPlace",
    "CheckedAccess",
    "FileAccess",
    "Observer",
    "check_access",
    "joined_scope",
    "narrowness",
    "place_on_branch",
]
