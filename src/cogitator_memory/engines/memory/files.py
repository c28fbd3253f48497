"""Memory files in process memory: the primitives of
:class:`~cogitator_memory.files.base.MemoryFileStoreMixin`, mixed into
:class:`~cogitator_memory.engines.memory.threads.InMemoryAdapter`.

Versions are kept as their JSON; every read builds fresh records from it. Each scope and path
keeps its versions by sequence (its head is the last), each scope its paths, each agent its
scope keys, and each entry the versions written after it. Each primitive runs without awaiting,
so each is atomic.
"""

from __future__ import annotations

from collections.abc import Iterable

from ...errors import ConflictError
from ...files.base import MemoryFileStoreMixin
from ...files.errors import MemoryFileConflictError
from ...files.paths import is_at_or_under
from ...files.records import (
    FileHeadQuery,
    FileRedaction,
    FileVersionQuery,
    MemoryFileVersion,
    redacted_version,
)
from ...items.records import TRUSTED

_serialize = MemoryFileVersion.__pydantic_serializer__.to_json


def _to_json(version: MemoryFileVersion) -> bytes:
    return _serialize(version, exclude_none=True)


def _parse(blob: bytes) -> MemoryFileVersion:
    return MemoryFileVersion.model_validate_json(blob, context=TRUSTED)  # checked when it was written


class InMemoryFiles(MemoryFileStoreMixin):
    """The file half of :class:`~cogitator_memory.engines.memory.threads.InMemoryAdapter`."""

    def __init__(self) -> None:
        super().__init__()
        self._file_blobs: dict[str, bytes] = {}
        #: (scope key, path) -> {sequence: version id}, and the highest sequence of each.
        self._file_chain: dict[tuple[str, str], dict[int, str]] = {}
        self._file_head: dict[tuple[str, str], int] = {}
        #: scope key -> its paths; agent -> its scope keys; entry id -> versions written after it.
        self._file_paths: dict[str, set[str]] = {}
        self._file_scopes: dict[str, set[str]] = {}
        self._file_entries: dict[str, set[str]] = {}

    async def _add_file_versions(self, versions: list[MemoryFileVersion]) -> None:
        for version in versions:
            if version.id in self._file_blobs:
                raise ConflictError(f"memory file version id is taken: {version.id}")
            chain = self._file_chain.get((version.scope_key, version.path), {})
            if version.sequence in chain:
                raise MemoryFileConflictError(
                    f"MEMORY_FILE_CONFLICT: {version.path} already has version {version.sequence} in its scope"
                )
        for version in versions:
            key = version.scope_key
            where = (key, version.path)
            self._file_blobs[version.id] = _to_json(version)
            self._file_chain.setdefault(where, {})[version.sequence] = version.id
            self._file_head[where] = max(self._file_head.get(where, 0), version.sequence)
            self._file_paths.setdefault(key, set()).add(version.path)
            self._file_scopes.setdefault(version.scope.agent_id, set()).add(key)
            if version.place is not None and version.place.entry_id is not None:
                self._file_entries.setdefault(version.place.entry_id, set()).add(version.id)

    def _paths_of(self, key: str, paths: frozenset[str] | None, prefix: str | None) -> Iterable[str]:
        held = self._file_paths.get(key, set())
        if paths is not None:
            return [p for p in paths if p in held]
        if prefix is None:
            return held
        return [p for p in held if is_at_or_under(p, prefix)]

    async def _find_file_heads(self, query: FileHeadQuery) -> list[MemoryFileVersion]:
        found: list[MemoryFileVersion] = []
        for key in query.scope_keys:
            for path in self._paths_of(key, query.paths, query.prefix):
                where = (key, path)
                version = _parse(self._file_blobs[self._file_chain[where][self._file_head[where]]])
                if not query.content:
                    version.content = None
                found.append(version)
        return found

    async def _query_file_versions(self, query: FileVersionQuery) -> list[MemoryFileVersion]:
        candidates: Iterable[str]
        if query.ids is not None:
            candidates = [i for i in query.ids if i in self._file_blobs]
        elif query.entry_ids is not None:
            candidates = {i for entry in query.entry_ids for i in self._file_entries.get(entry, ())}
        else:
            keys = query.scope_keys if query.scope_keys is not None else self._file_scopes.get(query.agent_id, ())
            candidates = [
                version_id
                for key in keys
                for path in self._paths_of(key, query.paths, query.prefix)
                for version_id in self._file_chain[(key, path)].values()
            ]
        matched = [v for v in map(self._file_version, candidates) if query.matches(v)]
        return matched

    def _file_version(self, version_id: str) -> MemoryFileVersion:
        return _parse(self._file_blobs[version_id])

    async def _redact_file_versions(self, ids: list[str], redaction: FileRedaction) -> list[MemoryFileVersion]:
        done: list[MemoryFileVersion] = []
        for version_id in ids:
            blob = self._file_blobs.get(version_id)
            if blob is None:
                continue
            version = _parse(blob)
            if version.is_deletion:
                continue
            redacted = redacted_version(version, redaction)
            self._file_blobs[version_id] = _to_json(redacted)
            done.append(_parse(self._file_blobs[version_id]))
        return done


__all__ = ["InMemoryFiles"]
