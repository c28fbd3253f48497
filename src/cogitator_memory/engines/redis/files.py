"""Memory files in Redis: the primitives of :class:`~cogitator_memory.files.base.MemoryFileStoreMixin`
as Lua scripts (:mod:`.files_scripts`), mixed into
:class:`~cogitator_memory.engines.redis.threads.RedisAdapter`.

A version is a hash (its JSON without the text, the text, and the fields scripts filter by); each
scope and path keeps its versions by sequence in a hash whose fields are the sequences, so a
second version at one sequence is found and refused inside the script that would write it. Each
scope keeps its heads (path -> id) in a hash of their own, which is all a read of what stands
touches, and its paths in a sorted set read by byte ranges for a directory. Every primitive is
one script, so a batch is stored whole or not at all; on a cluster every key carries the adapter
prefix's hash tag, so all share one slot. Files do not expire: the adapter's ``ttl`` applies to
threads and entries only.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...errors import ConflictError
from ...files.base import MemoryFileStoreMixin
from ...files.errors import MemoryFileConflictError
from ...files.records import (
    FileHeadQuery,
    FileRedaction,
    FileVersionQuery,
    MemoryFileVersion,
    redacted_version,
)
from ...items.records import TRUSTED
from . import files_scripts as lua

if TYPE_CHECKING:
    from .scripts import LuaScript


def _body(version: MemoryFileVersion) -> str:
    return version.model_dump_json(exclude_none=True, exclude={"content"})


def _versions(reply: Sequence[Any]) -> list[MemoryFileVersion]:
    """Versions from a script's flat answer: JSON, text (None when left out), JSON, text..."""
    found: list[MemoryFileVersion] = []
    for i in range(0, len(reply), 2):
        version = MemoryFileVersion.model_validate_json(reply[i], context=TRUSTED)  # checked when written
        version.content = reply[i + 1]
        found.append(version)
    return found


def _spec(**fields: Any) -> str:
    return json.dumps({k: v for k, v in fields.items() if v is not None}, ensure_ascii=False, separators=(",", ":"))


class RedisFiles(MemoryFileStoreMixin):
    """The file half of :class:`~cogitator_memory.engines.redis.threads.RedisAdapter`."""

    if TYPE_CHECKING:  # provided by the adapter
        key_prefix: str

        async def _run(self, script: LuaScript, keys: Sequence[str], args: Sequence[Any]) -> Any: ...

    def _files_key(self, agent_id: str) -> str:
        """The key each file script is routed by (an agent's set of scope keys)."""
        return f"{self.key_prefix}fscopes:{agent_id}"

    async def _add_file_versions(self, versions: list[MemoryFileVersion]) -> None:
        args: list[Any] = []
        for version in versions:
            place = version.place
            args += [
                version.id,
                version.scope.agent_id,
                version.scope_key,
                version.path,
                version.sequence,
                place.entry_id if place is not None and place.entry_id is not None else "",
                version.renamed_from or "",
                _body(version),
                "0" if version.content is None else "1",
                version.content or "",
            ]
        reply = await self._run(lua.ADD_FILE_VERSIONS, [self._files_key(versions[0].scope.agent_id)], args)
        if reply[0] == "taken":
            raise ConflictError(f"memory file version id is taken: {reply[1]}")
        if reply[0] == "conflict":
            raise MemoryFileConflictError(
                f"MEMORY_FILE_CONFLICT: {reply[1]} already has version {reply[2]} in its scope"
            )

    async def _find_file_heads(self, query: FileHeadQuery) -> list[MemoryFileVersion]:
        spec = _spec(
            scopes=sorted(query.scope_keys),
            paths=sorted(query.paths) if query.paths is not None else None,
            prefix=query.prefix,
            content=query.content,
        )
        agent = next(iter(query.scope_keys)).split("\x1f", 1)[0]
        return _versions(await self._run(lua.FIND_FILE_HEADS, [self._files_key(agent)], [spec]))

    async def _query_file_versions(self, query: FileVersionQuery) -> list[MemoryFileVersion]:
        within = query.within
        spec = _spec(
            agent=query.agent_id,
            scopes=sorted(query.scope_keys) if query.scope_keys is not None else None,
            within=None if within is None else [within.user_id or "", within.project_id or "", within.thread_id or ""],
            paths=sorted(query.paths) if query.paths is not None else None,
            prefix=query.prefix,
            entries=sorted(query.entry_ids) if query.entry_ids is not None else None,
            origins=sorted(query.renamed_from) if query.renamed_from is not None else None,
            ids=sorted(query.ids) if query.ids is not None else None,
        )
        return _versions(await self._run(lua.QUERY_FILE_VERSIONS, [self._files_key(query.agent_id)], [spec]))

    async def _redact_file_versions(self, ids: list[str], redaction: FileRedaction) -> list[MemoryFileVersion]:
        route = [f"{self.key_prefix}file:{ids[0]}"]
        found = _versions(await self._run(lua.GET_FILE_VERSIONS, route, ids))
        redacted = [redacted_version(v, redaction) for v in found if not v.is_deletion]
        if not redacted:
            return []
        args: list[Any] = []
        for version in redacted:
            args += [version.id, _body(version), version.content]
        written = set(await self._run(lua.REDACT_FILE_VERSIONS, route, args))
        return [v for v in redacted if v.id in written]


__all__ = ["RedisFiles"]
