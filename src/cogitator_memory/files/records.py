"""The records of memory files: versions, where they were written, and what engines receive.

A memory file is the newest of its versions. Every change adds a :class:`MemoryFileVersion`
(scope, path, sequence, content or ``None`` for a deletion, its SHA-256 and size, the version it
was made from, the place in a thread it was written at, the path a rename moved it from, who
wrote it and when), so a file's history stays. The scope is a
:class:`~cogitator_memory.items.records.MemoryScope`, keyed for stores by the same
:func:`~cogitator_memory.items.records.scope_key` items use.

A store keeps at most one version of a scope and path at each ``sequence``: the second is refused
with :class:`~cogitator_memory.files.errors.MemoryFileConflictError`. The *head* of a scope and
path is its version of the highest sequence; :class:`FileHeadQuery` and :class:`FileVersionQuery`
are what engines receive, each with a ``matches`` that every engine must agree with.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, TypeAlias

from pydantic import Field, ValidationError, ValidationInfo, field_validator, model_validator

from ..clock import to_utc
from ..errors import InvalidArgumentError
from ..items.records import TRUSTED, MemoryScope, scope_key, visible_scope_keys
from ..threads import tree
from ..threads.records import Record
from ..threads.values import has_surrogate
from .errors import MemoryFileError
from .paths import MAX_FILE_BYTES, is_at_or_under, normalize_path, sha256_of, utf8_size

FileAuthor: TypeAlias = Literal["model", "user", "memory"]
#: Who may write a version: a model through the memory tool, a person, or memory itself
#: (observations, the playbook, code of the application).
FILE_AUTHORS: tuple[FileAuthor, ...] = ("model", "user", "memory")
#: What a redacted version holds instead of its text.
REDACTED_TEXT = "[redacted]"
#: The most versions one call may add, read by id or redact.
MAX_FILE_BATCH = 10_000


def _trusted(info: ValidationInfo) -> bool:
    return info.context is TRUSTED


def _stored_path(value: str, info: ValidationInfo) -> str:
    if _trusted(info):
        return value
    try:
        normalized = normalize_path(value)
    except MemoryFileError as exc:
        raise ValueError(str(exc)) from None
    if normalized != value:
        raise ValueError(f"must be written as {normalized!r}")
    return value


def _checked_id(value: str, info: ValidationInfo) -> str:
    if _trusted(info):
        return value
    try:
        return tree.check_id("id", value)
    except InvalidArgumentError as exc:
        raise ValueError(exc.problem) from None


class MemoryFilePlace(Record):
    """Where in a conversation a version was written: the thread, and the entry it was written
    after (``None`` before the thread's first entry). A version with a place is seen in that
    thread only on the branches holding that entry."""

    thread_id: str
    entry_id: str | None = None

    @field_validator("thread_id")
    @classmethod
    def _thread(cls, value: str, info: ValidationInfo) -> str:
        return _checked_id(value, info)

    @field_validator("entry_id")
    @classmethod
    def _entry(cls, value: str | None, info: ValidationInfo) -> str | None:
        return None if value is None else _checked_id(value, info)


class FileRedaction(Record):
    """Why and when a version's text was replaced by ``[redacted]``."""

    at: datetime
    reason: str | None = None

    @field_validator("at")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        return to_utc(value)

    @field_validator("reason")
    @classmethod
    def _reason(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None or _trusted(info):
            return value
        if len(value) > 2000 or "\x00" in value or has_surrogate(value):
            raise ValueError("must be at most 2000 characters of text without NUL")
        return value


class MemoryFileVersion(Record):
    """One version of a memory file: a file's text as one change left it, or its deletion.

    ``content`` is ``None`` for a deletion (``sha256`` is then ``None`` and ``size`` 0);
    ``sequence`` counts the versions of the scope and path from 1; ``previous_id`` is the
    version the change was made from (of a wider scope, or the source of a rename, or ``None``);
    ``renamed_from`` the path a rename moved the file from; ``redacted`` says when and why the
    text was replaced by ``[redacted]``.

    A version read with ``content=False`` (:class:`FileHeadQuery`) carries ``content=None``
    while ``sha256`` and ``size`` stay; :attr:`is_deletion` tells a deletion in both cases.
    """

    id: str
    scope: MemoryScope
    path: str
    sequence: int = Field(ge=1, le=2**62)
    content: str | None = None
    sha256: str | None = None
    size: int = Field(default=0, ge=0)
    previous_id: str | None = None
    place: MemoryFilePlace | None = None
    renamed_from: str | None = None
    author: FileAuthor = "model"
    created_at: datetime
    redacted: FileRedaction | None = None

    @field_validator("id", "previous_id")
    @classmethod
    def _ids(cls, value: str | None, info: ValidationInfo) -> str | None:
        return None if value is None else _checked_id(value, info)

    @field_validator("path", "renamed_from")
    @classmethod
    def _paths(cls, value: str | None, info: ValidationInfo) -> str | None:
        return None if value is None else _stored_path(value, info)

    @field_validator("created_at")
    @classmethod
    def _utc(cls, value: datetime, info: ValidationInfo) -> datetime:
        return value if _trusted(info) else to_utc(value)

    @model_validator(mode="after")
    def _consistent(self, info: ValidationInfo) -> MemoryFileVersion:
        if _trusted(info):
            return self
        if self.content is None:
            if self.sha256 is not None or self.size != 0:
                raise ValueError("a deletion (content None) has no sha256 and size 0")
            if self.redacted is not None:
                raise ValueError("a deletion has no text to redact")
            return self
        if "\x00" in self.content:
            raise ValueError("content must not contain NUL characters")
        if has_surrogate(self.content):
            raise ValueError("content must not contain lone surrogates (text UTF-8 cannot encode)")
        size = utf8_size(self.content)
        if size > MAX_FILE_BYTES:
            raise ValueError(f"content must be at most {MAX_FILE_BYTES} bytes, got {size}")
        if self.sha256 is None:
            self.sha256 = sha256_of(self.content)
        elif self.sha256 != sha256_of(self.content):
            raise ValueError("sha256 is not the SHA-256 of content")
        if "size" not in self.model_fields_set:
            self.size = size
        elif self.size != size:
            raise ValueError(f"size must be {size}, the bytes of content in UTF-8")
        return self

    @property
    def is_deletion(self) -> bool:
        """Whether this version deletes the file."""
        return self.sha256 is None

    @property
    def scope_key(self) -> str:
        """The key of the version's scope (see :func:`~cogitator_memory.items.records.scope_key`)."""
        return scope_key(self.scope)


class MemoryFile(Record):
    """A file as it stands for an access: its path, text, SHA-256, size in bytes and the version it is."""

    path: str
    content: str
    sha256: str
    size: int
    version: MemoryFileVersion


class FileHeadFilter(Record):
    """Which heads :meth:`find_file_heads` reads: those of the scopes ``visible_to`` sees, or of
    exactly ``scope``; of ``paths``, or of ``prefix`` and every path under it (else all);
    with their text unless ``content`` is false."""

    visible_to: MemoryScope | None = None
    scope: MemoryScope | None = None
    paths: list[str] | None = None
    prefix: str | None = None
    content: bool = True

    @model_validator(mode="after")
    def _one_scope(self) -> FileHeadFilter:
        if (self.visible_to is None) == (self.scope is None):
            raise ValueError("give exactly one of visible_to or scope")
        if self.paths is not None and self.prefix is not None:
            raise ValueError("give paths or prefix, not both")
        return self


class FileVersionFilter(Record):
    """Which versions :meth:`query_file_versions` reads: of the scopes ``visible_to`` sees, of
    exactly ``scope``, or of every scope ``within`` holds (its agent, and each limit it sets);
    narrowed by ``paths`` or ``prefix``, by the entries they were written after (``entry_ids``),
    by the paths they were renamed from, and by ``ids``."""

    visible_to: MemoryScope | None = None
    scope: MemoryScope | None = None
    within: MemoryScope | None = None
    paths: list[str] | None = None
    prefix: str | None = None
    entry_ids: list[str] | None = None
    renamed_from: list[str] | None = None
    ids: list[str] | None = None

    @model_validator(mode="after")
    def _one_scope(self) -> FileVersionFilter:
        if sum(x is not None for x in (self.visible_to, self.scope, self.within)) != 1:
            raise ValueError("give exactly one of visible_to, scope or within")
        if self.paths is not None and self.prefix is not None:
            raise ValueError("give paths or prefix, not both")
        return self


# --- what engines receive ------------------------------------------------------------------


def _path_matches(path: str, paths: frozenset[str] | None, prefix: str | None) -> bool:
    if paths is not None:
        return path in paths
    return prefix is None or is_at_or_under(path, prefix)


@dataclass(frozen=True, slots=True)
class FileHeadQuery:
    """A checked :class:`FileHeadFilter`: the head (highest sequence) of each scope key in
    ``scope_keys`` and path passing ``paths`` / ``prefix`` (the prefix itself and every path
    under it). ``content`` false lets the store leave the text out."""

    scope_keys: frozenset[str]
    paths: frozenset[str] | None
    prefix: str | None
    content: bool

    def matches(self, version: MemoryFileVersion) -> bool:
        """Whether ``version``'s scope and path are among those asked (heads are then the
        highest sequence of each scope and path that matches)."""
        return scope_key(version.scope) in self.scope_keys and _path_matches(version.path, self.paths, self.prefix)


@dataclass(frozen=True, slots=True)
class FileVersionQuery:
    """A checked :class:`FileVersionFilter`. ``scope_keys`` lists the scope keys a version may
    have; with ``within`` it is ``None`` and ``agent_id`` plus the limits ``within`` sets select."""

    agent_id: str
    scope_keys: frozenset[str] | None
    within: MemoryScope | None
    paths: frozenset[str] | None
    prefix: str | None
    entry_ids: frozenset[str] | None
    renamed_from: frozenset[str] | None
    ids: frozenset[str] | None

    def matches(self, version: MemoryFileVersion) -> bool:
        """Whether ``version`` passes the query: the reference every engine agrees with."""
        scope = version.scope
        if scope.agent_id != self.agent_id:
            return False
        if self.scope_keys is not None:
            if scope_key(scope) not in self.scope_keys:
                return False
        elif self.within is not None and not self.within.holds(scope):
            return False
        if not _path_matches(version.path, self.paths, self.prefix):
            return False
        if self.entry_ids is not None and (
            version.place is None or version.place.entry_id is None or version.place.entry_id not in self.entry_ids
        ):
            return False
        if self.renamed_from is not None and version.renamed_from not in self.renamed_from:
            return False
        return self.ids is None or version.id in self.ids


def version_order(version: MemoryFileVersion) -> tuple[datetime, str, str, int, str]:
    """The order versions are returned in: oldest first, then by scope, path and sequence."""
    return (version.created_at, scope_key(version.scope), version.path, version.sequence, version.id)


def head_order(version: MemoryFileVersion) -> tuple[str, str]:
    """The order heads are returned in: by path, then by scope key."""
    return (version.path, scope_key(version.scope))


# --- checks --------------------------------------------------------------------------------


def _validated(model: type[Record], name: str, value: object) -> Any:
    if isinstance(value, model):
        value = value.model_dump()
    elif not isinstance(value, Mapping):
        raise InvalidArgumentError(name, f"must be a {model.__name__} or a dict, got {type(value).__name__}")
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        raise tree.validation_error(name, exc) from None


def check_version(name: str, value: object) -> MemoryFileVersion:
    """A :class:`MemoryFileVersion` from a record or a dict, checked whole (a record is checked
    again, so one changed after it was built cannot slip past)."""
    version: MemoryFileVersion = _validated(MemoryFileVersion, name, value)
    return version


def _paths(name: str, values: Iterable[object] | None) -> frozenset[str] | None:
    if values is None:
        return None
    found: set[str] = set()
    for i, value in enumerate(values):
        try:
            found.add(normalize_path(value))
        except MemoryFileError as exc:
            raise InvalidArgumentError(f"{name}[{i}]", str(exc)) from None
    if not found:
        raise InvalidArgumentError(name, "must name at least one path (or be left out)")
    return frozenset(found)


def _prefix(name: str, value: str | None) -> str | None:
    if value is None:
        return None
    try:
        return normalize_path(value)
    except MemoryFileError as exc:
        raise InvalidArgumentError(name, str(exc)) from None


def _ids(name: str, values: Iterable[str] | None) -> frozenset[str] | None:
    if values is None:
        return None
    found = frozenset(tree.check_id(f"{name}[{i}]", v) for i, v in enumerate(values))
    if not found:
        raise InvalidArgumentError(name, "must name at least one id (or be left out)")
    if len(found) > MAX_FILE_BATCH:
        raise InvalidArgumentError(name, f"must hold at most {MAX_FILE_BATCH} ids")
    return found


def check_head_filter(value: object) -> FileHeadQuery:
    """The :class:`FileHeadQuery` of a filter given as a record or a dict."""
    flt: FileHeadFilter = _validated(FileHeadFilter, "filter", value)
    if flt.visible_to is not None:
        keys = frozenset(visible_scope_keys(flt.visible_to))
    else:
        assert flt.scope is not None
        keys = frozenset({scope_key(flt.scope)})
    return FileHeadQuery(
        scope_keys=keys,
        paths=_paths("filter.paths", flt.paths),
        prefix=_prefix("filter.prefix", flt.prefix),
        content=flt.content,
    )


def check_version_filter(value: object) -> FileVersionQuery:
    """The :class:`FileVersionQuery` of a filter given as a record or a dict."""
    flt: FileVersionFilter = _validated(FileVersionFilter, "filter", value)
    if flt.visible_to is not None:
        agent, keys, within = flt.visible_to.agent_id, frozenset(visible_scope_keys(flt.visible_to)), None
    elif flt.scope is not None:
        agent, keys, within = flt.scope.agent_id, frozenset({scope_key(flt.scope)}), None
    else:
        assert flt.within is not None
        agent, keys, within = flt.within.agent_id, None, flt.within
    return FileVersionQuery(
        agent_id=agent,
        scope_keys=keys,
        within=within,
        paths=_paths("filter.paths", flt.paths),
        prefix=_prefix("filter.prefix", flt.prefix),
        entry_ids=_ids("filter.entry_ids", flt.entry_ids),
        renamed_from=_paths("filter.renamed_from", flt.renamed_from),
        ids=_ids("filter.ids", flt.ids),
    )


def check_redaction(value: object) -> FileRedaction:
    """A :class:`FileRedaction` from a record or a dict (``{"at": ..., "reason": ...}``)."""
    redaction: FileRedaction = _validated(FileRedaction, "redaction", value)
    return redaction


def redacted_version(version: MemoryFileVersion, redaction: FileRedaction) -> MemoryFileVersion:
    """``version`` with its text replaced by ``[redacted]`` (a deletion is returned as it is)."""
    if version.content is None and version.sha256 is None:
        return version
    return version.model_copy(
        update={
            "content": REDACTED_TEXT,
            "sha256": sha256_of(REDACTED_TEXT),
            "size": utf8_size(REDACTED_TEXT),
            "redacted": redaction,
        }
    )


__all__ = [
    "FILE_AUTHORS",
    "MAX_FILE_BATCH",
    "REDACTED_TEXT",
    "FileAuthor",
    "FileHeadFilter",
    "FileHeadQuery",
    "FileRedaction",
    "FileVersionFilter",
    "FileVersionQuery",
    "MemoryFile",
    "MemoryFilePlace",
    "MemoryFileVersion",
    "check_head_filter",
    "check_redaction",
    "check_version",
    "check_version_filter",
    "head_order",
    "redacted_version",
    "version_order",
]
