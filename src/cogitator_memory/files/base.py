"""The file-store contract: :class:`MemoryFileAdapter` for users, :class:`MemoryFileStoreMixin` for engines.

Users (and :class:`~cogitator_memory.files.service.MemoryFiles`) type against the
:class:`MemoryFileAdapter` protocol; :func:`is_memory_file_adapter` tells whether a store keeps
memory files. Every built-in thread store keeps them: the engine mixes
:class:`MemoryFileStoreMixin` into its adapter class, in which every public call is written once
(argument checks, order, result wrapping), and implements four underscore primitives:

- ``_add_file_versions(versions)``: store every version or none. A version whose scope and path
  already have one at its ``sequence`` is refused with
  :class:`~cogitator_memory.files.errors.MemoryFileConflictError` (code
  ``MEMORY_FILE_CONFLICT``: a unique index, a constraint or an atomic script, never a read
  before the write); an id already stored with ``ConflictError``. A version of a higher
  sequence than the scope and path's head becomes the head.
- ``_find_file_heads(query)``: the head of each scope and path ``query.matches``, found without
  reading the versions before it (an index of heads), with the text left out when
  ``query.content`` is false. In any order: the mixin sorts them.
- ``_query_file_versions(query)``: every version :meth:`FileVersionQuery.matches
  <cogitator_memory.files.records.FileVersionQuery.matches>` accepts, filtered by the store on
  indexed fields (scope key, path, the entry of the place, the agent and its limits). Any order.
- ``_redact_file_versions(ids, redaction)``: in one step, replace the text of those versions
  that hold one by ``[redacted]`` (:func:`~cogitator_memory.files.records.redacted_version`)
  and return them as stored now; deletions and missing ids are left out.

Each primitive receives checked arguments and runs as one atomic operation on the engine.
Returned versions are the store's copies: changing one never changes the store.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from ..errors import InvalidArgumentError
from ..lifecycle import Capability, StoreLifecycle
from ..result import MemoryResult, ok
from ..threads import tree
from .records import (
    MAX_FILE_BATCH,
    FileHeadFilter,
    FileHeadQuery,
    FileRedaction,
    FileVersionFilter,
    FileVersionQuery,
    MemoryFileVersion,
    check_head_filter,
    check_redaction,
    check_version,
    check_version_filter,
    head_order,
    version_order,
)

VersionInput = MemoryFileVersion | dict[str, Any]
HeadFilterInput = FileHeadFilter | dict[str, Any]
VersionFilterInput = FileVersionFilter | dict[str, Any]
RedactionInput = FileRedaction | dict[str, Any]


@runtime_checkable
class MemoryFileAdapter(Protocol):
    """What every store of memory files offers. All calls return a :class:`~cogitator_memory.MemoryResult`.

    These are raw versions; :class:`~cogitator_memory.files.service.MemoryFiles` keeps the rules
    (the memory tool's commands, scopes, places, locking) on top.
    :mod:`cogitator_memory.testing.files` checks the contract.
    """

    @property
    def provider(self) -> str:
        """The engine's name."""
        ...

    async def add_file_versions(self, versions: Sequence[VersionInput]) -> MemoryResult[list[MemoryFileVersion]]:
        """Store versions, all or nothing; a taken sequence is ``MEMORY_FILE_CONFLICT``."""
        ...

    async def find_file_heads(self, filter: HeadFilterInput) -> MemoryResult[list[MemoryFileVersion]]:
        """The newest version of each scope and path ``filter`` names, without reading history."""
        ...

    async def query_file_versions(self, filter: VersionFilterInput) -> MemoryResult[list[MemoryFileVersion]]:
        """Every version passing ``filter``, oldest first."""
        ...

    async def redact_file_versions(
        self, ids: Sequence[str], redaction: RedactionInput
    ) -> MemoryResult[list[MemoryFileVersion]]:
        """Replace the text of these versions with ``[redacted]``; the versions redacted."""
        ...


def is_memory_file_adapter(value: object) -> bool:
    """Whether ``value`` keeps memory files (has the calls of :class:`MemoryFileAdapter`)."""
    return isinstance(value, MemoryFileAdapter)


def check_version_ids(name: str, value: object) -> list[str]:
    """A list of version ids (duplicates dropped, order kept), at most :data:`MAX_FILE_BATCH`."""
    if isinstance(value, str | bytes | dict) or not isinstance(value, Sequence | set | frozenset):
        raise InvalidArgumentError(name, "must be a list of version ids")
    ids = list(dict.fromkeys(tree.check_id(f"{name}[{i}]", v) for i, v in enumerate(value)))
    if len(ids) > MAX_FILE_BATCH:
        raise InvalidArgumentError(name, f"must hold at most {MAX_FILE_BATCH} ids, got {len(ids)}")
    return ids


def check_versions(value: object) -> list[MemoryFileVersion]:
    """A batch of versions for :meth:`MemoryFileStoreMixin.add_file_versions`: each checked
    whole, no id twice and no scope and path twice."""
    if isinstance(value, str | bytes | dict) or not isinstance(value, Sequence):
        raise InvalidArgumentError("versions", "must be a list")
    if len(value) > MAX_FILE_BATCH:
        raise InvalidArgumentError("versions", f"must hold at most {MAX_FILE_BATCH} versions, got {len(value)}")
    checked: list[MemoryFileVersion] = []
    ids: set[str] = set()
    places: set[tuple[str, str]] = set()
    for i, item in enumerate(value):
        version = check_version(f"versions[{i}]", item)
        if version.id in ids:
            raise InvalidArgumentError(f"versions[{i}].id", f"{version.id} appears twice in one batch")
        where = (version.scope_key, version.path)
        if where in places:
            raise InvalidArgumentError(
                f"versions[{i}].path", f"{version.path} appears twice for one scope in one batch"
            )
        ids.add(version.id)
        places.add(where)
        checked.append(version)
    return checked


class MemoryFileStoreMixin(ABC):
    """The public file calls, written once over the engine's underscore primitives (see the module docstring).

    Mixed into a thread store's class before its base
    (``class SQLiteAdapter(SQLiteFiles, ..., BaseMemoryAdapter)``), it needs ``provider``,
    ``_require_connected()`` and ``_fail(operation, exc)`` from that base, and adds ``"files"``
    to the class's ``capabilities``.
    """

    provider: ClassVar[str]
    capabilities: ClassVar[frozenset[Any]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        existing = getattr(cls, "capabilities", None)
        if isinstance(existing, frozenset) and "files" not in existing:
            cls.capabilities = existing | {"files"}

    if TYPE_CHECKING:  # provided by the class the mixin goes into

        def _require_connected(self) -> None: ...
        def _fail(self, operation: str, exc: Exception) -> MemoryResult[Any]: ...

    # ----- engine primitives ---------------------------------------------------------------

    @abstractmethod
    async def _add_file_versions(self, versions: list[MemoryFileVersion]) -> None:
        """Store every version or none: a taken (scope, path, sequence) is
        ``MemoryFileConflictError``, a taken id ``ConflictError``."""

    @abstractmethod
    async def _find_file_heads(self, query: FileHeadQuery) -> list[MemoryFileVersion]:
        """The head of each scope and path ``query`` matches (text left out unless ``query.content``)."""

    @abstractmethod
    async def _query_file_versions(self, query: FileVersionQuery) -> list[MemoryFileVersion]:
        """Every version ``query.matches``, in any order."""

    @abstractmethod
    async def _redact_file_versions(self, ids: list[str], redaction: FileRedaction) -> list[MemoryFileVersion]:
        """Redact the versions that hold text; those versions as stored now."""

    async def _recall_files(self, versions: list[MemoryFileVersion], *, forgetting: bool = False) -> None:
        """What a store keeping a recall index does once versions are written or redacted
        (``forgetting``): nothing here (see :class:`~cogitator_memory.index.RecallIndexMixin`)."""
        return None

    # ----- public calls --------------------------------------------------------------------

    async def add_file_versions(self, versions: Sequence[VersionInput]) -> MemoryResult[list[MemoryFileVersion]]:
        """Store complete :class:`MemoryFileVersion` records (or dicts of their fields), all or nothing.

        Each is checked whole (an invalid one names its field, ``versions[2].path``); a batch may
        not hold one id or one scope and path twice. A version whose scope and path already have
        one at its sequence fails the call with ``MemoryFileConflictError`` (a ``ConflictError``
        whose ``code`` is ``MEMORY_FILE_CONFLICT``) and nothing is written. Returns the versions
        stored.
        """
        try:
            self._require_connected()
            checked = check_versions(versions)
            if checked:
                await self._add_file_versions(checked)
                await self._recall_files(checked)
            return ok(checked)
        except Exception as exc:
            return self._fail("add_file_versions", exc)

    async def find_file_heads(self, filter: HeadFilterInput) -> MemoryResult[list[MemoryFileVersion]]:
        """The head (newest version, a deletion included) of each scope and path the filter
        names (a :class:`FileHeadFilter` or a dict of its fields), by path then scope key.
        Stores find heads through an index of their own, so the cost does not grow with history."""
        try:
            self._require_connected()
            query = check_head_filter(filter)
            found = await self._find_file_heads(query)
            found.sort(key=head_order)
            return ok(found)
        except Exception as exc:
            return self._fail("find_file_heads", exc)

    async def query_file_versions(self, filter: VersionFilterInput) -> MemoryResult[list[MemoryFileVersion]]:
        """Every version passing ``filter`` (a :class:`FileVersionFilter` or a dict of its
        fields), oldest first (then by scope key, path and sequence)."""
        try:
            self._require_connected()
            query = check_version_filter(filter)
            found = await self._query_file_versions(query)
            found.sort(key=version_order)
            return ok(found)
        except Exception as exc:
            return self._fail("query_file_versions", exc)

    async def redact_file_versions(
        self, ids: Sequence[str], redaction: RedactionInput
    ) -> MemoryResult[list[MemoryFileVersion]]:
        """Replace the text of these versions with ``[redacted]`` (their SHA-256 and size follow
        it) and record ``redaction`` (``{"at": ..., "reason": ...}``) on them; the rest of each
        version stays. Deletions and missing ids are passed over. Returns the versions redacted,
        in the order of ``ids``."""
        try:
            self._require_connected()
            wanted = check_version_ids("ids", ids)
            checked = check_redaction(redaction)
            if not wanted:
                return ok([])
            found = {v.id: v for v in await self._redact_file_versions(wanted, checked)}
            await self._recall_files(list(found.values()), forgetting=True)
            return ok([found[i] for i in wanted if i in found])
        except Exception as exc:
            return self._fail("redact_file_versions", exc)


class BaseMemoryFileAdapter(StoreLifecycle, MemoryFileStoreMixin):
    """Base class of a standalone file store (one that keeps no threads): lifecycle and the
    public calls written once. A subclass implements ``_connect``, ``_disconnect`` (see
    :class:`~cogitator_memory.lifecycle.StoreLifecycle`) and the file primitives."""

    provider: ClassVar[str] = "custom"
    capabilities: ClassVar[frozenset[Capability]] = frozenset({"files", "health"})
    store_kind: ClassVar[str] = "file store"


__all__ = [
    "BaseMemoryFileAdapter",
    "HeadFilterInput",
    "MemoryFileAdapter",
    "MemoryFileStoreMixin",
    "RedactionInput",
    "VersionFilterInput",
    "VersionInput",
    "check_version_ids",
    "check_versions",
    "is_memory_file_adapter",
]
